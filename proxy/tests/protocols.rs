//! Protocols through a real data plane on loopback: HTTPS with certificates chosen by
//! SNI and ALPN h2, 421 for a Host another listener owns, h2c with prior knowledge,
//! h2c and WebSocket to backends, retries, mirrors, CORS preflights and drain.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use bytes::Bytes;
use culvert_bench::{EchoBackend, EchoConfig, EchoProtocol};
use culvert_proxy::{ServeConfig, Server};
use http::{Request, StatusCode, Version};
use http_body_util::Full;
use serde_json::{Value, json};
use support::{TestCa, free_port, get, put_config, send_h1_on, send_h2, tls_connect};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(60);

fn start() -> Server {
    let config = ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_workers(NonZeroUsize::new(2).unwrap());
    Server::start(config).unwrap()
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

async fn push(server: &Server, config: &Value) {
    let reply = put_config(server.control_addr(), config, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
}

fn get_request(host: &str, path: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

fn h2_request(authority: &str, scheme: &str, path: &str) -> Request<Full<Bytes>> {
    Request::get(format!("{scheme}://{authority}{path}"))
        .version(Version::HTTP_2)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

#[tokio::test]
async fn https_picks_certificates_by_sni_speaks_h2_and_refuses_misdirected_requests() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
        let ca = TestCa::new();
        let (a_cert, a_key) = ca.leaf(&["a.example"]);
        let (b_cert, b_key) = ca.leaf(&["b.example"]);
        let port = free_port();
        let server = start();
        let route = |name: &str, listener: &str, host: &str| {
            json!({"name": name, "listeners": [listener], "hostnames": [host],
                   "rules": [{"backends": [{"name": "echo", "endpoints": [echo.addr().to_string()]}]}]})
        };
        push(&server, &json!({
            "version": 1,
            "listeners": [
                {"name": "a", "port": port, "protocol": "HTTPS", "hostname": "a.example",
                 "tls": {"certificateRefs": [{"namespace": "ns", "name": "a"}]}},
                {"name": "b", "port": port, "protocol": "HTTPS", "hostname": "b.example",
                 "tls": {"certificateRefs": [{"namespace": "ns", "name": "b"}]}}
            ],
            "certificates": [
                {"namespace": "ns", "name": "a", "certificatePem": a_cert, "privateKeyPem": a_key},
                {"namespace": "ns", "name": "b", "certificatePem": b_cert, "privateKeyPem": b_key}
            ],
            "httpRoutes": [route("ra", "a", "a.example"), route("rb", "b", "b.example")]
        }))
        .await;

        // Each name verifies against its own certificate (the client checks the SAN),
        // and ALPN chose h2.
        for host in ["a.example", "b.example"] {
            let (stream, alpn) =
                tls_connect(local(port), host, ca.client_config(&[b"h2", b"http/1.1"])).await;
            assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
            let reply = send_h2(stream, h2_request(host, "https", "/x")).await;
            assert_eq!(reply.status, StatusCode::OK);
            let echo_json = reply.json();
            assert_eq!(echo_json["host"], host);
            assert_eq!(echo_json["path"], "/x");
        }
        let seen = echo.requests();
        let last = seen.last().unwrap();
        assert_eq!(last.header("x-forwarded-proto"), ["https"]);

        // HTTP/1.1 over TLS when the client offers only http/1.1.
        let (stream, alpn) =
            tls_connect(local(port), "a.example", ca.client_config(&[b"http/1.1"])).await;
        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
        let reply = send_h1_on(stream, get_request("a.example", "/h1")).await;
        assert_eq!(reply.status, StatusCode::OK);

        // SNI a.example, Host b.example: another listener owns the host.
        let (stream, _) =
            tls_connect(local(port), "a.example", ca.client_config(&[b"http/1.1"])).await;
        let reply = send_h1_on(stream, get_request("b.example", "/")).await;
        assert_eq!(reply.status, StatusCode::MISDIRECTED_REQUEST);
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn h2c_from_clients_and_to_backends() {
    tokio::time::timeout(LIMIT, async {
        let h2_echo = EchoBackend::start(EchoConfig::new("h2").with_protocol(EchoProtocol::H2c))
            .await
            .unwrap();
        let h1_echo = EchoBackend::start(EchoConfig::new("h1").with_protocol(EchoProtocol::Http1))
            .await
            .unwrap();
        let port = free_port();
        let server = start();
        push(
            &server,
            &json!({
                "version": 1,
                "listeners": [{"name": "web", "port": port, "protocol": "HTTP"}],
                "httpRoutes": [{"name": "r", "listeners": ["web"], "rules": [
                    {"matches": [{"path": {"type": "PathPrefix", "value": "/h2"}}],
                     "backends": [{"name": "h2", "appProtocol": "kubernetes.io/h2c",
                                   "endpoints": [h2_echo.addr().to_string()]}]},
                    {"backends": [{"name": "h1", "endpoints": [h1_echo.addr().to_string()]}]}
                ]}]
            }),
        )
        .await;

        // Client h2c (prior knowledge) → HTTP/1.1 backend.
        let stream = TcpStream::connect(local(port)).await.unwrap();
        let reply = send_h2(stream, h2_request("svc.example", "http", "/plain")).await;
        assert_eq!(reply.status, StatusCode::OK);
        let seen = h1_echo.requests();
        assert_eq!(seen.last().unwrap().proto, Version::HTTP_11);
        assert_eq!(seen.last().unwrap().host, "svc.example");

        // Client HTTP/1.1 → h2c backend.
        let reply = get(local(port), "svc.example", "/h2/x").await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        let seen = h2_echo.requests();
        assert_eq!(seen.last().unwrap().proto, Version::HTTP_2);
        assert_eq!(seen.last().unwrap().host, "svc.example");
        assert_eq!(seen.last().unwrap().path, "/h2/x");
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn websocket_upgrades_are_tunnelled() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("ws").with_protocol(EchoProtocol::Http1))
            .await
            .unwrap();
        let port = free_port();
        let server = start();
        push(
            &server,
            &json!({
                "version": 1,
                "listeners": [{"name": "web", "port": port, "protocol": "HTTP"}],
                "httpRoutes": [{"name": "r", "listeners": ["web"], "rules": [
                    {"backends": [{"name": "ws", "appProtocol": "kubernetes.io/ws",
                                   "endpoints": [echo.addr().to_string()]}]}
                ]}]
            }),
        )
        .await;
        let mut stream = TcpStream::connect(local(port)).await.unwrap();
        let head = support::websocket_upgrade(&mut stream, "ws.example", "/ws").await;
        assert!(head.starts_with("http/1.1 101"), "{head}");
        assert!(
            head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
            "{head}"
        );
        let reply = support::websocket_echo(&mut stream, "hello").await;
        assert_eq!(reply, [0x81, 5, b'h', b'e', b'l', b'l', b'o']);
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn retries_mirrors_and_cors() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("main")).await.unwrap();
        let mirror = EchoBackend::start(EchoConfig::new("mirror")).await.unwrap();
        let port = free_port();
        let server = start();
        let main = json!([{"name": "main", "endpoints": [echo.addr().to_string()]}]);
        push(
            &server,
            &json!({
                "version": 1,
                "listeners": [{"name": "web", "port": port, "protocol": "HTTP"}],
                "httpRoutes": [{"name": "r", "listeners": ["web"], "rules": [
                    {"matches": [{"path": {"type": "PathPrefix", "value": "/retry"}}],
                     "retry": {"attempts": 2, "codes": [503], "backoff": "10ms"},
                     "backends": main},
                    {"matches": [{"path": {"type": "PathPrefix", "value": "/mirrored"}}],
                     "filters": [{"type": "RequestMirror", "requestMirror": {
                         "backend": {"name": "mirror", "endpoints": [mirror.addr().to_string()]}}}],
                     "backends": main},
                    {"matches": [{"path": {"type": "PathPrefix", "value": "/cors"}}],
                     "filters": [{"type": "CORS", "cors": {
                         "allowOrigins": ["https://app.example"], "allowMethods": ["GET", "PUT"]}}],
                     "backends": main}
                ]}]
            }),
        )
        .await;

        // Two failures, then success: within 1 + 2 attempts.
        let reply = get(
            local(port),
            "x",
            "/retry/?uuid=u1&succeedAfter=2&responseCode=503",
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        // Three failures are more than 1 + 2 attempts: the last 503 is the answer.
        let reply = get(
            local(port),
            "x",
            "/retry/?uuid=u2&succeedAfter=3&responseCode=503",
        )
        .await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
        let attempts_u2 = echo
            .requests()
            .iter()
            .filter(|seen| seen.path.contains("uuid=u2"))
            .count();
        assert_eq!(attempts_u2, 3);

        let reply = get(local(port), "x", "/mirrored/1").await;
        assert_eq!(reply.status, StatusCode::OK);
        let mut waited = Duration::ZERO;
        while mirror.count() == 0 && waited < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            waited += Duration::from_millis(20);
        }
        assert_eq!(mirror.requests().last().unwrap().path, "/mirrored/1");

        let preflight = Request::options("/cors/x")
            .header("host", "x")
            .header("origin", "https://app.example")
            .header("access-control-request-method", "PUT")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let before = echo.count();
        let reply = support::send(local(port), preflight).await;
        assert_eq!(reply.status, StatusCode::NO_CONTENT);
        assert_eq!(
            reply.headers["access-control-allow-origin"],
            "https://app.example"
        );
        assert_eq!(echo.count(), before, "a preflight is answered by the proxy");
        let simple = Request::get("/cors/x")
            .header("host", "x")
            .header("origin", "https://app.example")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let reply = support::send(local(port), simple).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(
            reply.headers["access-control-allow-origin"],
            "https://app.example"
        );
        server.shutdown();
    })
    .await
    .unwrap();
}

/// Reads one response with a `Content-Length` body off `stream`, as text.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .expect("a Content-Length");
            if seen.len() >= end + 4 + length {
                return text;
            }
        }
        let read = stream.read(&mut buf).await.unwrap();
        assert!(read > 0, "closed before the response ended");
        seen.extend_from_slice(&buf[..read]);
    }
}

