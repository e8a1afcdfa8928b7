#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, Version};
use http_body_util::{BodyExt as _, Empty};
use hyper::client::conn::{http1 as client_h1, http2 as client_h2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::timeout;

use rustls::pki_types::pem::PemObject as _;

use super::{EchoBackend, EchoConfig, EchoProtocol, duration, grpc, handler};

/// Every test finishes well inside this on a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(10);

async fn start(protocol: EchoProtocol) -> EchoBackend {
    EchoBackend::start(EchoConfig::new("infra-backend-v1").with_protocol(protocol))
        .await
        .unwrap()
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Sends `req` over a new HTTP/1.1 connection.
async fn send_h1(backend: &EchoBackend, req: Request<Empty<Bytes>>) -> hyper::Result<Answer> {
    let stream = TcpStream::connect(backend.addr()).await.unwrap();
    let (mut sender, conn) = client_h1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let response = sender.send_request(req).await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

async fn get_h1(backend: &EchoBackend, target: &str) -> hyper::Result<Answer> {
    let req = Request::get(target)
        .header("host", "example.com")
        .body(Empty::new())
        .unwrap();
    send_h1(backend, req).await
}

#[tokio::test]
async fn get_echoes_path_host_method_and_headers() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Http1).await;
        let req = Request::get("/a/b?c=d&e")
            .header("host", "foo.example.com")
            .header("x-custom", "one")
            .body(Empty::new())
            .unwrap();
        let answer = send_h1(&backend, req).await.unwrap();
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.headers["content-type"], "application/json");
        let echo = answer.json();
        assert_eq!(echo["path"], "/a/b?c=d&e");
        assert_eq!(echo["host"], "foo.example.com");
        assert_eq!(echo["method"], "GET");
        assert_eq!(echo["proto"], "HTTP/1.1");
        assert_eq!(echo["headers"]["X-Custom"], serde_json::json!(["one"]));
        assert!(echo["headers"].get("Host").is_none(), "{echo}");
        assert_eq!(echo["pod"], "infra-backend-v1");
        assert_eq!(echo["service"], "infra-backend-v1");
        assert_eq!(echo["namespace"], "");

        assert_eq!(backend.count(), 1);
        let seen = backend.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].method, http::Method::GET);
        assert_eq!(seen[0].path, "/a/b?c=d&e");
        assert_eq!(seen[0].host, "foo.example.com");
        assert_eq!(seen[0].proto, Version::HTTP_11);
        assert_eq!(seen[0].header("X-Custom"), ["one"]);
        assert_eq!(seen[0].header("host"), ["foo.example.com"]);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn repeated_headers_keep_their_order() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Auto).await;
        let req = Request::get("/")
            .header("host", "h")
            .header("x-multi", "first")
            .header("x-other", "between")
            .header("x-multi", "second")
            .header("x-multi", "third")
            .body(Empty::new())
            .unwrap();
        let echo = send_h1(&backend, req).await.unwrap().json();
        assert_eq!(
            echo["headers"]["X-Multi"],
            serde_json::json!(["first", "second", "third"])
        );
        let seen = &backend.requests()[0];
        assert_eq!(seen.header("x-multi"), ["first", "second", "third"]);
        assert_eq!(seen.header("x-other"), ["between"]);
    })
    .await
    .unwrap();
}

async fn h2_prior_knowledge(protocol: EchoProtocol) {
    let backend = start(protocol).await;
    let stream = TcpStream::connect(backend.addr()).await.unwrap();
    let (mut sender, conn) = client_h2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get("http://grpc.example.com/h2?x=1")
        .header("x-h2", "yes")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let echo: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(echo["proto"], "HTTP/2.0");
    assert_eq!(echo["path"], "/h2?x=1");
    assert_eq!(echo["host"], "grpc.example.com");
    assert_eq!(echo["headers"]["X-H2"], serde_json::json!(["yes"]));
    assert_eq!(backend.requests()[0].proto, Version::HTTP_2);
}

#[tokio::test]
async fn h2c_prior_knowledge_reports_http2() {
    timeout(LIMIT, h2_prior_knowledge(EchoProtocol::H2c))
        .await
        .unwrap();
}

