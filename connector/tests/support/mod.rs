//! Shared helpers for the connector's loopback integration tests: an in-process
//! simulator, a tunnel configured for it, an echo handler, an HTTP/1.1 client and a
//! minimal websocket frame codec.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]
#![allow(dead_code, unreachable_pub, reason = "each test file uses a subset")]

pub mod dns;

mod client;
#[allow(unused_imports, reason = "each test file uses a subset")]
pub use client::{Got, TEST_TIMEOUT, get, local, request};

use std::cell::Cell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use culvert_connector::io::{
    BackoffConfig, BoxBody, EdgeRoots, ServeFuture, StreamInfo, Transport, Tunnel, TunnelBody,
    TunnelConfig, TunnelHandler, TunnelUpgrade,
};
use culvert_edge_sim::{EdgeSim, SimConfig, SimTransport};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use sha1::{Digest as _, Sha1};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::Notify;

/// A simulator on loopback (four QUIC listeners).
pub async fn start_sim() -> EdgeSim {
    EdgeSim::start(SimConfig::loopback()).await.unwrap()
}

/// A tunnel configuration for `sim`: its CA, its token, its addresses, short delays.
pub fn tunnel_config(sim: &EdgeSim) -> TunnelConfig {
    let mut config = TunnelConfig::new(sim.token().clone(), sim.quic_addrs().to_vec());
    config.roots = EdgeRoots::Pem(sim.ca().cert_pem.clone().into_bytes());
    config.ha_stagger = Duration::from_millis(20);
    config.backoff = BackoffConfig {
        base: Duration::from_millis(200),
        max_exponent: 2,
    };
    config.grace_period = Duration::from_secs(20);
    config.seed = Some(7);
    config
}

/// A simulator on loopback with four QUIC and four HTTP/2 listeners.
pub async fn start_sim_h2() -> EdgeSim {
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    EdgeSim::start(SimConfig {
        h2: vec![any; 4],
        ..SimConfig::loopback()
    })
    .await
    .unwrap()
}

/// [`tunnel_config`] over HTTP/2 to the simulator's `--h2` listeners.
pub fn tunnel_config_h2(sim: &EdgeSim) -> TunnelConfig {
    let mut config = tunnel_config(sim);
    config.transport = Transport::Http2;
    config.h2_edges = Some(sim.h2_addrs().to_vec());
    config
}

/// A simulator on loopback that `transport` can reach: [`start_sim`] for QUIC,
/// [`start_sim_h2`] otherwise.
pub async fn start_sim_for(transport: Transport) -> EdgeSim {
    match transport {
        Transport::Quic => start_sim().await,
        _ => start_sim_h2().await,
    }
}

/// A tunnel configuration for `sim` over `transport`: [`tunnel_config`] for QUIC,
/// [`tunnel_config_h2`] for HTTP/2.
pub fn tunnel_config_for(sim: &EdgeSim, transport: Transport) -> TunnelConfig {
    match transport {
        Transport::Http2 => tunnel_config_h2(sim),
        _ => {
            let mut config = tunnel_config(sim);
            config.transport = transport;
            config
        }
    }
}

/// The transport the simulator reports for a connection over `transport`.
pub fn sim_transport(transport: Transport) -> SimTransport {
    match transport {
        Transport::Http2 => SimTransport::Http2,
        _ => SimTransport::Quic,
    }
}

/// The simulator's listener addresses for `transport`.
pub fn edge_addrs(sim: &EdgeSim, transport: Transport) -> &[SocketAddr] {
    match transport {
        Transport::Http2 => sim.h2_addrs(),
        _ => sim.quic_addrs(),
    }
}

/// Starts a tunnel over `transport` for `sim` serving with `echo`, all four
/// indices on this thread, and waits for four registrations.
pub async fn up(sim: &EdgeSim, echo: &Rc<Echo>, transport: Transport) -> Tunnel {
    let tunnel = Tunnel::new(tunnel_config_for(sim, transport)).unwrap();
    tunnel.spawn_all_local(handler(echo));
    tunnel.wait_registered(4).await.unwrap();
    wait_sim(sim, "4 registrations", |s| s.registered() == 4).await;
    tunnel
}

/// Shuts `tunnel` down, waits for it to close, then shuts `sim` down.
pub async fn down(tunnel: Tunnel, sim: EdgeSim) {
    tunnel.shutdown();
    tunnel.closed().await.unwrap();
    sim.shutdown().await;
}

