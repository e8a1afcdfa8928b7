//! Connections spliced to their backend (WebSocket and other `101` upgrades, TLS
//! passthrough): bytes copied both ways until both sides have closed (a side that
//! closes its half is shut down on the other, the other direction goes on), either
//! fails, or neither has moved a byte for the idle timeout
//! (`ClientLimits::upgraded_idle_timeout`), so an abandoned connection does not hold
//! two sockets forever.
//!
//! Activity is a flag each successful read or write sets and a ticker clears once
//! per period: no clock is read per byte, and an idle pair is closed between one
//! and two periods after its last byte. Bytes read from each side are counted.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How a splice ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpliceEnd {
    /// Both sides closed, or one failed.
    Closed,
    /// Nothing moved either way for the idle timeout.
    Idle,
}

/// What a splice did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spliced {
    /// How it ended.
    pub(crate) end: SpliceEnd,
    /// Bytes read from the client (and written to the server, unless it failed).
    pub(crate) from_client: u64,
    /// Bytes read from the server.
    pub(crate) from_server: u64,
}

/// Copies bytes between `client` and `server` until both close, one fails, or both
/// stay idle for `idle`.
pub(crate) async fn splice<C, S>(client: &mut C, server: &mut S, idle: Duration) -> Spliced
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let active = Cell::new(false);
    let (from_client, from_server) = (Cell::new(0), Cell::new(0));
    let mut client = Watched {
        inner: client,
        active: &active,
        read: &from_client,
    };
    let mut server = Watched {
        inner: server,
        active: &active,
        read: &from_server,
    };
    let watch = async {
        let mut period = tokio::time::interval(idle);
        period.tick().await;
        loop {
            period.tick().await;
            if !active.replace(false) {
                return;
            }
        }
    };
    let end = tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => SpliceEnd::Closed,
        () = watch => SpliceEnd::Idle,
    };
    Spliced {
        end,
        from_client: from_client.get(),
        from_server: from_server.get(),
    }
}

/// One side of a splice, noting every byte that moves and counting those read.
struct Watched<'a, T> {
    inner: &'a mut T,
    active: &'a Cell<bool>,
    read: &'a Cell<u64>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<'_, T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut *self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        if read > 0 {
            self.active.set(true);
            self.read.set(self.read.get() + read as u64);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<'_, T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut *self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(written)) if written > 0) {
            self.active.set(true);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.inner).poll_shutdown(cx)
    }
}
