//! The HTTP/1.1 upstream client against a scripted backend on loopback: keep-alive
//! reuse, every response framing (length, chunked with trailers, until close, none
//! for HEAD), interim answers, a pooled connection the backend closed, a truncated
//! body, a malformed answer, streamed uploads (sized and chunked) and an early
//! answer to an upload. The backend records what it received and how many
//! connections it accepted, so the tests see what went over the wire.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use support::{proxy_to, send, try_send};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(30);

/// What the scripted backend does with one request.
enum Act {
    /// Writes these bytes and keeps the connection.
    Answer(&'static [u8]),
    /// Writes these bytes and closes the connection.
    AnswerAndClose(&'static [u8]),
    /// Answers and closes as soon as the head is in, without reading the body.
    AnswerBeforeBody(&'static [u8]),
}

/// One request the backend read: its connection's number, head and body.
#[derive(Debug, Clone)]
struct Seen {
    connection: usize,
    head: String,
    body: Vec<u8>,
}

#[derive(Default)]
struct Record {
    connections: usize,
    requests: Vec<Seen>,
}

/// A backend that answers the n-th request (counted over all connections) with
/// `script(n)`.
async fn scripted_backend(script: fn(usize) -> Act) -> (SocketAddr, Arc<Mutex<Record>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let record = Arc::new(Mutex::new(Record::default()));
    let shared = Arc::clone(&record);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let connection = {
                let mut record = shared.lock().unwrap();
                record.connections += 1;
                record.connections
            };
            tokio::spawn(serve_scripted(
                stream,
                connection,
                Arc::clone(&shared),
                script,
            ));
        }
    });
    (addr, record)
}

async fn serve_scripted(
    mut stream: TcpStream,
    connection: usize,
    record: Arc<Mutex<Record>>,
    script: fn(usize) -> Act,
) {
    let mut buf = Vec::new();
    loop {
        let Some(head_end) = read_until(&mut stream, &mut buf, b"\r\n\r\n").await else {
            return;
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end + 4);
        let index = record.lock().unwrap().requests.len();
        let act = script(index);
        let body = if let Act::AnswerBeforeBody(_) = act {
            Vec::new()
        } else {
            read_body(&mut stream, &mut buf, &head.to_ascii_lowercase()).await
        };
        record.lock().unwrap().requests.push(Seen {
            connection,
            head,
            body,
        });
        match act {
            Act::Answer(bytes) => {
                if stream.write_all(bytes).await.is_err() {
                    return;
                }
            }
            Act::AnswerAndClose(bytes) | Act::AnswerBeforeBody(bytes) => {
                let _ = stream.write_all(bytes).await;
                return;
            }
        }
    }
}

