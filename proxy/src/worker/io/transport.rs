//! What an HTTP/1.1 client connection is carried on (TCP or TLS), and how the last
//! bytes of a connection that closes after its response leave: on clear-text TCP
//! they are sent with `MSG_MORE`, so the kernel holds them until the shutdown that
//! follows and sends them in one segment with the FIN. A client then gets its
//! response and the end of the connection in one packet (one wake-up, one ACK),
//! and the proxy sends one segment instead of two. On TLS the socket is corked
//! before the last response (one `setsockopt`), so the response, the
//! `close_notify` and the FIN leave as one segment instead of three.
//!
//! The connection is always shut down before it is dropped (see the HTTP/1 server's `close`):
//! a close with bytes still unread by us would reset the connection and discard
//! held data, where a shutdown sends it first.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::Prefixed;

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

/// A transport carried on a TCP socket, whose options TLS may set.
pub(crate) trait OverTcp: AsyncRead + AsyncWrite + Unpin {
    /// The socket.
    fn tcp(&self) -> &TcpStream;
}

impl OverTcp for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

/// A socket whose first bytes (a ClientHello read to route by) were read already.
impl OverTcp for Prefixed<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref()
    }
}

/// A TLS session terminated here.
impl<T: OverTcp> OverTcp for tokio_rustls::server::TlsStream<T> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0.tcp()
    }
}

impl<T: OverTcp> Io for tokio_rustls::server::TlsStream<T> {
    /// Corks the socket first: the records written from here on (the last response,
    /// then the `close_notify` of the shutdown) wait for the FIN and leave with it.
    #[cfg(target_os = "linux")]
    fn poll_write_last(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // Only an optimisation: on failure the bytes go out as any others.
        let _ = socket2::SockRef::from(self.get_ref().0.tcp()).set_tcp_cork(true);
        self.poll_write(cx, buf)
    }
}

/// What a connection reads as once its transport was taken away.
impl Io for tokio::io::Empty {}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use std::future::poll_fn;
    use std::io::ErrorKind;
    use std::mem::MaybeUninit;
    use std::pin::Pin;
    use std::sync::Arc;

    use rustls::pki_types::{PrivateKeyDer, ServerName};
    use socket2::{SockRef, Socket};
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::Io;

    const INTERIM: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
    const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";

    async fn connected() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        (client.unwrap(), accepted.unwrap().0)
    }

    /// Whether bytes wait to be read on `socket` now, without waiting for the
    /// runtime to see it readable (and without taking them).
    fn arrived(socket: &Socket) -> bool {
        let mut buf = [MaybeUninit::uninit(); 1];
        match socket.peek(&mut buf) {
            Ok(read) => read > 0,
            Err(error) if error.kind() == ErrorKind::WouldBlock => false,
            Err(error) => panic!("peeking: {error}"),
        }
    }

    /// On loopback a segment is delivered by the send that makes it. An ordinary
    /// write reaches the peer's `socket` at once; the last bytes are held until the
    /// shutdown, and then `client` reads the ordinary and the last bytes whole,
    /// followed by the end of the stream.
    async fn held_until_shutdown(
        mut server: impl Io,
        socket: &Socket,
        client: impl AsyncRead + Unpin,
    ) {
        server.write_all(INTERIM).await.unwrap();
        server.flush().await.unwrap();
        assert!(arrived(socket), "an ordinary write was held");
        let mut interim = vec![0; INTERIM.len()];
        let mut client = client;
        client.read_exact(&mut interim).await.unwrap();

        let mut written = 0;
        while written < RESPONSE.len() {
            let last = &RESPONSE[written..];
            written += poll_fn(|cx| Pin::new(&mut server).poll_write_last(cx, last))
                .await
                .unwrap();
        }
        server.flush().await.unwrap();
        assert!(!arrived(socket), "the last bytes went out before the FIN");

        server.shutdown().await.unwrap();
        let mut received = Vec::new();
        client.read_to_end(&mut received).await.unwrap();
        assert_eq!(received, RESPONSE);
    }

    #[tokio::test]
    async fn tcp_holds_the_last_bytes_for_the_shutdown() {
        let (mut client, server) = connected().await;
        let socket = SockRef::from(&client).try_clone().unwrap();
        held_until_shutdown(server, &socket, &mut client).await;
    }

    #[tokio::test]
    async fn tls_holds_the_last_records_for_the_shutdown() {
        let provider = crate::crypto_provider();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        let client_config =
            culvert_bench::tls::trusting_client_config(crate::crypto_provider(), &[]).unwrap();
        let (client, server) = connected().await;
        let socket = SockRef::from(&client).try_clone().unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let (client, server) = tokio::join!(
            tokio_rustls::TlsConnector::from(client_config).connect(name, client),
            tokio_rustls::TlsAcceptor::from(Arc::new(config)).accept(server),
        );
        held_until_shutdown(server.unwrap(), &socket, client.unwrap()).await;
    }
}
