use std::sync::Arc;

use super::{ClientHello, HelloError, MAX_CLIENT_HELLO, Peeked, peek_client_hello};

/// The first bytes a real client (rustls) sends to `server_name`, offering `alpn`.
fn hello_from_rustls(server_name: &str, alpn: &[&[u8]]) -> Vec<u8> {
    let provider = culvert_tls::crypto_provider();
    let roots = rustls::RootCertStore::empty();
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let name = rustls::pki_types::ServerName::try_from(server_name.to_owned()).unwrap();
    let mut client = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut out = Vec::new();
    client.write_tls(&mut out).unwrap();
    out
}

fn hello(server_name: Option<&str>, alpn: &[&[u8]]) -> ClientHello {
    ClientHello {
        server_name: server_name.map(str::to_owned),
        alpn: alpn.iter().map(|p| p.to_vec()).collect(),
    }
}

#[test]
fn a_real_client_hello_names_its_server_and_protocols() {
    let bytes = hello_from_rustls("App.Example.COM", &[b"h2", b"http/1.1"]);
    assert_eq!(
        peek_client_hello(&bytes),
        Ok(Peeked::Hello(hello(
            Some("app.example.com"),
            &[b"h2", b"http/1.1"]
        )))
    );
    // An IP address is sent without SNI; no ALPN offered, none read.
    let bytes = hello_from_rustls("192.0.2.1", &[]);
    assert_eq!(
        peek_client_hello(&bytes),
        Ok(Peeked::Hello(hello(None, &[])))
    );
}

#[test]
fn any_prefix_asks_for_more_and_the_whole_reads_the_same() {
    let bytes = hello_from_rustls("a.example", &[b"h2"]);
    for cut in 0..bytes.len() {
        match peek_client_hello(&bytes[..cut]) {
            Ok(Peeked::Incomplete { needed }) => {
                assert!(needed > cut && needed <= bytes.len(), "{cut}: {needed}");
            }
            other => panic!("{cut} bytes: {other:?}"),
        }
    }
    assert_eq!(
        peek_client_hello(&bytes),
        Ok(Peeked::Hello(hello(Some("a.example"), &[b"h2"])))
    );
}

/// `bytes`' handshake message re-sent in records of at most `size` bytes.
fn refragment(bytes: &[u8], size: usize) -> Vec<u8> {
    let handshake = &bytes[5..];
    let mut out = Vec::new();
    for piece in handshake.chunks(size) {
        out.extend_from_slice(&[22, 3, 1]);
        out.extend_from_slice(&u16::try_from(piece.len()).unwrap().to_be_bytes());
        out.extend_from_slice(piece);
    }
    out
}

#[test]
fn a_hello_split_over_records_reads_the_same() {
    let bytes = hello_from_rustls("split.example", &[b"http/1.1"]);
    let expected = Ok(Peeked::Hello(hello(Some("split.example"), &[b"http/1.1"])));
    for size in [1, 3, 4, 100] {
        let records = refragment(&bytes, size);
        assert_eq!(peek_client_hello(&records), expected, "records of {size}");
        assert!(matches!(
            peek_client_hello(&records[..records.len() - 1]),
            Ok(Peeked::Incomplete { .. })
        ));
    }
}

#[test]
fn what_is_not_a_client_hello_is_refused() {
    assert_eq!(
        peek_client_hello(b"GET / HTTP/1.1\r\n"),
        Err(HelloError::NotTls)
    );
    assert_eq!(
        peek_client_hello(b"PRI * HTTP/2.0\r\n"),
        Err(HelloError::NotTls)
    );
    let mut bytes = hello_from_rustls("a.example", &[]);
    // A ServerHello where the ClientHello belongs.
    bytes[5] = 2;
    assert_eq!(peek_client_hello(&bytes), Err(HelloError::Malformed));
    // A record length of 0, and one past 2^14.
    assert_eq!(
        peek_client_hello(&[22, 3, 1, 0, 0]),
        Err(HelloError::Malformed)
    );
    assert_eq!(
        peek_client_hello(&[22, 3, 1, 0x40, 0x01]),
        Err(HelloError::Malformed)
    );
    // A handshake message announcing more than the limit.
    let len = u32::try_from(MAX_CLIENT_HELLO).unwrap().to_be_bytes();
    assert_eq!(
        peek_client_hello(&[22, 3, 1, 0, 4, 1, len[1], len[2], len[3]]),
        Err(HelloError::TooLarge)
    );
}

#[test]
fn a_bad_server_name_is_refused() {
    let bytes = hello_from_rustls("abc.example", &[]);
    let at = bytes.windows(11).position(|w| w == b"abc.example").unwrap();
    for bad in [b' ', b'/', 0, 0xff] {
        let mut broken = bytes.clone();
        broken[at + 1] = bad;
        assert_eq!(
            peek_client_hello(&broken),
            Err(HelloError::Malformed),
            "{bad:#x}"
        );
    }
}

#[test]
fn every_cut_and_every_byte_changed_never_panics() {
    let bytes = hello_from_rustls("fuzz.example", &[b"h2", b"http/1.1"]);
    for at in 0..bytes.len() {
        for value in [0u8, 1, 0x7f, 0x80, 0xff] {
            let mut changed = bytes.clone();
            changed[at] = value;
            let _ = peek_client_hello(&changed);
            let _ = peek_client_hello(&changed[..at]);
        }
    }
}
