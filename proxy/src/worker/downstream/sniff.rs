//! Which HTTP version a connection speaks when TLS did not say (clear text, or TLS
//! without ALPN): HTTP/2 with prior knowledge starts with the connection preface
//! (RFC 9113 §3.4), anything else is taken as HTTP/1.x.
//!
//! The first read is an ordinary one (a whole request head usually arrives in it,
//! read on the stack, see `io::stack_read`), and `io::Prefixed` hands what it read to
//! the HTTP server before reading the socket again, so telling the versions apart costs no extra syscall.

use std::future::poll_fn;
use std::io;

use bytes::BytesMut;
use tokio::io::AsyncRead;

use crate::worker::io::stack_read::poll_read_on_stack;

/// What an HTTP/2 client sends first.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The HTTP version of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpVersion {
    Http1,
    Http2,
}

/// Reads until the version is known; returns it with the bytes read. `Ok(None)`
/// when the client closed first.
pub(crate) async fn detect<I>(io: &mut I) -> io::Result<Option<(HttpVersion, BytesMut)>>
where
    I: AsyncRead + Unpin,
{
    let mut read = BytesMut::new();
    loop {
        let arrived =
            poll_fn(|cx| poll_read_on_stack(io, cx, |bytes| read.extend_from_slice(bytes))).await?;
        if arrived == 0 {
            return Ok(None);
        }
        let seen = read.len().min(PREFACE.len());
        if read[..seen] != PREFACE[..seen] {
            return Ok(Some((HttpVersion::Http1, read)));
        }
        if seen == PREFACE.len() {
            return Ok(Some((HttpVersion::Http2, read)));
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::{HttpVersion, PREFACE, detect};
    use crate::worker::io::Prefixed;

    async fn detect_sent(pieces: &[&[u8]]) -> Option<(HttpVersion, Vec<u8>)> {
        let (mut client, mut server) = tokio::io::duplex(64);
        let pieces: Vec<Vec<u8>> = pieces.iter().map(|piece| piece.to_vec()).collect();
        let writer = tokio::spawn(async move {
            for piece in pieces {
                client.write_all(&piece).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let found = detect(&mut server).await.unwrap();
        writer.await.unwrap();
        let (version, prefix) = found?;
        // Whatever was read comes back first, then the rest of the stream.
        let mut all = Vec::new();
        let mut io = Prefixed::new(prefix, server);
        io.read_to_end(&mut all).await.unwrap();
        Some((version, all))
    }

    #[tokio::test]
    async fn http1_is_known_from_the_first_byte_and_nothing_is_lost() {
        let (version, bytes) = detect_sent(&[b"GET / HTTP/1.1\r\n", b"host: a\r\n\r\n"])
            .await
            .unwrap();
        assert_eq!(version, HttpVersion::Http1);
        assert_eq!(bytes, b"GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    }

    #[tokio::test]
    async fn the_preface_is_recognised_even_when_split() {
        let (version, bytes) =
            detect_sent(&[&PREFACE[..3], &PREFACE[3..10], &PREFACE[10..], b"xy"])
                .await
                .unwrap();
        assert_eq!(version, HttpVersion::Http2);
        assert_eq!(&bytes[..PREFACE.len()], PREFACE);
        assert_eq!(&bytes[PREFACE.len()..], b"xy");
    }

    #[tokio::test]
    async fn a_near_preface_is_http1_and_a_silent_close_is_nothing() {
        let (version, _) = detect_sent(&[b"PRI * HTTP/1.1\r\n\r\n"]).await.unwrap();
        assert_eq!(version, HttpVersion::Http1);
        assert!(detect_sent(&[]).await.is_none());
        assert!(detect_sent(&[&PREFACE[..5]]).await.is_none());
    }
}
