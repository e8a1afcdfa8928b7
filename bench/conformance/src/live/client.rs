//! The client side of a live exchange: one request as a vector describes it, sent
//! over a real socket (TCP, or TLS with the vector's SNI and ALPN), as HTTP/1.1,
//! HTTP/2 (ALPN h2, or h2c with prior knowledge; gRPC calls go this way) or a
//! WebSocket upgrade plus one text frame. Server certificates are not verified:
//! the vectors say a harness may skip that, and the handshake itself is what is
//! judged.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use culvert_bench::tls::{AcceptAnyCertificate, trusting_client_config};
use http::{HeaderMap, Request, Version};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest a client waits for an answer.
pub(super) const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Which bytes go on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    Http1,
    /// HTTP/2: over TLS with ALPN h2, or clear text with prior knowledge.
    Http2,
    WebSocket,
}

/// Where and how to connect.
pub(super) struct Target {
    pub(super) addr: SocketAddr,
    /// `Some(sni)` for TLS.
    pub(super) tls: Option<String>,
    /// The client certificate to show, `(chain PEM, key PEM)`.
    pub(super) client_certificate: Option<(String, String)>,
    pub(super) wire: Wire,
}

/// What came back.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) headers: HeaderMap,
    pub(super) version: Version,
    pub(super) body: Bytes,
    /// Trailers that followed the body, if any came.
    pub(super) trailers: Option<HeaderMap>,
    /// The echoed frame of a WebSocket exchange.
    pub(super) websocket_echo: Option<String>,
}

/// Sends `request` (with a `Host` header for HTTP/1.1; for HTTP/2 the authority
/// of its URI) and reads the whole answer. `Err` is a transport failure.
pub(super) async fn exchange(
    target: &Target,
    request: Request<Full<Bytes>>,
    websocket_message: Option<&str>,
) -> Result<Answer, String> {
    let tcp = TcpStream::connect(target.addr)
        .await
        .map_err(|err| format!("connecting to {}: {err}", target.addr))?;
    let _ = tcp.set_nodelay(true);
    match &target.tls {
        None => over(tcp, target.wire, request, websocket_message).await,
        Some(sni) => {
            let alpn: &[&[u8]] = match target.wire {
                Wire::Http2 => &[b"h2"],
                _ => &[b"http/1.1"],
            };
            let name =
                ServerName::try_from(sni.clone()).map_err(|err| format!("SNI {sni:?}: {err}"))?;
            let config = client_config(alpn, target.client_certificate.as_ref())?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|err| format!("TLS handshake: {err}"))?;
            over(tls, target.wire, request, websocket_message).await
        }
    }
}

async fn over<I>(
    io: I,
    wire: Wire,
    request: Request<Full<Bytes>>,
    websocket_message: Option<&str>,
) -> Result<Answer, String>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let response = match wire {
        Wire::WebSocket => return websocket(io, request, websocket_message.unwrap_or("")).await,
        Wire::Http1 => {
            let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
                .await
                .map_err(|err| format!("HTTP/1.1 handshake: {err}"))?;
            tokio::spawn(connection);
            sender
                .send_request(request)
                .await
                .map_err(|err| format!("HTTP/1.1 request: {err}"))?
        }
        Wire::Http2 => {
            let (mut sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
                    .await
                    .map_err(|err| format!("HTTP/2 handshake: {err}"))?;
            tokio::spawn(connection);
            sender
                .send_request(request)
                .await
                .map_err(|err| format!("HTTP/2 request: {err}"))?
        }
    };
    let (parts, body) = response.into_parts();
    let collected = body
        .collect()
        .await
        .map_err(|err| format!("reading the body: {err}"))?;
    let trailers = collected.trailers().cloned();
    Ok(Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        version: parts.version,
        body: collected.to_bytes(),
        trailers,
        websocket_echo: None,
    })
}

