//! h2c by `Upgrade: h2c` through a real data plane on loopback: the `101`, the
//! upgrade request answered on stream 1, and the connection going on as HTTP/2
//! with the client's own HPACK state intact. Frames are written and read by hand:
//! no HTTP/2 client library offers the upgrade.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::time::Duration;

use culvert_bench::{EchoBackend, EchoConfig, EchoProtocol};
use culvert_proxy::Server;
use http::Version;
use serde_json::{Value, json};
use support::proxy_to;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(30);
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;

const UPGRADE: &str = "GET /up?x=1 HTTP/1.1\r\nHost: up.example\r\n\
    Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\
    X-Test: yes\r\n";

/// A data plane routing `up.example` to a fresh echo backend, and its port.
async fn serving() -> (Server, EchoBackend, u16) {
    let echo = EchoBackend::start(EchoConfig::new("echo").with_protocol(EchoProtocol::Http1))
        .await
        .unwrap();
    let (server, addr) = proxy_to(echo.addr(), &["up.example"]).await;
    (server, echo, addr.port())
}

/// Reads an HTTP/1.1 response head.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await.unwrap());
    }
    String::from_utf8(head).unwrap()
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut out = length[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A request header block. `x-round` is added to the HPACK dynamic table
/// (literal with incremental indexing) when `index_round`, else sent as its
/// dynamic-table entry 62, which only the client's own earlier block put there.
fn request_block(path: &str, index_round: bool) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "up.example"),
        (":path", path),
    ] {
        block.push(0x00);
        block.push(u8::try_from(name.len()).unwrap());
        block.extend_from_slice(name.as_bytes());
        block.push(u8::try_from(value.len()).unwrap());
        block.extend_from_slice(value.as_bytes());
    }
    if index_round {
        block.extend_from_slice(b"\x40\x07x-round\x03two");
    } else {
        block.push(0x80 | 62);
    }
    block
}

/// Reads frames, acknowledging the server's SETTINGS, until `stream` ends; returns
/// whether a HEADERS frame came on it and its DATA bytes.
async fn read_stream(tcp: &mut TcpStream, stream: u32) -> (bool, Vec<u8>) {
    let (mut headers, mut data) = (false, Vec::new());
    loop {
        let mut header = [0u8; 9];
        tcp.read_exact(&mut header).await.unwrap();
        let length =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let (kind, flags) = (header[3], header[4]);
        let id = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; length];
        tcp.read_exact(&mut payload).await.unwrap();
        if kind == SETTINGS && flags & ACK == 0 {
            tcp.write_all(&frame(SETTINGS, ACK, 0, &[])).await.unwrap();
        }
        if id != stream {
            continue;
        }
        match kind {
            HEADERS => headers = true,
            DATA => data.extend_from_slice(&payload),
            _ => {}
        }
        if (kind == HEADERS || kind == DATA) && flags & END_STREAM != 0 {
            return (headers, data);
        }
    }
}

#[tokio::test]
async fn an_upgrade_to_h2c_is_answered_on_stream_one_and_the_connection_goes_on() {
    tokio::time::timeout(LIMIT, async {
        let (server, echo, port) = serving().await;
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        tcp.write_all(format!("{UPGRADE}\r\n").as_bytes())
            .await
            .unwrap();
        let head = read_head(&mut tcp).await;
        assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
        assert!(head.to_ascii_lowercase().contains("upgrade: h2c"), "{head}");

        let mut preface = PREFACE.to_vec();
        preface.extend_from_slice(&frame(SETTINGS, 0, 0, &[]));
        tcp.write_all(&preface).await.unwrap();
        let (headers, body) = read_stream(&mut tcp, 1).await;
        assert!(headers, "the response head comes on stream 1");
        let seen: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(seen["path"], "/up?x=1");
        assert_eq!(seen["host"], "up.example");
        assert_eq!(seen["headers"]["X-Test"], json!(["yes"]));
        assert!(seen["headers"].get("Http2-Settings").is_none(), "{seen}");
        assert!(seen["headers"].get("Upgrade").is_none(), "{seen}");

        // The client's next streams: the second one refers to the HPACK table entry
        // the first one added.
        for (id, path, index_round) in [(3, "/three", true), (5, "/five", false)] {
            let block = request_block(path, index_round);
            let request = frame(HEADERS, END_STREAM | END_HEADERS, id, &block);
            tcp.write_all(&request).await.unwrap();
            let (_, body) = read_stream(&mut tcp, id).await;
            let seen: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(seen["path"], path);
            assert_eq!(seen["headers"]["X-Round"], json!(["two"]), "{path}");
        }
        let requests = echo.requests();
        assert_eq!(requests.len(), 3);
        assert!(requests.iter().all(|seen| seen.proto == Version::HTTP_11));
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_upgrade_that_cannot_be_taken_cleanly_is_answered_over_http1() {
    tokio::time::timeout(LIMIT, async {
        let (server, echo, port) = serving().await;
        let with_body = format!(
            "{}Content-Length: 3\r\n\r\nabc",
            UPGRADE.replace("GET", "POST")
        );
        let no_settings = format!(
            "{}\r\n",
            UPGRADE.replace("HTTP2-Settings: AAMAAABkAAQAAP__\r\n", "")
        );
        for request in [with_body, no_settings] {
            let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            tcp.write_all(request.as_bytes()).await.unwrap();
            let head = read_head(&mut tcp).await;
            assert!(head.starts_with("HTTP/1.1 200 "), "{request}\n{head}");
        }
        let requests = echo.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(
            requests[0].body, "abc",
            "the body is forwarded, not the upgrade"
        );
        assert!(
            requests
                .iter()
                .all(|seen| seen.header("upgrade").is_empty())
        );
        server.shutdown();
    })
    .await
    .unwrap();
}