#[tokio::test]
async fn auto_detects_h2c_and_still_serves_http1() {
    timeout(LIMIT, async {
        h2_prior_knowledge(EchoProtocol::Auto).await;
        let backend = start(EchoProtocol::Auto).await;
        let echo = get_h1(&backend, "/one").await.unwrap().json();
        assert_eq!(echo["proto"], "HTTP/1.1");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn echo_set_header_adds_response_headers() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Http1).await;
        let req = Request::get("/")
            .header("host", "h")
            .header("x-echo-set-header", "X-Foo: bar, X-Baz:qux")
            .header("x-echo-set-header", "X-Foo: again")
            .body(Empty::new())
            .unwrap();
        let answer = send_h1(&backend, req).await.unwrap();
        assert_eq!(answer.headers["x-foo"], "bar,again");
        assert_eq!(answer.headers["x-baz"], "qux");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn delay_waits_before_answering() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Http1).await;
        let started = Instant::now();
        let answer = get_h1(&backend, "/slow?delay=200ms").await.unwrap();
        let took = started.elapsed();
        assert_eq!(answer.status, StatusCode::OK);
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");

        let answer = get_h1(&backend, "/slow?delay=soon").await.unwrap();
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn retry_with_response_code_fails_n_times_per_uuid() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Http1).await;
        let target = |uuid: &str| format!("/retry/x?uuid={uuid}&succeedAfter=2&responseCode=503");
        for _ in 0..2 {
            let answer = get_h1(&backend, &target("a")).await.unwrap();
            assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        }
        // Another uuid has its own count.
        let answer = get_h1(&backend, &target("b")).await.unwrap();
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        for _ in 0..2 {
            let answer = get_h1(&backend, &target("a")).await.unwrap();
            assert_eq!(answer.status, StatusCode::OK);
            assert_eq!(answer.json()["path"], target("a"));
        }
        let answer = get_h1(&backend, &target("b")).await.unwrap();
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        let answer = get_h1(&backend, &target("b")).await.unwrap();
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(backend.count(), 7);

        let answer = get_h1(&backend, "/retry/x?succeedAfter=1").await.unwrap();
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn retry_without_response_code_resets_the_connection() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Http1).await;
        let target = "/retry/?uuid=reset&succeedAfter=2";
        // On the wire: no answer, and an RST rather than a FIN.
        let mut stream = TcpStream::connect(backend.addr()).await.unwrap();
        let request = format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let err = stream.read_to_end(&mut answer).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
        assert!(answer.is_empty());
        // Through a client: the request fails.
        let result = get_h1(&backend, target).await;
        assert!(result.is_err(), "second attempt should fail");
        let answer = get_h1(&backend, target).await.unwrap();
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(backend.count(), 3);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn retry_without_response_code_resets_the_h2_stream() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::H2c).await;
        let stream = TcpStream::connect(backend.addr()).await.unwrap();
        let (mut sender, conn) = client_h2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = || {
            Request::get("http://h/retry/?uuid=h2&succeedAfter=1")
                .body(Empty::<Bytes>::new())
                .unwrap()
        };
        assert!(sender.send_request(req()).await.is_err());
        // Same connection: only the stream was reset.
        let response = sender.send_request(req()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    })
    .await
    .unwrap();
}

/// Reads an HTTP/1.1 response head from a raw stream.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

#[tokio::test]
async fn websocket_text_frames_are_echoed() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Auto).await;
        let mut stream = TcpStream::connect(backend.addr()).await.unwrap();
        stream
            .write_all(
                b"GET /ws HTTP/1.1\r\nHost: ws.example.com\r\nUpgrade: websocket\r\n\
                  Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                  Sec-WebSocket-Version: 13\r\n\r\n",
            )
            .await
            .unwrap();
        let head = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        // The RFC 6455 example key and its accept value.
        assert!(
            head.to_ascii_lowercase()
                .contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
            "{head}"
        );

        for text in ["hello", "second message"] {
            let mask = [1u8, 2, 3, 4];
            let mut frame = vec![0x81, 0x80 | u8::try_from(text.len()).unwrap()];
            frame.extend_from_slice(&mask);
            frame.extend(text.bytes().zip(mask.iter().cycle()).map(|(b, m)| b ^ m));
            stream.write_all(&frame).await.unwrap();

            let mut reply = vec![0u8; 2 + text.len()];
            stream.read_exact(&mut reply).await.unwrap();
            assert_eq!(reply[0], 0x81);
            assert_eq!(usize::from(reply[1]), text.len());
            assert_eq!(&reply[2..], text.as_bytes());
        }
        assert_eq!(backend.requests()[0].path, "/ws");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn garbage_does_not_stop_the_backend() {
    timeout(LIMIT, async {
        for protocol in [EchoProtocol::Http1, EchoProtocol::Auto, EchoProtocol::H2c] {
            let backend = start(protocol).await;
            let mut stream = TcpStream::connect(backend.addr()).await.unwrap();
            stream
                .write_all(b"\x00\x01\xffgarbage \r\n\r\n")
                .await
                .unwrap();
            let mut answer = Vec::new();
            // The backend answers (HTTP/1: 400) and/or closes; either way it ends.
            let _ = stream.read_to_end(&mut answer).await;
            if protocol != EchoProtocol::H2c {
                let text = String::from_utf8_lossy(&answer);
                assert!(text.starts_with("HTTP/1.1 400"), "{protocol:?}: {text}");
            }
            if protocol != EchoProtocol::H2c {
                let answer = get_h1(&backend, "/after").await.unwrap();
                assert_eq!(answer.status, StatusCode::OK);
            }
        }
        let backend = start(EchoProtocol::H2c).await;
        h2_prior_knowledge_after(&backend).await;
    })
    .await
    .unwrap();
}

