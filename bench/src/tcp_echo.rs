//! A TCP echo backend, in clear text or terminating TLS itself: the backend of
//! TLSRoute (passthrough and terminate) tests and of `tcp-backend` in the live
//! conformance replay.
//!
//! On every connection (after its TLS handshake, when it has a certificate) it
//! first writes one JSON line saying what it saw: `service`, `tls` (whether it
//! terminated TLS), `serverName` (the SNI its TLS server received, else `null`)
//! and `alpn`. Then it echoes every byte until the client closes its half, and
//! closes its own: a client can tell a passthrough (the backend's certificate, the
//! backend's `serverName`) from a proxy that terminated TLS, and that half-closes
//! get through.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::Error;
use crate::tls::server_config;

/// How to start a [`TcpEchoBackend`].
#[derive(Debug, Clone, Default)]
pub struct TcpEchoConfig {
    /// Reported as `service` in every greeting.
    pub name: String,
    /// Where to listen; port 0 (on 127.0.0.1) when `None`.
    pub addr: Option<SocketAddr>,
    /// A certificate chain and its key, as PEM: TLS is terminated with them.
    pub tls: Option<(String, String)>,
}

/// A running TCP echo backend; stops when dropped.
#[derive(Debug)]
pub struct TcpEchoBackend {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl TcpEchoBackend {
    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(config: TcpEchoConfig) -> Result<Self, Error> {
        let acceptor = match &config.tls {
            Some((chain, key)) => Some(TlsAcceptor::from(server_config(chain, key, None)?)),
            None => None,
        };
        let addr = config
            .addr
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let addr = listener.local_addr().map_err(Error::LocalAddr)?;
        let name: Arc<str> = Arc::from(config.name);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let name = Arc::clone(&name);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let _ = stream.set_nodelay(true);
                    match acceptor {
                        None => echo(stream, greeting(&name, None)).await,
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else {
                                return;
                            };
                            let greeting = greeting(&name, Some(stream.get_ref().1));
                            echo(stream, greeting).await;
                        }
                    }
                });
            }
        });
        Ok(Self { addr, task })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TcpEchoBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The first line a connection gets.
fn greeting(name: &str, tls: Option<&rustls::ServerConnection>) -> String {
    let line = serde_json::json!({
        "service": name,
        "tls": tls.is_some(),
        "serverName": tls.and_then(|session| session.server_name()),
        "alpn": tls
            .and_then(|session| session.alpn_protocol())
            .map(|alpn| String::from_utf8_lossy(alpn).into_owned()),
    });
    format!("{line}\n")
}

/// Writes `greeting`, then echoes until the client closes its half.
async fn echo<S: AsyncRead + AsyncWrite + Unpin>(stream: S, greeting: String) {
    let (mut reader, mut writer) = tokio::io::split(stream);
    if writer.write_all(greeting.as_bytes()).await.is_err() {
        return;
    }
    if tokio::io::copy(&mut reader, &mut writer).await.is_ok() {
        let _ = writer.shutdown().await;
    }
}