/// Reads until `marker` is in `buf`; returns where it starts, `None` on close.
async fn read_until(stream: &mut TcpStream, buf: &mut Vec<u8>, marker: &[u8]) -> Option<usize> {
    loop {
        if let Some(at) = buf.windows(marker.len()).position(|w| w == marker) {
            return Some(at);
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads the request body the head announces (Content-Length or chunked).
async fn read_body(stream: &mut TcpStream, buf: &mut Vec<u8>, head: &str) -> Vec<u8> {
    if head.contains("transfer-encoding: chunked") {
        let mut body = Vec::new();
        loop {
            let line_end = read_until(stream, buf, b"\r\n").await.unwrap();
            let line = String::from_utf8_lossy(&buf[..line_end]).into_owned();
            let size = usize::from_str_radix(line.trim(), 16).unwrap();
            buf.drain(..line_end + 2);
            if size == 0 {
                let end = read_until(stream, buf, b"\r\n").await.unwrap();
                buf.drain(..end + 2);
                return body;
            }
            while buf.len() < size + 2 {
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed inside a chunk");
                buf.extend_from_slice(&chunk[..n]);
            }
            body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
        }
    }
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .map_or(0, |value| value.trim().parse::<usize>().unwrap());
    while buf.len() < length {
        let mut chunk = [0u8; 65536];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed inside a body");
        buf.extend_from_slice(&chunk[..n]);
    }
    buf.drain(..length).collect()
}

fn request(method: Method, path: &str, body: &'static [u8]) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", "a.example")
        .body(Full::new(Bytes::from_static(body)))
        .unwrap()
}

const OK_HELLO: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";

#[tokio::test]
async fn keep_alive_reuses_one_backend_connection_for_every_framing() {
    tokio::time::timeout(LIMIT, async {
        let (backend, record) = scripted_backend(|n| match n {
            0 => Act::Answer(OK_HELLO),
            1 => Act::Answer(
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\nx-sum: 7\r\n\r\n",
            ),
            2 => Act::Answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok"),
            3 => Act::Answer(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"),
            4 => Act::Answer(b"HTTP/1.1 204 No Content\r\n\r\n"),
            _ => Act::Answer(OK_HELLO),
        })
        .await;
        let (server, addr) = proxy_to(backend, &[]).await;
        let first = send(addr, request(Method::GET, "/one?x=1", b"")).await;
        assert_eq!((first.status, &first.body[..]), (StatusCode::OK, &b"hello"[..]));
        let chunked = send(addr, request(Method::GET, "/two", b"")).await;
        assert_eq!(&chunked.body[..], b"abcdefg");
        let created = send(addr, request(Method::POST, "/three", b"{}")).await;
        assert_eq!((created.status, &created.body[..]), (StatusCode::CREATED, &b"ok"[..]));
        let head = send(addr, request(Method::HEAD, "/four", b"")).await;
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(head.headers["content-length"], "5");
        let empty = send(addr, request(Method::GET, "/five", b"")).await;
        assert_eq!(empty.status, StatusCode::NO_CONTENT);
        let last = send(addr, request(Method::GET, "/six", b"")).await;
        assert_eq!(&last.body[..], b"hello");

        let record = record.lock().unwrap();
        assert_eq!(record.connections, 1, "{:?}", record.requests);
        let lines: Vec<&str> = record
            .requests
            .iter()
            .map(|seen| seen.head.lines().next().unwrap())
            .collect();
        assert_eq!(
            lines,
            [
                "GET /one?x=1 HTTP/1.1",
                "GET /two HTTP/1.1",
                "POST /three HTTP/1.1",
                "HEAD /four HTTP/1.1",
                "GET /five HTTP/1.1",
                "GET /six HTTP/1.1"
            ]
        );
        assert_eq!(record.requests[2].body, b"{}");
        assert!(record.requests[2].head.contains("content-length: 2"));
        assert!(!record.requests[0].head.contains("content-length"));
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_body_until_close_ends_with_the_connection_and_is_not_reused() {
    tokio::time::timeout(LIMIT, async {
        let (backend, record) = scripted_backend(|n| match n {
            0 => Act::AnswerAndClose(b"HTTP/1.1 200 OK\r\n\r\nuntil close"),
            _ => Act::Answer(OK_HELLO),
        })
        .await;
        let (server, addr) = proxy_to(backend, &[]).await;
        let first = send(addr, request(Method::GET, "/", b"")).await;
        assert_eq!(&first.body[..], b"until close");
        let second = send(addr, request(Method::GET, "/", b"")).await;
        assert_eq!(&second.body[..], b"hello");
        assert_eq!(record.lock().unwrap().connections, 2);
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_pooled_connection_the_backend_closed_is_replaced() {
    tokio::time::timeout(LIMIT, async {
        // Keep-alive answers, but the backend closes each connection right after.
        let (backend, record) = scripted_backend(|_| Act::AnswerAndClose(OK_HELLO)).await;
        let (server, addr) = proxy_to(backend, &[]).await;
        for _ in 0..3 {
            let reply = send(addr, request(Method::GET, "/", b"")).await;
            assert_eq!(
                (reply.status, &reply.body[..]),
                (StatusCode::OK, &b"hello"[..])
            );
            // Let the close reach the proxy's idle connection, or not: both work.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let reply = send(addr, request(Method::GET, "/", b"")).await;
        assert_eq!(reply.status, StatusCode::OK);
        let record = record.lock().unwrap();
        let connections: Vec<usize> = record.requests.iter().map(|seen| seen.connection).collect();
        assert_eq!(
            connections,
            [1, 2, 3, 4],
            "each request on a new connection"
        );
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn broken_answers_fail_the_request_but_not_the_next_one() {
    tokio::time::timeout(LIMIT, async {
        let (backend, record) = scripted_backend(|n| match n {
            0 => Act::AnswerAndClose(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf"),
            1 => Act::AnswerAndClose(b"SMTP ready\r\n\r\n"),
            2 => Act::AnswerAndClose(b"HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\n\r\n"),
            _ => Act::Answer(OK_HELLO),
        })
        .await;
        let (server, addr) = proxy_to(backend, &[]).await;
        // The head went out before the body broke: the client sees a cut body.
        let truncated = try_send(addr, request(Method::GET, "/", b"")).await;
        assert!(truncated.is_err(), "{truncated:?}");
        let garbage = send(addr, request(Method::GET, "/", b"")).await;
        assert_eq!(garbage.status, StatusCode::BAD_GATEWAY);
        let conflicting = send(addr, request(Method::GET, "/", b"")).await;
        assert_eq!(conflicting.status, StatusCode::BAD_GATEWAY);
        let fine = send(addr, request(Method::GET, "/", b"")).await;
        assert_eq!(&fine.body[..], b"hello");
        assert_eq!(record.lock().unwrap().connections, 4);
        server.shutdown();
    })
    .await
    .unwrap();
}

/// Sends raw bytes on a new connection and reads until the proxy closes it.
async fn raw_exchange(addr: SocketAddr, head: &[u8], body: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn uploads_stream_sized_or_chunked() {
    tokio::time::timeout(LIMIT, async {
        let (backend, record) = scripted_backend(|_| Act::Answer(OK_HELLO)).await;
        let (server, addr) = proxy_to(backend, &[]).await;
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let head = format!(
            "PUT /sized HTTP/1.1\r\nhost: a.example\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            big.len()
        );
        let answer = raw_exchange(addr, head.as_bytes(), &big).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let chunked = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let answer = raw_exchange(
            addr,
            b"POST /chunked HTTP/1.1\r\nhost: a.example\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
            chunked,
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

        let record = record.lock().unwrap();
        assert_eq!(record.requests.len(), 2);
        assert_eq!(record.requests[0].body, big);
        assert!(record.requests[0].head.contains(&format!("content-length: {}", big.len())));
        assert_eq!(record.requests[1].body, b"hello world");
        assert!(record.requests[1].head.contains("transfer-encoding: chunked"));
        assert_eq!(record.connections, 1, "both uploads ended cleanly, so one connection");
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_early_answer_to_an_upload_reaches_the_client() {
    tokio::time::timeout(LIMIT, async {
        let (backend, record) = scripted_backend(|n| match n {
            0 => Act::AnswerBeforeBody(
                b"HTTP/1.1 413 Content Too Large\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbig!",
            ),
            _ => Act::Answer(OK_HELLO),
        })
        .await;
        let (server, addr) = proxy_to(backend, &[]).await;
        let body = vec![b'x'; 64 * 1024];
        let head = format!(
            "POST /upload HTTP/1.1\r\nhost: a.example\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let answer = raw_exchange(addr, head.as_bytes(), &body).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(answer.ends_with("big!"), "{answer}");
        let next = send(addr, request(Method::GET, "/", b"")).await;
        assert_eq!(&next.body[..], b"hello");
        assert_eq!(record.lock().unwrap().connections, 2);
        server.shutdown();
    })
    .await
    .unwrap();
}
