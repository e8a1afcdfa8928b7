//! HTTP/2 prior-knowledge detection for [`EchoProtocol::Auto`](super::EchoProtocol).
//!
//! Reads just enough of a new connection to tell the HTTP/2 client preface from an
//! HTTP/1 request line, then hands the bytes it read back to hyper through
//! [`Rewind`]. Never reads past the preface length.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// The fixed first bytes of every HTTP/2 connection (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads until the bytes so far either are the whole preface or stop matching it.
///
/// Returns what was read and whether it was the preface. A peer that closes early is
/// served as HTTP/1 so hyper answers (or drops) it the usual way.
pub(super) async fn detect_h2_preface<R: AsyncRead + Unpin>(
    stream: &mut R,
) -> io::Result<(Bytes, bool)> {
    let mut buf = BytesMut::with_capacity(PREFACE.len());
    while buf.len() < PREFACE.len() {
        let mut chunk = [0u8; 24];
        let want = PREFACE.len() - buf.len();
        let n = stream.read(&mut chunk[..want]).await?;
        if n == 0 {
            return Ok((buf.freeze(), false));
        }
        buf.extend_from_slice(&chunk[..n]);
        if !PREFACE.starts_with(&buf) {
            return Ok((buf.freeze(), false));
        }
    }
    Ok((buf.freeze(), true))
}

/// A stream that first yields `prefix`, then reads from `inner`; writes go straight
/// to `inner`.
#[derive(Debug)]
pub(super) struct Rewind<T> {
    prefix: Bytes,
    inner: T,
}

impl<T> Rewind<T> {
    pub(super) fn new(inner: T, prefix: Bytes) -> Self {
        Self { prefix, inner }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewind<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Rewind<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