/// Waits until `cond` holds for the simulator's status (polling), bounded.
pub async fn wait_sim(
    sim: &EdgeSim,
    what: &str,
    cond: impl Fn(&culvert_edge_sim::SimStatus) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if cond(&sim.status()) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: {:#?}",
            sim.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A body of `len` bytes of a fixed pattern, produced in 64 KiB frames.
pub struct Pattern {
    sent: u64,
    len: u64,
}

impl Pattern {
    pub fn new(len: u64) -> Self {
        Self { sent: 0, len }
    }
}

/// The pattern's byte at offset `i`.
pub fn pattern_byte(i: u64) -> u8 {
    (i % 251) as u8
}

impl Body for Pattern {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.sent == self.len {
            return Poll::Ready(None);
        }
        let n = (self.len - self.sent).min(64 * 1024);
        let start = self.sent;
        let chunk: Vec<u8> = (start..start + n).map(pattern_byte).collect();
        self.sent += n;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len - self.sent)
    }
}

/// Checks that `body` is exactly the pattern of its length.
pub fn is_pattern(body: &[u8]) -> bool {
    body.iter()
        .enumerate()
        .all(|(i, b)| *b == pattern_byte(i as u64))
}

fn boxed<B>(body: B) -> BoxBody
where
    B: Body<Data = Bytes> + 'static,
    B::Error: Into<culvert_connector::io::BoxError>,
{
    culvert_connector::io::box_body(body)
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<BoxBody> {
    let body: Bytes = body.into();
    Response::builder()
        .status(status)
        .header("content-length", body.len())
        .body(boxed(Full::new(body)))
        .unwrap()
}

/// The test origin: echoes, generates, waits, fails and speaks websocket.
#[derive(Default)]
pub struct Echo {
    /// Requests to `/slow` that have started.
    pub slow_started: Cell<usize>,
    /// Releases every `/slow` request.
    pub gate: Notify,
    /// Whether the gate is open.
    pub open: Cell<bool>,
}

impl Echo {
    pub fn release(&self) {
        self.open.set(true);
        self.gate.notify_waiters();
    }
}

/// The `Sec-WebSocket-Accept` value for a key.
pub fn websocket_accept(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// The handler serving [`Echo`].
pub struct EchoHandler(pub Rc<Echo>);

/// A handler for `echo`, as the tunnel takes it.
pub fn handler(echo: &Rc<Echo>) -> Rc<dyn TunnelHandler> {
    Rc::new(EchoHandler(Rc::clone(echo)))
}

impl TunnelHandler for EchoHandler {
    fn serve(&self, mut request: Request<TunnelBody>) -> ServeFuture {
        let this = Rc::clone(&self.0);
        Box::pin(async move {
            let info = request.extensions().get::<StreamInfo>().cloned().unwrap();
            let path = request.uri().path().to_owned();
            match path.as_str() {
                "/hello" => {
                    let host = request
                        .headers()
                        .get("host")
                        .map(|h| h.to_str().unwrap().to_owned())
                        .unwrap_or_default();
                    let greeting = request
                        .headers()
                        .get("x-greeting")
                        .map(|h| h.to_str().unwrap().to_owned())
                        .unwrap_or_default();
                    let mut response = text(
                        StatusCode::OK,
                        format!(
                            "hello {} host={host} greeting={greeting} conn={}",
                            request.method(),
                            info.conn_index
                        ),
                    );
                    response
                        .headers_mut()
                        .insert("x-conn-index", u32::from(info.conn_index).into());
                    Ok(response)
                }
                "/echo" => {
                    let length = request.headers().get("content-length").cloned();
                    let mut response = Response::new(boxed(request.into_body()));
                    if let Some(length) = length {
                        response.headers_mut().insert("content-length", length);
                    }
                    Ok(response)
                }
                "/big" => {
                    let n: u64 = request
                        .uri()
                        .query()
                        .and_then(|q| q.strip_prefix("n="))
                        .unwrap()
                        .parse()
                        .unwrap();
                    Ok(Response::new(boxed(Pattern::new(n))))
                }
                "/slow" => {
                    this.slow_started.set(this.slow_started.get() + 1);
                    loop {
                        let wait = this.gate.notified();
                        if this.open.get() {
                            break;
                        }
                        wait.await;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok(text(StatusCode::OK, "slow done"))
                }
                "/late-end" => {
                    let n: usize = request
                        .uri()
                        .query()
                        .and_then(|q| q.strip_prefix("n="))
                        .unwrap()
                        .parse()
                        .unwrap();
                    Ok(Response::builder()
                        .status(StatusCode::OK)
                        .header("content-length", n)
                        .body(boxed(LateEnd::new(n)))
                        .unwrap())
                }
                "/fail" => Err("origin unreachable (test)".into()),
                "/reset" => Ok(Response::new(boxed(ResetAfterFirst(None)))),
                "/ws" => {
                    let key = request
                        .headers()
                        .get("sec-websocket-key")
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .to_owned();
                    let upgrade = request.extensions_mut().remove::<TunnelUpgrade>().unwrap();
                    tokio::task::spawn_local(async move {
                        let mut stream = upgrade.stream().await.unwrap();
                        loop {
                            let Some((opcode, payload)) = read_frame(&mut stream).await else {
                                break;
                            };
                            write_frame(&mut stream, opcode, &payload, None).await;
                            if opcode == 0x8 {
                                break;
                            }
                        }
                        let _ = stream.shutdown().await;
                    });
                    Ok(Response::builder()
                        .status(StatusCode::SWITCHING_PROTOCOLS)
                        .header("connection", "Upgrade")
                        .header("upgrade", "websocket")
                        .header("sec-websocket-accept", websocket_accept(&key))
                        .body(boxed(http_body_util::Empty::<Bytes>::new()))
                        .unwrap())
                }
                _ => Ok(text(StatusCode::NOT_FOUND, "not found")),
            }
        })
    }
}

/// `n` bytes in one chunk, then the end [`LATE_END_PAUSE`] later: what a response
/// body read from a real upstream does when the upstream connection's task reports
/// the end after the last bytes. Over HTTP/2 the last DATA frame and END_STREAM
/// then travel apart.
struct LateEnd {
    data: Option<Bytes>,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// How long after its bytes a [`LateEnd`] body ends.
pub const LATE_END_PAUSE: Duration = Duration::from_millis(5);

impl LateEnd {
    fn new(n: usize) -> Self {
        Self {
            data: Some(Bytes::from(vec![b'x'; n])),
            pause: None,
        }
    }
}

impl Body for LateEnd {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(data) = self.data.take() {
            self.pause = Some(Box::pin(tokio::time::sleep(LATE_END_PAUSE)));
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(pause) = self.pause.as_mut() {
            std::task::ready!(pause.as_mut().poll(cx));
            self.pause = None;
        }
        Poll::Ready(None)
    }
}

/// A TCP relay to `target` that delays every byte from `target` back to the client
/// by `delay` (bytes toward `target` pass at once), like the path from a distant
/// edge. Runs until the test ends; returns the address to dial.
pub async fn delaying_relay(target: SocketAddr, delay: Duration) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let _ = client.set_nodelay(true);
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                let _ = server.set_nodelay(true);
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                    let _ = server_write.shutdown().await;
                });
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        match server_read.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                let due = tokio::time::Instant::now() + delay;
                                if tx.send((due, buf[..n].to_vec())).is_err() {
                                    break;
                                }
                            }
                        }
                    }
                });
                while let Some((due, bytes)) = rx.recv().await {
                    tokio::time::sleep_until(due).await;
                    if client_write.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                let _ = client_write.shutdown().await;
            });
        }
    });
    addr
}

