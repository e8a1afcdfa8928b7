//! Reads a connection's TLS ClientHello and keeps the bytes: the hello is parsed by
//! `culvert_wire::peek_client_hello`, and every byte read is handed on (to the TLS
//! handshake here, or first to the backend of a passthrough route), so nothing the
//! client sent is lost or read twice.

use bytes::BytesMut;
use culvert_wire::{ClientHello, HelloError, Peeked, peek_client_hello};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes asked for per read: a typical hello (1 to 2 KiB with post-quantum key
/// shares) arrives in one read.
const READ_SIZE: usize = 4096;

/// Why no ClientHello came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoHello {
    /// The client closed (or the read failed) before the hello was complete.
    Closed,
    /// The bytes are not a TLS ClientHello this proxy accepts.
    Refused(HelloError),
}

/// Reads from `io` until the ClientHello is complete; returns it and every byte
/// read so far (the hello, and whatever followed it in the same reads).
pub(super) async fn read_client_hello<I>(io: &mut I) -> Result<(ClientHello, BytesMut), NoHello>
where
    I: AsyncRead + Unpin,
{
    let mut read = BytesMut::with_capacity(READ_SIZE);
    loop {
        match peek_client_hello(&read) {
            Ok(Peeked::Hello(hello)) => return Ok((hello, read)),
            Ok(Peeked::Incomplete { needed }) => {
                read.reserve(needed.saturating_sub(read.len()).max(READ_SIZE));
            }
            Err(error) => return Err(NoHello::Refused(error)),
        }
        match io.read_buf(&mut read).await {
            Ok(0) | Err(_) => return Err(NoHello::Closed),
            Ok(_) => {}
        }
    }
}
