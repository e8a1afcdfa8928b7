//! Overload and abuse: each test runs one attack against a real data plane on
//! loopback, written as raw bytes (HTTP/2 frames built by hand where a client
//! library would refuse to misbehave), and checks three things: the limit holds
//! (the attacker is refused or cut off), other traffic is served meanwhile, and the
//! refusal is counted in `/metrics` (`culvert_refused_total{reason}`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use culvert_bench::{EchoBackend, EchoConfig, EchoProtocol};
use culvert_proxy::{ClientLimits, ServeConfig, Server};
use culvert_wire::HeadLimits;
use http::StatusCode;
use support::{get, proxy_with, websocket_echo, websocket_upgrade};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(30);

const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const CANCEL: u32 = 0x8;
const REFUSED_STREAM: u32 = 0x7;
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// One HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap();
    let mut out = len.to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The client preface and an empty SETTINGS frame.
fn preface() -> Vec<u8> {
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out
}

/// An HPACK block for `GET http://echo.example/` (static-table indices, the
/// authority as a literal without indexing).
fn get_block() -> Vec<u8> {
    let mut block = vec![0x82, 0x86, 0x84, 0x01, 12];
    block.extend_from_slice(b"echo.example");
    block
}

/// What the server sent on a raw HTTP/2 connection, frame by frame.
#[derive(Debug, Default)]
struct Seen {
    /// Streams the server answered with a HEADERS frame.
    answered: Vec<u32>,
    /// The HPACK blocks of those HEADERS frames, in order.
    blocks: Vec<Vec<u8>>,
    /// RST_STREAM frames: (stream, error code).
    resets: Vec<(u32, u32)>,
    /// The GOAWAY error code, if one came.
    goaway: Option<u32>,
    /// The server closed the connection.
    closed: bool,
}