#[tokio::test]
async fn drain_finishes_requests_in_flight_closes_idle_connections_and_stops_accepting() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("slow")).await.unwrap();
        let port = free_port();
        let server = start();
        push(
            &server,
            &json!({
                "version": 1,
                "listeners": [{"name": "web", "port": port, "protocol": "HTTP"}],
                "httpRoutes": [{"name": "r", "listeners": ["web"], "rules": [
                    {"backends": [{"name": "slow", "endpoints": [echo.addr().to_string()]}]}]}]
            }),
        )
        .await;
        let in_flight: Vec<_> = (0..4)
            .map(|i| {
                tokio::spawn(get(
                    local(port),
                    "x",
                    match i {
                        0 => "/?delay=800ms",
                        1 => "/?delay=500ms",
                        _ => "/?delay=300ms",
                    },
                ))
            })
            .collect();
        // Let the requests reach the backend before draining.
        let mut waited = Duration::ZERO;
        while echo.count() < 4 && waited < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += Duration::from_millis(10);
        }
        assert_eq!(echo.count(), 4);
        // Idle connections: one kept alive after an answered request, one that never
        // sent a byte. Draining closes the first; the second was never handed to the
        // proxy (listeners defer accepting until a client speaks), so it is not
        // counted, and what it sends after the drain is never answered.
        let mut kept = TcpStream::connect(local(port)).await.unwrap();
        kept.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let answered = read_response(&mut kept).await;
        assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
        let mut silent = TcpStream::connect(local(port)).await.unwrap();
        // Accepted (a connection still in the listen queue is reset when the
        // listener closes): the four in flight and `kept` are open.
        let open = format!("culvert_open_connections{{listener=\"0.0.0.0:{port}\"}} 5");
        let mut waited = Duration::ZERO;
        while !String::from_utf8_lossy(&get(server.control_addr(), "c", "/metrics").await.body)
            .contains(&open)
        {
            assert!(waited < Duration::from_secs(5), "five connections accepted");
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += Duration::from_millis(10);
        }
        server.start_drain();
        let ready = support::send(
            server.control_addr(),
            Request::get("/readyz")
                .header("host", "c")
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await;
        assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
        tokio::time::timeout(Duration::from_secs(10), server.wait_drained())
            .await
            .expect("workers drain once their requests are answered");
        for request in in_flight {
            assert_eq!(request.await.unwrap().status, StatusCode::OK);
        }
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), kept.read_to_end(&mut rest));
        let closed = closed.await;
        assert!(
            matches!(closed, Ok(Ok(0))),
            "an idle connection is closed, with nothing more sent: {closed:?} {rest:?}"
        );
        // The kernel resets it (or it reads as closed): no listener is left to take it.
        let late = async {
            silent
                .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                .await?;
            silent.read_to_end(&mut rest).await
        };
        let late = tokio::time::timeout(Duration::from_secs(5), late).await;
        assert!(
            matches!(late, Ok(Ok(0) | Err(_))),
            "a request sent after the drain is not answered: {late:?} {rest:?}"
        );
        assert!(
            TcpStream::connect(local(port)).await.is_err(),
            "listeners are closed"
        );
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn the_config_api_speaks_tls_and_picks_up_a_rotated_certificate() {
    tokio::time::timeout(LIMIT, async {
        let ca = TestCa::new();
        let dir = support::temp_dir("control-tls");
        let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
        let (cert, key) = ca.leaf(&["control.example"]);
        std::fs::write(&cert_path, &cert).unwrap();
        std::fs::write(&key_path, &key).unwrap();

        // Exposed without TLS: refused; with a token and TLS: allowed.
        let public = SocketAddr::from(([0, 0, 0, 0], 0));
        let refused = Server::start(ServeConfig::new(public).with_token("t"));
        assert!(refused.unwrap_err().to_string().contains("TLS"));
        let server = Server::start(
            ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
                .with_token("t")
                .with_control_tls(culvert_proxy::ConfigApiTlsFiles {
                    certificate: cert_path.clone(),
                    private_key: key_path.clone(),
                }),
        )
        .unwrap();
        let control = server.control_addr();
        let get_config = || {
            Request::get("/config")
                .header("host", "control.example")
                .header("authorization", "Bearer t")
                .body(Full::new(Bytes::new()))
                .unwrap()
        };
        let (stream, _) =
            tls_connect(control, "control.example", ca.client_config(&[b"http/1.1"])).await;
        let reply = send_h1_on(stream, get_config()).await;
        assert_eq!(reply.status, StatusCode::OK);
        // Plain HTTP is not served on a TLS control port.
        let plain = TcpStream::connect(control).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(plain))
                .await
                .unwrap();
        tokio::spawn(connection);
        assert!(sender.send_request(get_config()).await.is_err());

        // Rotate to a certificate for another name; within the poll interval the
        // API serves it (a client checking the new name succeeds).
        let (cert, key) = ca.leaf(&["rotated.example", "control.example.rotated"]);
        std::fs::write(&key_path, &key).unwrap();
        std::fs::write(&cert_path, &cert).unwrap();
        let mut rotated = false;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let tcp = TcpStream::connect(control).await.unwrap();
            let name = rustls_pki_types::ServerName::try_from("rotated.example").unwrap();
            let connector = tokio_rustls::TlsConnector::from(ca.client_config(&[b"http/1.1"]));
            if connector.connect(name, tcp).await.is_ok() {
                rotated = true;
                break;
            }
        }
        assert!(
            rotated,
            "the rotated certificate was not served within 10 s"
        );
        server.shutdown();
        std::fs::remove_dir_all(&dir).unwrap();
    })
    .await
    .unwrap();
}