/// Yields one chunk, then (after a pause, so the head and chunk are delivered
/// before the reset discards unsent data) an error: a failure after the head.
struct ResetAfterFirst(Option<Pin<Box<tokio::time::Sleep>>>);

impl Body for ResetAfterFirst {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(sleep) = self.0.as_mut() {
            std::task::ready!(sleep.as_mut().poll(cx));
            Poll::Ready(Some(Err(std::io::Error::other("origin failed mid-body"))))
        } else {
            self.0 = Some(Box::pin(tokio::time::sleep(Duration::from_millis(300))));
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"partial")))))
        }
    }
}

/// Writes one websocket frame (FIN set), masked when `mask` is given.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut W,
    opcode: u8,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    let mut out = vec![0x80 | opcode];
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xffff => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    w.write_all(&out).await.unwrap();
    w.flush().await.unwrap();
}

/// Reads one websocket frame, unmasking it; `None` at EOF.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    r.read_exact(&mut head).await.ok()?;
    let opcode = head[0] & 0x0f;
    let masked = head[1] & 0x80 != 0;
    let len = match head[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).await.ok()?;
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            r.read_exact(&mut b).await.ok()?;
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    let mut key = [0u8; 4];
    if masked {
        r.read_exact(&mut key).await.ok()?;
    }
    let mut payload = vec![0u8; usize::try_from(len).ok()?];
    r.read_exact(&mut payload).await.ok()?;
    if masked {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= key[i % 4];
        }
    }
    Some((opcode, payload))
}