/// Reads frames until the server closes, sends GOAWAY, or `wait` passes.
async fn read_frames(stream: &mut TcpStream, wait: Duration) -> Seen {
    let mut seen = Seen::default();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(wait, async {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            while buf.len() >= 9 {
                let len =
                    usize::from(buf[0]) << 16 | usize::from(buf[1]) << 8 | usize::from(buf[2]);
                if buf.len() < 9 + len {
                    break;
                }
                let kind = buf[3];
                let id = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
                let payload = &buf[9..9 + len];
                match kind {
                    HEADERS => {
                        seen.answered.push(id);
                        seen.blocks.push(payload.to_vec());
                    }
                    RST_STREAM => {
                        let code = u32::from_be_bytes(payload[..4].try_into().unwrap());
                        seen.resets.push((id, code));
                    }
                    GOAWAY => {
                        let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
                        seen.goaway = Some(code);
                    }
                    _ => {}
                }
                buf.drain(..9 + len);
            }
            if seen.goaway.is_some() {
                return;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    seen.closed = true;
                    return;
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    seen
}

/// The value of `culvert_refused_total{reason="..."}`.
async fn refused(server: &Server, reason: &str) -> u64 {
    let series = format!("culvert_refused_total{{reason=\"{reason}\"}}");
    support::metric(server.control_addr(), &series)
        .await
        .unwrap_or_else(|| panic!("no {series} in /metrics"))
}

/// A data plane with one worker and `limits`, routing `echo.example` to an echo
/// backend.
async fn plane(limits: ClientLimits) -> (Server, SocketAddr, EchoBackend) {
    let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
    let config = ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_workers(NonZeroUsize::MIN)
        .with_client_limits(limits);
    let (server, addr) = proxy_with(config, echo.addr(), &["echo.example"]).await;
    (server, addr, echo)
}

/// Another client is served while (or right after) an attack.
async fn others_are_served(addr: SocketAddr) {
    let reply = get(addr, "echo.example", "/still-here").await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn rapid_reset_ends_the_connection_with_enhance_your_calm() {
    tokio::time::timeout(LIMIT, async {
        let (server, addr, echo) = plane(ClientLimits::default()).await;
        let mut attacker = TcpStream::connect(addr).await.unwrap();
        // CVE-2023-44487: open a stream and cancel it at once, many times over.
        let mut attack = preface();
        for n in 0..2_000u32 {
            let id = 2 * n + 1;
            attack.extend(frame(HEADERS, END_STREAM | END_HEADERS, id, &get_block()));
            attack.extend(frame(RST_STREAM, 0, id, &CANCEL.to_be_bytes()));
        }
        // The server may stop reading and close before all of it is written.
        let _ = attacker.write_all(&attack).await;
        let seen = read_frames(&mut attacker, Duration::from_secs(10)).await;
        assert_eq!(seen.goaway, Some(ENHANCE_YOUR_CALM), "{seen:?}");
        assert!(
            echo.requests().len() < 200,
            "{} of 2,000 cancelled streams reached the backend",
            echo.requests().len()
        );
        others_are_served(addr).await;
        assert!(refused(&server, "http2_abuse").await >= 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_continuation_flood_is_cut_off() {
    tokio::time::timeout(LIMIT, async {
        let (server, addr, echo) = plane(ClientLimits::default()).await;
        let mut attacker = TcpStream::connect(addr).await.unwrap();
        attacker.write_all(&preface()).await.unwrap();
        // A header block that never ends: HEADERS without END_HEADERS, then
        // CONTINUATION frames of literal fields, 16 MiB in all if the server
        // kept reading.
        let mut field = vec![0x00, 6];
        field.extend_from_slice(b"x-fill");
        field.push(120);
        field.extend_from_slice(&[b'a'; 120]);
        let continuation = frame(CONTINUATION, 0, 1, &field.repeat(100));
        let opening = frame(HEADERS, END_STREAM, 1, &get_block());
        let writer = async {
            let _ = attacker.write_all(&opening).await;
            for _ in 0..1_300 {
                if attacker.write_all(&continuation).await.is_err() {
                    return false;
                }
            }
            true
        };
        let wrote_everything = tokio::time::timeout(Duration::from_secs(10), writer)
            .await
            .unwrap_or(false);
        let seen = read_frames(&mut attacker, Duration::from_secs(5)).await;
        assert!(
            !wrote_everything || seen.goaway.is_some() || seen.closed,
            "the server kept taking an endless header block: {seen:?}"
        );
        assert!(
            echo.requests().is_empty(),
            "the unfinished request went upstream"
        );
        others_are_served(addr).await;
        let counted =
            refused(&server, "http2_abuse").await + refused(&server, "http2_protocol").await;
        assert!(counted >= 1);
    })
    .await
    .unwrap();
}

/// Writes `frame` over and over for `for_how_long` without reading anything back;
/// how many bytes the server took in that time.
async fn flood(stream: &mut TcpStream, frame: &[u8], for_how_long: Duration) -> usize {
    let batch = frame.repeat(4096);
    let mut written = 0;
    let _ = tokio::time::timeout(for_how_long, async {
        while stream.write_all(&batch).await.is_ok() {
            written += batch.len();
        }
    })
    .await;
    written
}

#[tokio::test]
async fn control_frame_floods_are_held_back_by_their_own_answers() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, _echo) = plane(ClientLimits::default()).await;
        // Every PING and SETTINGS frame owes an acknowledgement. A client that
        // never reads them stops being read once they back up: what the server
        // takes in is bounded by the socket buffers, not by the flood.
        for (kind, frame) in [
            ("PING", frame(0x6, 0, 0, &[7; 8])),
            ("SETTINGS", frame(SETTINGS, 0, 0, &[0, 0x3, 0, 0, 0, 100])),
        ] {
            let mut attacker = TcpStream::connect(addr).await.unwrap();
            attacker.write_all(&preface()).await.unwrap();
            let written = flood(&mut attacker, &frame, Duration::from_secs(3)).await;
            println!("{kind} flood: the server took {written} bytes");
            assert!(
                written < 64 << 20,
                "{kind} flood: the server took {written} bytes without its answers being read"
            );
            others_are_served(addr).await;
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn streams_past_the_concurrency_limit_are_refused() {
    tokio::time::timeout(LIMIT, async {
        // A backend that takes requests and never answers keeps streams open.
        let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent_addr = silent.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = silent.accept().await {
                held.push(stream);
            }
        });
        let config =
            ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0))).with_workers(NonZeroUsize::MIN);
        let (_server, addr) = proxy_with(config, silent_addr, &["echo.example"]).await;
        let mut attacker = TcpStream::connect(addr).await.unwrap();
        let mut opened = preface();
        for n in 0..300u32 {
            opened.extend(frame(
                HEADERS,
                END_STREAM | END_HEADERS,
                2 * n + 1,
                &get_block(),
            ));
        }
        attacker.write_all(&opened).await.unwrap();
        let seen = read_frames(&mut attacker, Duration::from_secs(3)).await;
        let refused: Vec<u32> = seen
            .resets
            .iter()
            .filter(|(_, code)| *code == REFUSED_STREAM)
            .map(|(id, _)| *id)
            .collect();
        // 256 streams may be open at once; the 44 past them are refused, so a
        // client knows they were not processed and may retry them.
        assert_eq!(refused.len(), 44, "{seen:?}");
        assert!(refused.iter().all(|id| *id > 2 * 255 + 1), "{refused:?}");
        assert_eq!(seen.goaway, None);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn connections_past_the_worker_limit_are_closed_at_once() {
    tokio::time::timeout(LIMIT, async {
        let limits = ClientLimits {
            max_connections_per_worker: 2,
            ..ClientLimits::default()
        };
        let (server, addr, _echo) = plane(limits).await;
        // Two connections in the middle of a head hold the worker's limit (ones
        // that sent nothing wait in the kernel: the listener defers accepting).
        let mut first = TcpStream::connect(addr).await.unwrap();
        let mut second = TcpStream::connect(addr).await.unwrap();
        first.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        second.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut third = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 64];
        let _ = third
            .write_all(b"GET / HTTP/1.1\r\nhost: echo.example\r\n\r\n")
            .await;
        let read = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf))
            .await
            .expect("closed at once, not left waiting");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        assert_eq!(refused(&server, "connection_limit").await, 1);
        // Once one closes, the next client is served.
        drop(first);
        tokio::time::sleep(Duration::from_millis(200)).await;
        others_are_served(addr).await;
        drop(second);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_stalled_body_gets_408_and_lets_the_backend_connection_go() {
    tokio::time::timeout(LIMIT, async {
        // A backend that reads what comes and reports when the proxy hangs up.
        let backend = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let backend_addr = backend.local_addr().unwrap();
        let (hung_up, mut hang_ups) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = backend.accept().await {
                let hung_up = hung_up.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                    let _ = hung_up.send(());
                });
            }
        });
        let limits = ClientLimits {
            body_read_timeout: Duration::from_secs(1),
            ..ClientLimits::default()
        };
        let config = ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
            .with_workers(NonZeroUsize::MIN)
            .with_client_limits(limits);
        let (server, addr) = proxy_with(config, backend_addr, &["echo.example"]).await;

        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(
            b"POST /upload HTTP/1.1\r\nhost: echo.example\r\ncontent-length: 10\r\n\r\nhalf-",
        )
        .await
        .unwrap();
        let started = tokio::time::Instant::now();
        let mut answer = vec![0u8; 256];
        let n = slow.read(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer[..n]);
        assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        tokio::time::timeout(Duration::from_secs(5), hang_ups.recv())
            .await
            .expect("the backend connection was let go")
            .unwrap();
        assert_eq!(refused(&server, "body_timeout").await, 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_idle_websocket_is_closed_and_a_busy_one_is_not() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("ws").with_protocol(EchoProtocol::Http1))
            .await
            .unwrap();
        let limits = ClientLimits {
            upgraded_idle_timeout: Duration::from_secs(1),
            ..ClientLimits::default()
        };
        let config = ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
            .with_workers(NonZeroUsize::MIN)
            .with_client_limits(limits);
        let (server, addr) = proxy_with(config, echo.addr(), &["ws.example"]).await;
        let open = || async {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            let head = websocket_upgrade(&mut stream, "ws.example", "/ws").await;
            assert!(head.starts_with("http/1.1 101"), "{head}");
            stream
        };
        let mut idle = open().await;
        let mut busy = open().await;
        let started = tokio::time::Instant::now();
        // The busy one echoes every 300 ms for 3 s (three idle periods).
        while started.elapsed() < Duration::from_secs(3) {
            let reply = websocket_echo(&mut busy, "ping").await;
            assert_eq!(reply, [0x81, 4, b'p', b'i', b'n', b'g']);
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        // The idle one was closed by then: its read ends at once.
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(1), idle.read(&mut buf))
            .await
            .expect("the idle WebSocket is closed");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        assert_eq!(refused(&server, "upgraded_idle").await, 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn refused_heads_are_counted_by_reason() {
    tokio::time::timeout(LIMIT, async {
        let (server, addr, _echo) = plane(ClientLimits::default()).await;
        for (request, status) in [
            (&b"GET / HTTP/1.1\r\nhost echo.example\r\n\r\n"[..], "400"),
            (b"GET / HTTP/2.0\r\nhost: echo.example\r\n\r\n", "505"),
            (
                b"POST / HTTP/1.1\r\nhost: echo.example\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
                "501",
            ),
            (b"GET / HTTP/1.1\r\nhost: a@b\r\nconnection: close\r\n\r\n", "400"),
        ] {
            let mut client = TcpStream::connect(addr).await.unwrap();
            client.write_all(request).await.unwrap();
            let mut answer = Vec::new();
            let _ = client.read_to_end(&mut answer).await;
            let answer = String::from_utf8_lossy(&answer);
            assert!(answer.starts_with(&format!("HTTP/1.1 {status} ")), "{answer}");
        }
        assert_eq!(refused(&server, "malformed").await, 2);
        assert_eq!(refused(&server, "unsupported").await, 2);
        others_are_served(addr).await;
    })
    .await
    .unwrap();
}

/// Reads one HTTP/1.1 response off `client` (its head and `content-length` body).
async fn read_response(client: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .and_then(|value| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if answer.len() >= end + 4 + length {
                return text;
            }
        }
        let n = client.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before a whole response: {text:?}");
        answer.extend_from_slice(&chunk[..n]);
    }
}

/// A request head for `echo.example` with `fields` fields in all, the extra ones
/// carrying `value_len` bytes each.
fn head_with(fields: usize, value_len: usize) -> Vec<u8> {
    let mut head = b"GET /big HTTP/1.1\r\nhost: echo.example\r\n".to_vec();
    for n in 1..fields {
        head.extend_from_slice(format!("x-{n}: ").as_bytes());
        head.resize(head.len() + value_len, b'v');
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// An HPACK integer with an `prefix`-bit prefix whose other bits are `flags`.
fn hpack_integer(flags: u8, prefix: u32, value: usize) -> Vec<u8> {
    let max = (1usize << prefix) - 1;
    if value < max {
        return vec![flags | u8::try_from(value).unwrap()];
    }
    let mut out = vec![flags | u8::try_from(max).unwrap()];
    let mut rest = value - max;
    while rest >= 128 {
        out.push(u8::try_from(rest % 128).unwrap() | 0x80);
        rest /= 128;
    }
    out.push(u8::try_from(rest).unwrap());
    out
}

#[tokio::test]
async fn request_heads_past_the_configured_limits_are_refused() {
    tokio::time::timeout(LIMIT, async {
        let limits = ClientLimits {
            request_head: HeadLimits::new(2048, 8).unwrap(),
            ..ClientLimits::default()
        };
        let (server, addr, echo) = plane(limits).await;
        let mut long_line = b"GET /".to_vec();
        long_line.resize(3000, b'a');
        for (request, status) in [
            (head_with(9, 4), "431"),
            (head_with(2, 3000), "431"),
            (long_line, "414"),
            (head_with(8, 200), "200"),
        ] {
            let mut client = TcpStream::connect(addr).await.unwrap();
            client.write_all(&request).await.unwrap();
            let answer = read_response(&mut client).await;
            assert!(
                answer.starts_with(&format!("HTTP/1.1 {status} ")),
                "{answer}"
            );
        }
        // Only the head within the limits reached the backend.
        assert_eq!(echo.requests().len(), 1);
        assert_eq!(refused(&server, "too_large").await, 3);
        // On HTTP/2 the byte limit is the header list size: a larger list is
        // answered 431 on its stream, and the connection goes on.
        let mut client = TcpStream::connect(addr).await.unwrap();
        let mut big_block = get_block();
        big_block.extend(hpack_integer(0, 4, 0));
        big_block.extend(hpack_integer(0, 7, 5));
        big_block.extend_from_slice(b"x-big");
        big_block.extend(hpack_integer(0, 7, 3000));
        big_block.resize(big_block.len() + 3000, b'v');
        let mut frames = preface();
        frames.extend(frame(HEADERS, END_STREAM | END_HEADERS, 1, &big_block));
        frames.extend(frame(HEADERS, END_STREAM | END_HEADERS, 3, &get_block()));
        client.write_all(&frames).await.unwrap();
        let seen = read_frames(&mut client, Duration::from_secs(2)).await;
        assert_eq!(seen.answered, [1, 3], "{seen:?}");
        // `:status: 431`: a literal with the static table's `:status` name (index
        // 8) and the Huffman code of "431".
        assert_eq!(seen.blocks[0], [0x48, 0x83, 0x69, 0x90, 0xff], "{seen:?}");
        assert_eq!(echo.requests().len(), 2);
        others_are_served(addr).await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn idle_connections_get_the_keepalive_timeout_and_heads_the_header_timeout() {
    tokio::time::timeout(LIMIT, async {
        let limits = ClientLimits {
            keepalive_timeout: Duration::from_secs(1),
            header_read_timeout: Duration::from_secs(4),
            ..ClientLimits::default()
        };
        let (server, addr, _echo) = plane(limits).await;
        let request = &b"GET / HTTP/1.1\r\nhost: echo.example\r\n\r\n"[..];
        let served = || async {
            let mut client = TcpStream::connect(addr).await.unwrap();
            client.write_all(request).await.unwrap();
            assert!(
                read_response(&mut client)
                    .await
                    .starts_with("HTTP/1.1 200 ")
            );
            client
        };
        // Idle after a request: closed once the keep-alive timeout passed, without
        // an answer.
        let mut idle = served().await;
        let started = tokio::time::Instant::now();
        let mut rest = Vec::new();
        idle.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(4),
            "{waited:?}"
        );
        // A head begun within the keep-alive timeout has the header read timeout
        // to finish, counted from its first byte.
        let mut slow = served().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        slow.write_all(&request[..10]).await.unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        slow.write_all(&request[10..]).await.unwrap();
        assert!(read_response(&mut slow).await.starts_with("HTTP/1.1 200 "));
        // One that never finishes gets 408 at the header read timeout.
        slow.write_all(&request[..10]).await.unwrap();
        let started = tokio::time::Instant::now();
        let mut answer = Vec::new();
        slow.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
        assert!(
            started.elapsed() >= Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(refused(&server, "header_timeout").await, 1);
        // An HTTP/2 connection with no stream open is sent GOAWAY (no error) at the
        // keep-alive timeout.
        let mut h2 = TcpStream::connect(addr).await.unwrap();
        let mut frames = preface();
        frames.extend(frame(HEADERS, END_STREAM | END_HEADERS, 1, &get_block()));
        h2.write_all(&frames).await.unwrap();
        let started = tokio::time::Instant::now();
        let seen = read_frames(&mut h2, Duration::from_secs(5)).await;
        assert_eq!(seen.answered, [1], "{seen:?}");
        assert_eq!(seen.goaway, Some(0), "{seen:?}");
        assert!(
            started.elapsed() >= Duration::from_millis(900),
            "{:?}",
            started.elapsed()
        );
        others_are_served(addr).await;
    })
    .await
    .unwrap();
}