/// A gRPC-shaped backend over h2c: answers every request with one data frame and
/// trailers (`grpc-status: 0` and a trailer naming the path it saw).
async fn start_grpc_backend() -> SocketAddr {
    use http_body_util::BodyExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |request: Request<hyper::body::Incoming>| async move {
                        let path = request.uri().path().to_owned();
                        let te = request.headers().get("te").cloned();
                        let received = request.into_body().collect().await.unwrap().to_bytes();
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", "0".parse().unwrap());
                        trailers.insert("x-seen-path", path.parse().unwrap());
                        trailers
                            .insert("x-seen-bytes", received.len().to_string().parse().unwrap());
                        if let Some(te) = te {
                            trailers.insert("x-seen-te", te);
                        }
                        let body = Full::new(Bytes::from_static(b"\x00\x00\x00\x00\x02hi"))
                            .with_trailers(async move { Some(Ok(trailers)) });
                        let response = http::Response::builder()
                            .header("content-type", "application/grpc")
                            .body(body)
                            .unwrap();
                        Ok::<_, std::convert::Infallible>(response)
                    },
                );
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
            });
        }
    });
    addr
}

/// A data plane with one gRPC route (`demo.Echo/Say` on `grpc.example`) to
/// `endpoints`, and an h2c connection to it.
async fn grpc_route(
    endpoints: &[String],
) -> (Server, hyper::client::conn::http2::SendRequest<Full<Bytes>>) {
    let port = free_port();
    let server = start();
    push(&server, &json!({
        "version": 1,
        "listeners": [{"name": "web", "port": port, "protocol": "HTTP"}],
        "grpcRoutes": [{"name": "echo", "listeners": ["web"], "hostnames": ["grpc.example"],
            "rules": [{"matches": [{"method": {"type": "Exact", "service": "demo.Echo", "method": "Say"}}],
                       "backends": [{"name": "grpc", "endpoints": endpoints}]}]}]
    }))
    .await;
    let stream = TcpStream::connect(local(port)).await.unwrap();
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    (server, sender)
}

