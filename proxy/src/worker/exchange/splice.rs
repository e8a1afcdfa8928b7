//! Upgraded connections (WebSocket and other `101` protocols) spliced to their
//! backend: bytes copied both ways until either side closes, or until neither has
//! moved a byte for the idle timeout (`ClientLimits::upgraded_idle_timeout`), so
//! an abandoned WebSocket does not hold two sockets forever.
//!
//! Activity is a flag each successful read or write sets and a ticker clears once
//! per period: no clock is read per byte, and an idle pair is closed between one
//! and two periods after its last byte.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How a splice ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spliced {
    /// A side closed (or failed).
    Closed,
    /// Nothing moved either way for the idle timeout.
    Idle,
}

/// Copies bytes between `client` and `server` until one closes or both stay idle
/// for `idle`.
pub(crate) async fn splice<C, S>(client: &mut C, server: &mut S, idle: Duration) -> Spliced
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let active = Cell::new(false);
    let mut client = Watched {
        inner: client,
        active: &active,
    };
    let mut server = Watched {
        inner: server,
        active: &active,
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
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => Spliced::Closed,
        () = watch => Spliced::Idle,
    }
}

/// One side of a splice, noting every byte that moves.
struct Watched<'a, T> {
    inner: &'a mut T,
    active: &'a Cell<bool>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<'_, T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut *self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.active.set(true);
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
