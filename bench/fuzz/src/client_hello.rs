//! `client_hello`: the TLS ClientHello reader of `culvert-wire`.
//!
//! Whatever the bytes, the reader answers without panicking, and the answer does not
//! depend on how much of the input has arrived: of an input whose whole reads as a
//! hello, a prefix shorter than the hello asks for more (naming a length past itself
//! and within the input) and a longer one reads the same hello; the first two bytes
//! alone decide whether the bytes are TLS at all. A server name, when there is one,
//! is a lower-case DNS name.

use culvert_wire::{HelloError, Peeked, peek_client_hello};

use crate::input::split_offsets;

/// Peeks the input whole and at cuts of it; panics when the answers disagree.
pub fn client_hello(data: &[u8]) {
    let whole = peek_client_hello(data);
    if let Ok(Peeked::Hello(hello)) = &whole {
        if let Some(name) = &hello.server_name {
            assert!(
                !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_lowercase()
                        || b.is_ascii_digit()
                        || b"-._".contains(&b)),
                "server name {name:?}"
            );
        }
        assert!(hello.alpn.iter().all(|protocol| !protocol.is_empty()));
        // Cuts come sorted: below the hello's length each asks for more; from it on
        // (bytes after its last record are not looked at) each reads the same hello.
        let mut complete = false;
        for cut in split_offsets(data.len(), data.first().copied().unwrap_or(0), 24) {
            match peek_client_hello(&data[..cut]) {
                Ok(Peeked::Incomplete { needed }) if !complete => {
                    assert!(
                        needed > cut && needed <= data.len(),
                        "cut {cut}: needs {needed}"
                    );
                }
                Ok(Peeked::Hello(at_cut)) if at_cut == *hello => complete = true,
                other => panic!("the whole is a hello, {cut} bytes of it read as {other:?}"),
            }
        }
    }
    if let Err(HelloError::NotTls) = whole {
        assert!(data.first().is_some_and(|&b| b != 22) || data.get(1).is_some_and(|&b| b != 3));
    }
}