#[tokio::test]
async fn grpc_over_h2c_carries_trailers_both_ways() {
    use http_body_util::BodyExt as _;
    tokio::time::timeout(LIMIT, async {
        let backend = start_grpc_backend().await;
        let (server, mut sender) = grpc_route(&[backend.to_string()]).await;
        let call = |path: &str| {
            Request::post(format!("http://grpc.example{path}"))
                .version(Version::HTTP_2)
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(Full::new(Bytes::from_static(b"\x00\x00\x00\x00\x03abc")))
                .unwrap()
        };
        let response = sender.send_request(call("/demo.Echo/Say")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "application/grpc");
        let collected = response.into_body().collect().await.unwrap();
        let trailers = collected
            .trailers()
            .cloned()
            .expect("trailers reach the client");
        assert_eq!(
            collected.to_bytes(),
            Bytes::from_static(b"\x00\x00\x00\x00\x02hi")
        );
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(trailers["x-seen-path"], "/demo.Echo/Say");
        assert_eq!(trailers["x-seen-bytes"], "8");
        assert_eq!(trailers["x-seen-te"], "trailers");
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn grpc_calls_the_proxy_answers_itself_get_a_grpc_status() {
    use http_body_util::BodyExt as _;
    tokio::time::timeout(LIMIT, async {
        let (server, mut sender) = grpc_route(&[]).await;
        let call = |path: &str, content_type: &str| {
            Request::post(format!("http://grpc.example{path}"))
                .version(Version::HTTP_2)
                .header("content-type", content_type)
                .header("te", "trailers")
                .body(Full::new(Bytes::from_static(b"\x00\x00\x00\x00\x00")))
                .unwrap()
        };
        // (path, grpc-status, grpc-message): no endpoints, then no route.
        let cases = [
            ("/demo.Echo/Say", "14", "Service Unavailable: no_endpoints"),
            ("/demo.Echo/Other", "12", "Not Found"),
        ];
        for (path, code, message) in cases {
            let request = call(path, "application/grpc+proto");
            let response = sender.send_request(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let headers = response.headers().clone();
            assert_eq!(headers["content-type"], "application/grpc");
            assert_eq!(headers["grpc-status"], code, "{path}");
            assert_eq!(headers["grpc-message"], message, "{path}");
            let collected = response.into_body().collect().await.unwrap();
            assert!(
                collected.trailers().is_none(),
                "Trailers-Only: all in the head"
            );
            assert!(collected.to_bytes().is_empty());
        }
        // A request that is not gRPC keeps its HTTP status.
        let response = sender
            .send_request(call("/demo.Echo/Other", "application/json"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert!(response.headers().get("grpc-status").is_none());
        // Metrics count what the proxy decided: one 5xx (with its reason) and two 4xx.
        let expected = [
            "culvert_requests_total{route=\"/echo\",status_class=\"5xx\"} 1",
            "culvert_backend_errors_total{route=\"/echo\",reason=\"no_endpoints\"} 1",
            "culvert_requests_total{route=\"none\",status_class=\"4xx\"} 2",
        ];
        // Records land when a response body ends, which may be just after the
        // client has read it.
        for attempt in 0.. {
            let reply = get(server.control_addr(), "c", "/metrics").await;
            let text = String::from_utf8_lossy(&reply.body).into_owned();
            if expected.iter().all(|line| text.contains(line)) {
                break;
            }
            assert!(attempt < 100, "{expected:?} not in\n{text}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn listener_certificate_files_are_reloaded_when_they_change() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
        let ca = TestCa::new();
        let dir = support::temp_dir("listener-tls");
        let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
        let (cert, key) = ca.leaf(&["old.example"]);
        std::fs::write(&cert_path, &cert).unwrap();
        std::fs::write(&key_path, &key).unwrap();
        let port = free_port();
        let server = start();
        push(
            &server,
            &json!({
                "version": 1,
                "listeners": [{"name": "tls", "port": port, "protocol": "HTTPS",
                               "tls": {"certificateRefs": [{"namespace": "ns", "name": "site"}]}}],
                "certificates": [{"namespace": "ns", "name": "site",
                                  "certificateFile": cert_path, "privateKeyFile": key_path}],
                "httpRoutes": [{"name": "r", "listeners": ["tls"], "rules": [
                    {"backends": [{"name": "echo", "endpoints": [echo.addr().to_string()]}]}]}]
            }),
        )
        .await;
        let handshake = |name: &'static str| {
            let config = ca.client_config(&[b"http/1.1"]);
            async move {
                let tcp = TcpStream::connect(local(port)).await.unwrap();
                let server_name = rustls_pki_types::ServerName::try_from(name).unwrap();
                tokio_rustls::TlsConnector::from(config)
                    .connect(server_name, tcp)
                    .await
                    .is_ok()
            }
        };
        assert!(handshake("old.example").await);
        assert!(
            !handshake("new.example").await,
            "the old certificate does not cover it"
        );

        let (cert, key) = ca.leaf(&["new.example", "renewed.example"]);
        std::fs::write(&key_path, &key).unwrap();
        std::fs::write(&cert_path, &cert).unwrap();
        let mut renewed = false;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if handshake("new.example").await {
                renewed = true;
                break;
            }
        }
        assert!(
            renewed,
            "the renewed certificate was not served within 10 s"
        );
        let (stream, _) =
            tls_connect(local(port), "new.example", ca.client_config(&[b"http/1.1"])).await;
        assert_eq!(
            send_h1_on(stream, get_request("new.example", "/"))
                .await
                .status,
            StatusCode::OK
        );
        server.shutdown();
        std::fs::remove_dir_all(&dir).unwrap();
    })
    .await
    .unwrap();
}