async fn h2_prior_knowledge_after(backend: &EchoBackend) {
    let mut stream = TcpStream::connect(backend.addr()).await.unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut sink = Vec::new();
    let _ = stream.read_to_end(&mut sink).await;
    let stream = TcpStream::connect(backend.addr()).await.unwrap();
    let (mut sender, conn) = client_h2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get("http://h/")
        .body(Empty::<Bytes>::new())
        .unwrap();
    assert_eq!(
        sender.send_request(req).await.unwrap().status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn oversized_body_gets_413() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Http1).await;
        let stream = TcpStream::connect(backend.addr()).await.unwrap();
        let (mut sender, conn) = client_h1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        let body = http_body_util::Full::new(Bytes::from(vec![b'x'; handler::MAX_BODY + 1]));
        let req = Request::post("/").header("host", "h").body(body).unwrap();
        let response = sender.send_request(req).await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn health_and_status_routes() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Http1).await;
        let answer = get_h1(&backend, "/health").await.unwrap();
        assert_eq!(
            (answer.status, &answer.body[..]),
            (StatusCode::OK, &b"OK"[..])
        );
        let answer = get_h1(&backend, "/status/418").await.unwrap();
        assert_eq!(answer.status, StatusCode::IM_A_TEAPOT);
        let answer = get_h1(&backend, "/status/abc").await.unwrap();
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn shutdown_stops_accepting() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Auto).await;
        let addr = backend.addr();
        assert_eq!(get_h1(&backend, "/").await.unwrap().status, StatusCode::OK);
        backend.shutdown().await;
        assert!(TcpStream::connect(addr).await.is_err());
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn log_capacity_bounds_the_log_not_the_count() {
    timeout(LIMIT, async {
        let config = EchoConfig {
            log_capacity: 2,
            protocol: EchoProtocol::Http1,
            ..EchoConfig::new("small")
        };
        let backend = EchoBackend::start(config).await.unwrap();
        for path in ["/1", "/2", "/3"] {
            get_h1(&backend, path).await.unwrap();
        }
        assert_eq!(backend.count(), 3);
        let paths: Vec<_> = backend.requests().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/2", "/3"]);
    })
    .await
    .unwrap();
}