/// An HTTP/1.1 upgrade written by hand, then one masked text frame and the frame
/// that comes back.
async fn websocket<I>(
    mut io: I,
    request: Request<Full<Bytes>>,
    message: &str,
) -> Result<Answer, String>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = format!(
        "{} {} HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
        request.method(),
        request.uri()
    );
    for (name, value) in request.headers() {
        head.push_str(name.as_str());
        head.push_str(": ");
        head.push_str(&String::from_utf8_lossy(value.as_bytes()));
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    io.write_all(head.as_bytes())
        .await
        .map_err(|err| format!("writing the upgrade: {err}"))?;
    let mut reply = Vec::new();
    while !reply.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        io.read_exact(&mut byte)
            .await
            .map_err(|err| format!("reading the upgrade answer: {err}"))?;
        reply.push(byte[0]);
        if reply.len() > 64 * 1024 {
            return Err("upgrade answer head too long".to_owned());
        }
    }
    let text = String::from_utf8_lossy(&reply).into_owned();
    let status: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("bad status line in {text:?}"))?;
    let mut answer = Answer {
        status,
        headers: HeaderMap::new(),
        version: Version::HTTP_11,
        body: Bytes::new(),
        trailers: None,
        websocket_echo: None,
    };
    if status != 101 {
        return Ok(answer);
    }
    io.write_all(&masked_text_frame(message.as_bytes()))
        .await
        .map_err(|err| format!("writing the frame: {err}"))?;
    let mut header = [0u8; 2];
    io.read_exact(&mut header)
        .await
        .map_err(|err| format!("reading the echoed frame: {err}"))?;
    let len = match header[1] & 0x7f {
        126 => {
            let mut extended = [0u8; 2];
            io.read_exact(&mut extended)
                .await
                .map_err(|err| format!("reading the frame length: {err}"))?;
            usize::from(u16::from_be_bytes(extended))
        }
        127 => return Err("echoed frame too long".to_owned()),
        short => usize::from(short),
    };
    let mut payload = vec![0u8; len];
    io.read_exact(&mut payload)
        .await
        .map_err(|err| format!("reading the echoed payload: {err}"))?;
    answer.websocket_echo = Some(String::from_utf8_lossy(&payload).into_owned());
    Ok(answer)
}

/// One client text frame (RFC 6455 §5.2), masked with a fixed key.
fn masked_text_frame(payload: &[u8]) -> Vec<u8> {
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let mut frame = vec![0x81];
    match payload.len() {
        len @ 0..=125 => frame.push(0x80 | len as u8),
        len => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(len.min(usize::from(u16::MAX)) as u16).to_be_bytes());
        }
    }
    frame.extend_from_slice(&mask);
    frame.extend(
        payload
            .iter()
            .take(usize::from(u16::MAX))
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4]),
    );
    frame
}

/// A client config that takes any certificate (the live runs use self-signed
/// ones) and offers `alpn`.
/// What a TLS echo exchange (`scheme: tls`) showed: the greeting of the TCP echo
/// backend that answered (see `culvert_bench::tcp_echo`).
pub(super) struct TlsEcho {
    /// The backend's name: its Service, `namespace/name`.
    pub(super) service: String,
    /// Whether the backend itself terminated the TLS session.
    pub(super) backend_terminated: bool,
    /// The SNI the backend's TLS server received.
    pub(super) server_name: Option<String>,
}

/// Opens TLS to `addr` with SNI `sni` (no ALPN), reads the echo backend's
/// greeting, and checks that a line sent comes back before the backend closes
/// after the client's half-close. `Err` is a transport failure (refused, reset,
/// failed handshake) or a wrong echo.
pub(super) async fn tls_echo(addr: SocketAddr, sni: &str) -> Result<TlsEcho, String> {
    const PING: &[u8] = b"culvert conformance ping\n";
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|err| format!("connecting to {addr}: {err}"))?;
    let name = ServerName::try_from(sni.to_owned()).map_err(|err| format!("SNI {sni:?}: {err}"))?;
    let mut tls = tokio_rustls::TlsConnector::from(client_config(&[], None)?)
        .connect(name, tcp)
        .await
        .map_err(|err| format!("TLS handshake: {err}"))?;
    tls.write_all(PING)
        .await
        .map_err(|err| format!("sending: {err}"))?;
    tls.shutdown()
        .await
        .map_err(|err| format!("closing the sending half: {err}"))?;
    let mut received = Vec::new();
    tls.read_to_end(&mut received)
        .await
        .map_err(|err| format!("reading: {err}"))?;
    let newline = received
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("no greeting from the backend")?;
    let (greeting, echoed) = received.split_at(newline + 1);
    if echoed != PING {
        return Err(format!("echo {:?}", String::from_utf8_lossy(echoed)));
    }
    let greeting: serde_json::Value =
        serde_json::from_slice(greeting).map_err(|err| format!("greeting: {err}"))?;
    Ok(TlsEcho {
        service: greeting["service"].as_str().unwrap_or_default().to_owned(),
        backend_terminated: greeting["tls"].as_bool().unwrap_or(false),
        server_name: greeting["serverName"].as_str().map(str::to_owned),
    })
}

/// A client config that takes any server certificate, offers `alpn`, and shows
/// `certificate` (`(chain PEM, key PEM)`) when the server asks for one.
pub(crate) fn client_config(
    alpn: &[&[u8]],
    certificate: Option<&(String, String)>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let Some((chain, key)) = certificate else {
        return trusting_client_config(culvert_proxy::crypto_provider(), alpn)
            .map_err(|err| err.to_string());
    };
    let provider = culvert_proxy::crypto_provider();
    let chain = CertificateDer::pem_slice_iter(chain.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("client certificate: {err}"))?;
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
        .map_err(|err| format!("client key: {err}"))?;
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate::new(provider)))
        .with_client_auth_cert(chain, key)
        .map_err(|err| err.to_string())?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}
