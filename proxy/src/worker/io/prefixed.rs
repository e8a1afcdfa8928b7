//! An IO that first gives back bytes already read off it: what protocol detection
//! and the h2c switch read is handed on without reading the socket twice.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// An IO whose reads first return `prefix` (bytes already taken off the socket).
#[derive(Debug)]
pub(crate) struct Prefixed<I> {
    prefix: BytesMut,
    io: I,
}

impl<I> Prefixed<I> {
    pub(crate) fn new(prefix: BytesMut, io: I) -> Self {
        Self { prefix, io }
    }

    /// The IO under the prefix.
    pub(crate) fn get_ref(&self) -> &I {
        &self.io
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Prefixed<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.prefix.is_empty() {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        let take = this.prefix.len().min(buf.remaining());
        buf.put_slice(&this.prefix[..take]);
        this.prefix.advance(take);
        if this.prefix.is_empty() {
            // Let the buffer go: a kept-alive connection should not hold it.
            this.prefix = BytesMut::new();
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Prefixed<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