/// One gRPC call over a new h2c connection: the answer's status, headers, body
/// and trailers.
async fn grpc_call(
    backend: &EchoBackend,
    method: &str,
    body: Bytes,
) -> (StatusCode, HeaderMap, Bytes, Option<HeaderMap>) {
    let stream = TcpStream::connect(backend.addr()).await.unwrap();
    let (mut sender, conn) = client_h2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::post(format!(
        "http://grpc.example.com/{}/{method}",
        grpc::SERVICE
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .header("x-meta", "value-1")
    .body(http_body_util::Full::new(body))
    .unwrap();
    let response = sender.send_request(req).await.unwrap();
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    (parts.status, parts.headers, collected.to_bytes(), trailers)
}

/// The length-delimited fields of a protobuf message, `(field number, bytes)`.
fn proto_fields(mut message: &[u8]) -> Vec<(u64, Vec<u8>)> {
    fn varint(bytes: &mut &[u8]) -> u64 {
        let mut value = 0;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = bytes.split_first().unwrap();
            *bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        value
    }
    let mut fields = Vec::new();
    while !message.is_empty() {
        let key = varint(&mut message);
        assert_eq!(key & 7, 2, "only length-delimited fields are expected");
        let len = usize::try_from(varint(&mut message)).unwrap();
        let (value, rest) = message.split_at(len);
        fields.push((key >> 3, value.to_vec()));
        message = rest;
    }
    fields
}

/// The value of field `number` in `fields` (the first, if repeated).
fn proto_bytes(fields: &[(u64, Vec<u8>)], number: u64) -> &[u8] {
    &fields.iter().find(|(n, _)| *n == number).unwrap().1
}

fn proto_string(fields: &[(u64, Vec<u8>)], number: u64) -> String {
    String::from_utf8(proto_bytes(fields, number).to_vec()).unwrap()
}

#[tokio::test]
async fn grpc_echo_answers_the_call_it_saw_with_status_ok() {
    timeout(LIMIT, async {
        let backend = EchoBackend::start(EchoConfig {
            namespace: "gateway-conformance-infra".to_owned(),
            ..EchoConfig::new("grpc-infra-backend-v1")
        })
        .await
        .unwrap();
        for method in ["Echo", "EchoTwo"] {
            let request = grpc::frame(&[]);
            let (status, headers, body, trailers) = grpc_call(&backend, method, request).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(headers["content-type"], "application/grpc");
            assert!(headers.get("grpc-status").is_none(), "{headers:?}");
            assert_eq!(trailers.unwrap()["grpc-status"], "0");

            let message = grpc::unary_message(&body).unwrap();
            let response = proto_fields(message);
            assert_eq!(response.len(), 1, "EchoResponse holds only its assertions");
            let assertions = proto_fields(&response[0].1);
            let full_method = format!("/{}/{method}", grpc::SERVICE);
            assert_eq!(proto_string(&assertions, 1), full_method);
            assert_eq!(proto_string(&assertions, 3), "grpc.example.com");
            let metadata: Vec<(String, String)> = assertions
                .iter()
                .filter(|(n, _)| *n == 2)
                .map(|(_, entry)| {
                    let entry = proto_fields(entry);
                    (proto_string(&entry, 1), proto_string(&entry, 2))
                })
                .collect();
            assert!(metadata.contains(&(":authority".into(), "grpc.example.com".into())));
            assert!(metadata.contains(&("x-meta".into(), "value-1".into())));
            let context = proto_fields(proto_bytes(&assertions, 4));
            assert_eq!(proto_string(&context, 1), "gateway-conformance-infra");
            assert_eq!(proto_string(&context, 3), "grpc-infra-backend-v1");
            assert_eq!(proto_string(&context, 4), "grpc-infra-backend-v1");
        }
        let seen = backend.requests();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].path, format!("/{}/EchoTwo", grpc::SERVICE));
        assert_eq!(seen[1].header("x-meta"), ["value-1"]);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn grpc_unknown_methods_are_unimplemented() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::Auto).await;
        for method in ["EchoThree", "Nope"] {
            let (status, headers, body, trailers) =
                grpc_call(&backend, method, grpc::frame(&[])).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(headers["grpc-status"], "12", "{method}");
            assert!(body.is_empty());
            assert!(trailers.is_none());
        }
        assert_eq!(backend.count(), 2, "the calls are still recorded");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn grpc_broken_framing_is_internal() {
    timeout(LIMIT, async {
        let backend = start(EchoProtocol::H2c).await;
        let mut compressed = grpc::frame(b"\x0a\x00").to_vec();
        compressed[0] = 1;
        let mut long = grpc::frame(&[]).to_vec();
        long.push(0);
        for body in [
            Bytes::from_static(b"\0\0\0"),
            compressed.into(),
            long.into(),
        ] {
            let (status, headers, _, _) = grpc_call(&backend, "Echo", body.clone()).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(headers["grpc-status"], "13", "{body:?}");
        }
    })
    .await
    .unwrap();
}

#[test]
fn go_durations_parse_like_go() {
    let ok = [
        ("0", Duration::ZERO),
        ("200ms", Duration::from_millis(200)),
        ("1.5s", Duration::from_millis(1500)),
        ("2h45m", Duration::from_secs(2 * 3600 + 45 * 60)),
        ("10us", Duration::from_micros(10)),
        ("10µs", Duration::from_micros(10)),
        ("7ns", Duration::from_nanos(7)),
        (".5m", Duration::from_secs(30)),
        ("1.m", Duration::from_secs(60)),
        ("+3s", Duration::from_secs(3)),
        ("-3s", Duration::ZERO),
        ("1h0.25s", Duration::from_millis(3_600_250)),
    ];
    for (input, want) in ok {
        assert_eq!(duration::parse(input), Ok(want), "{input}");
    }
    for bad in [
        "", "-", "1", "s", ".s", "1x", "1.5", "3000000h", "1s2", "--1s",
    ] {
        assert!(duration::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn echo_set_header_skips_invalid_entries() {
    let mut out = HeaderMap::new();
    handler::add_echo_headers(&mut out, "Good: 1, bad name: 2, :3, Empty");
    assert_eq!(out["good"], "1");
    assert_eq!(out["empty"], "");
    assert_eq!(out.len(), 2);
}

#[test]
fn query_params_are_decoded() {
    let uri: http::Uri = "/p?a=1&delay=1%2E5s&b+c=d+e".parse().unwrap();
    assert_eq!(handler::query_param(&uri, "delay").as_deref(), Some("1.5s"));
    assert_eq!(handler::query_param(&uri, "b c").as_deref(), Some("d e"));
    assert_eq!(handler::query_param(&uri, "missing"), None);
}

/// A CA and a certificate it signed for `name` (client or server), as PEM.
fn signed_by_ca(name: &str) -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec![name.to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (ca_cert.pem(), leaf.pem(), key.serialize_pem())
}

/// Opens TLS to `backend` with SNI `sni`, ALPN `alpn`, showing `client` (chain
/// and key PEM) if given, and sends one HTTP/1.1 GET.
async fn get_over_tls(
    backend: &EchoBackend,
    sni: &str,
    client: Option<(&str, &str)>,
) -> Result<Answer, String> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    let provider = culvert_tls::crypto_provider();
    let builder = rustls::ClientConfig::builder_with_provider(std::sync::Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(
            crate::tls::AcceptAnyCertificate::new(provider),
        ));
    let mut config = match client {
        Some((chain, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(chain.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap(),
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let stream = TcpStream::connect(backend.addr()).await.unwrap();
    let name = ServerName::try_from(sni.to_owned()).unwrap();
    let tls = connector
        .connect(name, stream)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = client_h1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let req = Request::get("/tls")
        .header("host", sni)
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

#[tokio::test]
async fn a_tls_backend_reports_the_sni_and_the_client_certificate_it_saw() {
    let (_, server_chain, server_key) = signed_by_ca("backend.example");
    let (client_ca, client_chain, client_key) = signed_by_ca("gateway");
    let backend = EchoBackend::start(EchoConfig {
        tls: Some(super::EchoTls {
            certificate_pem: server_chain,
            private_key_pem: server_key,
            client_ca_pem: Some(client_ca),
        }),
        ..EchoConfig::new("secure")
    })
    .await
    .unwrap();
    timeout(LIMIT, async {
        let shown = get_over_tls(
            &backend,
            "backend.example",
            Some((&client_chain, &client_key)),
        )
        .await
        .unwrap();
        assert_eq!(shown.status, StatusCode::OK);
        assert_eq!(shown.json()["sni"], "backend.example");
        let seen = backend.requests().pop().unwrap();
        let tls = seen.tls.unwrap();
        assert_eq!(tls.server_name.as_deref(), Some("backend.example"));
        let leaf =
            rustls::pki_types::CertificateDer::from_pem_slice(client_chain.as_bytes()).unwrap();
        assert_eq!(tls.client_certificate.as_deref(), Some(leaf.as_ref()));
        // No certificate is taken too, and recorded as none.
        let anonymous = get_over_tls(&backend, "other.example", None).await.unwrap();
        assert_eq!(anonymous.json()["sni"], "other.example");
        assert_eq!(
            backend
                .requests()
                .pop()
                .unwrap()
                .tls
                .unwrap()
                .client_certificate,
            None
        );
        // A certificate another CA signed is refused in the handshake.
        let (_, foreign_chain, foreign_key) = signed_by_ca("intruder");
        let refused = get_over_tls(
            &backend,
            "backend.example",
            Some((&foreign_chain, &foreign_key)),
        )
        .await;
        assert!(refused.is_err(), "a foreign client certificate was taken");
        assert_eq!(backend.count(), 2);
    })
    .await
    .unwrap();
}
