//! What an HTTP/1.1 client connection is carried on (TCP or TLS), and how the last
//! bytes of a connection that closes after its response leave: on clear-text TCP
//! they are sent with `MSG_MORE`, so the kernel holds them until the shutdown that
//! follows and sends them in one segment with the FIN. A client then gets its
//! response and the end of the connection in one packet (one wake-up, one ACK),
//! and the proxy sends one segment instead of two.
//!
//! The connection is always shut down before it is dropped (see `super::close`):
//! a close with bytes still unread by us would reset the connection and discard
//! held data, where a shutdown sends it first.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A client connection's transport.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin {
    /// Writes bytes that are the last the connection sends before it is shut
    /// down; a transport that can hold them for its FIN does. The default writes
    /// them as any others.
    fn poll_write_last(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write(cx, buf)
    }
}

impl Io for TcpStream {
    #[cfg(target_os = "linux")]
    fn poll_write_last(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let stream = self.get_mut();
        loop {
            std::task::ready!(stream.poll_write_ready(cx))?;
            // `try_io` clears the readiness when the send would block, so the next
            // `poll_write_ready` waits for the socket again.
            let sent = stream.try_io(tokio::io::Interest::WRITABLE, || {
                socket2::SockRef::from(&*stream).send_with_flags(buf, libc::MSG_MORE)
            });
            match sent {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                sent => return Poll::Ready(sent),
            }
        }
    }
}

impl Io for tokio_rustls::server::TlsStream<TcpStream> {}

/// What a connection reads as once its transport was taken away.
impl Io for tokio::io::Empty {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::future::poll_fn;
    use std::io::{ErrorKind, Read};
    use std::pin::Pin;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::Io;

    /// What a non-blocking read of `stream` gets now, without waiting for the
    /// runtime to see it readable: `None` when nothing has arrived.
    fn arrived(stream: &TcpStream) -> Option<Vec<u8>> {
        let mut buf = [0; 256];
        match (&*socket2::SockRef::from(stream)).read(&mut buf) {
            Ok(read) => Some(buf[..read].to_vec()),
            Err(error) if error.kind() == ErrorKind::WouldBlock => None,
            Err(error) => panic!("reading: {error}"),
        }
    }

    /// On loopback a segment is delivered by the send that makes it. An ordinary
    /// write can be read at once; the last bytes are held until the shutdown, and
    /// then arrive whole, followed by the end of the stream.
    #[tokio::test]
    async fn last_bytes_are_held_for_the_shutdown() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        let (mut client, mut server) = (client.unwrap(), accepted.unwrap().0);

        let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
        server.write_all(interim).await.unwrap();
        assert_eq!(arrived(&client).as_deref(), Some(&interim[..]));

        let response = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
        let mut written = 0;
        while written < response.len() {
            let last = &response[written..];
            written += poll_fn(|cx| Pin::new(&mut server).poll_write_last(cx, last))
                .await
                .unwrap();
        }
        assert_eq!(
            arrived(&client),
            None,
            "the last bytes went out before the FIN"
        );

        server.shutdown().await.unwrap();
        let mut received = Vec::new();
        client.read_to_end(&mut received).await.unwrap();
        assert_eq!(received, response);
    }
}