/// Opens a WebSocket through the simulator's front door at `front`, checks the
/// handshake, echoes a small, a second and a `large`-byte text frame, then closes.
pub async fn websocket_echo_scenario(front: SocketAddr, large: usize) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut tcp = tokio::net::TcpStream::connect(front).await.unwrap();
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    tcp.write_all(
        format!(
            "GET /ws HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        tcp.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains(&format!(
            "sec-websocket-accept: {}",
            websocket_accept(key).to_ascii_lowercase()
        )),
        "{head}"
    );
    for message in ["hello tunnel", "second frame", &"x".repeat(large)] {
        write_frame(&mut tcp, 0x1, message.as_bytes(), Some([1, 2, 3, 4])).await;
        let (opcode, payload) = read_frame(&mut tcp).await.unwrap();
        assert_eq!(opcode, 0x1);
        assert_eq!(payload, message.as_bytes());
    }
    write_frame(&mut tcp, 0x8, &[0x03, 0xe8], Some([9, 9, 9, 9])).await;
    let (opcode, payload) = read_frame(&mut tcp).await.unwrap();
    assert_eq!((opcode, payload), (0x8, vec![0x03, 0xe8]));
}

/// Through the simulator's front door at `front`: an 8 MiB + 13 upload with a
/// length and a 3 MiB chunked upload echoed back, and an 8 MiB + 13 download, each
/// checked byte for byte.
pub async fn large_bodies_scenario(front: SocketAddr) {
    const LEN: u64 = 8 * 1024 * 1024 + 13;
    let got = request(
        front,
        Request::post("/echo")
            .header("host", "app.test")
            .header("content-length", LEN)
            .body(Pattern::new(LEN))
            .unwrap(),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK);
    let body = got.body.unwrap();
    assert_eq!(body.len() as u64, LEN);
    assert!(is_pattern(&body));

    // Chunked upload (no content-length): the sim forwards the chunked header and
    // raw bytes.
    let got = request(
        front,
        Request::post("/echo")
            .header("host", "app.test")
            .header("transfer-encoding", "chunked")
            .body(Pattern::new(3 * 1024 * 1024))
            .unwrap(),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK);
    let body = got.body.unwrap();
    assert_eq!(body.len(), 3 * 1024 * 1024);
    assert!(is_pattern(&body));

    let got = get(front, &format!("/big?n={LEN}")).await;
    assert_eq!(got.status, StatusCode::OK);
    let body = got.body.unwrap();
    assert_eq!(body.len() as u64, LEN);
    assert!(is_pattern(&body));
}

/// A handler that answers every request with `<tag>` and the request's headers as
/// JSON (`{"tag": ..., "headers": {name: value, ...}}`), so a test can tell which
/// tunnel served a request and what the edge added.
pub struct Tagged(pub &'static str);

impl TunnelHandler for Tagged {
    fn serve(&self, request: Request<TunnelBody>) -> ServeFuture {
        let tag = self.0;
        Box::pin(async move {
            let headers: serde_json::Map<String, serde_json::Value> = request
                .headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_owned(),
                        serde_json::Value::String(v.to_str().unwrap_or("").to_owned()),
                    )
                })
                .collect();
            let body = serde_json::json!({"tag": tag, "headers": headers}).to_string();
            Ok(text(StatusCode::OK, body))
        })
    }
}

/// An API answer: status, headers, and the JSON body.
#[derive(Debug)]
pub struct ApiGot {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub json: serde_json::Value,
}

/// One request to the simulated API at `sim.api_base()` + `path`, with `token` as
/// bearer (if any) and `body` as JSON (if any).
pub async fn api_call(
    sim: &EdgeSim,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
) -> ApiGot {
    let uri = format!("{}{path}", culvert_edge_sim::API_PREFIX);
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", sim.api_addr().to_string());
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    if !bytes.is_empty() {
        builder = builder.header("content-type", "application/json");
    }
    let got = request(
        sim.api_addr(),
        builder.body(Full::new(Bytes::from(bytes))).unwrap(),
    )
    .await;
    let body = got.body.unwrap();
    let json = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{method} {path}: not json ({e}): {body:?}"));
    ApiGot {
        status: got.status,
        headers: got.headers,
        json,
    }
}

/// [`api_call`] with the simulator's own API token.
pub async fn api(
    sim: &EdgeSim,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> ApiGot {
    api_call(sim, method, path, Some(&sim.api_token()), body).await
}
