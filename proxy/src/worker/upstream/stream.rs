//! What a backend connection is carried on: TCP, or TLS over TCP for backends that
//! speak it (BackendTLSPolicy), behind one type the HTTP/1.1 exchange and hyper
//! read and write.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A connection to a backend.
#[derive(Debug)]
pub(crate) enum UpstreamStream {
    /// Clear text.
    Tcp(TcpStream),
    /// TLS, boxed: a session is several kilobytes and most backends speak clear text.
    Tls(Box<TlsStream<TcpStream>>),
}

impl UpstreamStream {
    /// Whether an idle connection can still carry a request: nothing arrived on it
    /// since its last exchange. Costs no syscall unless the socket was marked
    /// readable. On TLS anything readable (a `close_notify`, stray records) counts
    /// as closed: it cannot be looked at without taking it off the session.
    pub(crate) fn still_open(&self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        let tcp = match self {
            Self::Tcp(tcp) => tcp,
            Self::Tls(tls) => {
                return matches!(tls.get_ref().0.poll_read_ready(&mut cx), Poll::Pending);
            }
        };
        match tcp.poll_read_ready(&mut cx) {
            Poll::Pending => true,
            Poll::Ready(Err(_)) => false,
            Poll::Ready(Ok(())) => {
                let mut probe = [0u8; 1];
                matches!(tcp.try_read(&mut probe),
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock)
            }
        }
    }
}

impl AsyncRead for UpstreamStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for UpstreamStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(tcp) => Pin::new(tcp).poll_write(cx, data),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_write(cx, data),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(tcp) => Pin::new(tcp).poll_write_vectored(cx, bufs),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Tcp(tcp) => tcp.is_write_vectored(),
            Self::Tls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(tcp) => Pin::new(tcp).poll_flush(cx),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_shutdown(cx),
        }
    }
}
