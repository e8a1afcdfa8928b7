//! The HTTP/1.1 server side of the proxy, driven by a raw TCP client on loopback:
//! keep-alive and pipelined requests answered in order, request bodies by length
//! and chunked (with trailers), `Expect: 100-continue`, HTTP/1.0 clients, `HEAD`,
//! `Connection: close`, a body the proxy answered without reading, lingering close,
//! trailers only for clients that take them, a client going away mid-request, and
//! the heads that are refused (malformed 400, ambiguous framing 400, too large 431),
//! a head too slow to arrive (408). The echo
//! backend records what arrived, so the tests see what went through.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use culvert_bench::{EchoBackend, EchoConfig};
use culvert_proxy::{ClientLimits, ServeConfig, Server};
use support::{proxy_to, proxy_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

const LIMIT: Duration = Duration::from_secs(30);

/// One response as read off the wire.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Lowercase names; values of repeated names joined with ", ".
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// A raw client connection that reads responses one after another.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Self {
        Self {
            stream: TcpStream::connect(addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Reads more bytes; `false` when the server closed.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await.unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    async fn until(&mut self, marker: &[u8]) -> usize {
        loop {
            if let Some(at) = self.buf.windows(marker.len()).position(|w| w == marker) {
                return at;
            }
            assert!(self.fill().await, "closed before {marker:?}");
        }
    }

    /// Reads one response to a request made with `method`.
    async fn answer(&mut self, method: &str) -> Answer {
        let end = self.until(b"\r\n\r\n").await;
        let head = String::from_utf8(self.buf.drain(..end + 4).collect()).unwrap();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
        let status = status_line[9..12].parse().unwrap();
        let mut headers: HashMap<String, String> = HashMap::new();
        for line in lines.filter(|line| !line.is_empty()) {
            let (name, value) = line.split_once(':').unwrap();
            let value = value.trim().to_owned();
            headers
                .entry(name.to_ascii_lowercase())
                .and_modify(|seen| {
                    seen.push_str(", ");
                    seen.push_str(&value);
                })
                .or_insert(value);
        }
        let body = if method == "HEAD" || status == 204 || status == 304 || status < 200 {
            Vec::new()
        } else if headers.get("transfer-encoding").map(String::as_str) == Some("chunked") {
            let (body, trailers) = self.chunked().await;
            for line in trailers.split("\r\n").filter(|line| !line.is_empty()) {
                let (name, value) = line.split_once(':').unwrap();
                headers.insert(
                    format!("trailer:{}", name.to_ascii_lowercase()),
                    value.trim().to_owned(),
                );
            }
            body
        } else if let Some(length) = headers.get("content-length") {
            let length: usize = length.parse().unwrap();
            while self.buf.len() < length {
                assert!(self.fill().await, "closed inside a body");
            }
            self.buf.drain(..length).collect()
        } else {
            while self.fill().await {}
            std::mem::take(&mut self.buf)
        };
        Answer {
            status,
            headers,
            body,
        }
    }

    /// A chunked body and its trailer section (as text).
    async fn chunked(&mut self) -> (Vec<u8>, String) {
        let mut body = Vec::new();
        loop {
            let end = self.until(b"\r\n").await;
            let line = String::from_utf8(self.buf.drain(..end + 2).collect()).unwrap();
            let size = usize::from_str_radix(line.trim(), 16).unwrap();
            if size == 0 {
                // Either an empty line at once, or trailer lines and then one.
                let mut trailers = String::new();
                loop {
                    let end = self.until(b"\r\n").await;
                    let line = String::from_utf8(self.buf.drain(..end + 2).collect()).unwrap();
                    if line == "\r\n" {
                        return (body, trailers);
                    }
                    trailers.push_str(&line);
                }
            }
            while self.buf.len() < size + 2 {
                assert!(self.fill().await, "closed inside a chunk");
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
        }
    }

    /// `true` when the server closes the connection with nothing more to read.
    async fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill().await
    }
}

/// A proxy with one worker routing `echo.example` to an echo backend.
async fn proxy() -> (Server, SocketAddr, EchoBackend) {
    let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
    let (server, addr) = proxy_to(echo.addr(), &["echo.example"]).await;
    (server, addr, echo)
}

/// A backend that answers each request head with `answer` (or never, when empty)
/// and reports, for each connection, how long after its first request the proxy
/// closed it.
async fn raw_backend(answer: &'static [u8]) -> (SocketAddr, mpsc::UnboundedReceiver<Duration>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (closed, closes) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let closed = closed.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut chunk = [0u8; 4096];
                let mut started = None;
                loop {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    seen.extend_from_slice(&chunk[..n]);
                    if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        seen.clear();
                        started.get_or_insert_with(Instant::now);
                        if !answer.is_empty() && stream.write_all(answer).await.is_err() {
                            break;
                        }
                    }
                }
                if let Some(started) = started {
                    let _ = closed.send(started.elapsed());
                }
            });
        }
    });
    (addr, closes)
}

fn echoed_path(answer: &Answer) -> String {
    let echo: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    echo["path"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order_on_one_connection() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, echo) = proxy().await;
        let mut client = Client::connect(addr).await;
        // Three requests in one write: a GET, a sized POST, a chunked POST with a
        // trailer, then a fourth after the answers.
        client
            .send(
                b"GET /one HTTP/1.1\r\nhost: echo.example\r\n\r\n\
                  POST /two HTTP/1.1\r\nhost: echo.example\r\ncontent-length: 5\r\n\r\nhello\
                  POST /three HTTP/1.1\r\nhost: echo.example\r\ntransfer-encoding: chunked\r\n\r\n\
                  3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nx-trailer: t\r\n\r\n",
            )
            .await;
        for path in ["/one", "/two", "/three"] {
            let answer = client.answer("GET").await;
            assert_eq!(answer.status, 200);
            assert_eq!(echoed_path(&answer), path);
            // The backend's own fields arrive, its Date once (none added beside it).
            assert_eq!(answer.headers["content-type"], "application/json");
            assert_eq!(answer.headers["x-content-type-options"], "nosniff");
            assert_eq!(answer.headers["date"].matches("GMT").count(), 1);
            assert!(!answer.headers.contains_key("connection"));
        }
        client
            .send(b"GET /four HTTP/1.1\r\nhost: echo.example\r\n\r\n")
            .await;
        assert_eq!(echoed_path(&client.answer("GET").await), "/four");

        let seen = echo.requests();
        assert_eq!(seen.len(), 4);
        assert_eq!(&seen[1].body[..], b"hello");
        assert_eq!(&seen[2].body[..], b"abcdefg");
        // The client's framing is its own hop's: the backend got the body re-framed.
        assert!(seen[2].header("transfer-encoding").len() <= 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn expect_continue_is_answered_before_the_body_is_read() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, echo) = proxy().await;
        let mut client = Client::connect(addr).await;
        client
            .send(
                b"PUT /upload HTTP/1.1\r\nhost: echo.example\r\ncontent-length: 6\r\n\
                  expect: 100-continue\r\n\r\n",
            )
            .await;
        let interim = client.answer("PUT").await;
        assert_eq!(interim.status, 100);
        client.send(b"parcel").await;
        let answer = client.answer("PUT").await;
        assert_eq!(answer.status, 200);
        let seen = &echo.requests()[0];
        assert_eq!(&seen.body[..], b"parcel");
        // The expectation was met here; the backend is not asked again.
        assert!(
            !seen.headers.iter().any(|(name, _)| name == "expect"),
            "{:?}",
            seen.headers
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn http10_clients_get_close_unless_they_ask_for_keep_alive() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, _echo) = proxy().await;
        let mut client = Client::connect(addr).await;
        client
            .send(b"GET /kept HTTP/1.0\r\nhost: echo.example\r\nconnection: keep-alive\r\n\r\n")
            .await;
        let answer = client.answer("GET").await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.headers["connection"], "keep-alive");
        assert!(answer.headers.contains_key("content-length"));
        client
            .send(b"GET /last HTTP/1.0\r\nhost: echo.example\r\n\r\n")
            .await;
        let answer = client.answer("GET").await;
        assert_eq!(echoed_path(&answer), "/last");
        assert_eq!(answer.headers["connection"], "close");
        assert!(client.closed().await);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn connection_close_head_and_local_answers() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, echo) = proxy().await;
        let mut client = Client::connect(addr).await;
        // HEAD: the length is announced, no body follows.
        client
            .send(b"HEAD /h HTTP/1.1\r\nhost: echo.example\r\n\r\n")
            .await;
        let answer = client.answer("HEAD").await;
        assert_eq!(answer.status, 200);
        // A local 404 to a POST whose small body was never read: the body is
        // skipped and the connection serves the next request.
        client
            .send(b"POST /x HTTP/1.1\r\nhost: nowhere.example\r\ncontent-length: 3\r\n\r\nabc")
            .await;
        let answer = client.answer("POST").await;
        assert_eq!(answer.status, 404);
        assert_eq!(answer.headers["content-length"], "0");
        assert!(answer.headers.contains_key("date"));
        assert!(!answer.headers.contains_key("connection"));
        client
            .send(b"GET /bye HTTP/1.1\r\nhost: echo.example\r\nconnection: close\r\n\r\n")
            .await;
        let answer = client.answer("GET").await;
        assert_eq!(echoed_path(&answer), "/bye");
        assert_eq!(answer.headers["connection"], "close");
        assert!(client.closed().await);
        // The backend saw the HEAD and the last GET, never the 404's request.
        let methods: Vec<String> = echo
            .requests()
            .iter()
            .map(|r| r.method.to_string())
            .collect();
        assert_eq!(methods, ["HEAD", "GET"]);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_body_left_unread_closes_the_connection() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, _echo) = proxy().await;
        let mut client = Client::connect(addr).await;
        // Only part of the announced body is sent; the 404 cannot wait for the rest.
        client
            .send(b"POST /x HTTP/1.1\r\nhost: nowhere.example\r\ncontent-length: 100\r\n\r\nabc")
            .await;
        let answer = client.answer("POST").await;
        assert_eq!(answer.status, 404);
        assert_eq!(answer.headers["connection"], "close");
        assert!(client.closed().await);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn bad_heads_are_refused_and_the_connection_closes() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, echo) = proxy().await;
        let oversized = format!(
            "GET / HTTP/1.1\r\nhost: echo.example\r\nx-big: {}\r\n\r\n",
            "a".repeat(70 * 1024)
        );
        let cases: [(&[u8], u16); 5] = [
            (b"GET / HTTP/1.1\r\nhost echo.example\r\n\r\n", 400),
            (b"GET /\x01 HTTP/1.1\r\nhost: echo.example\r\n\r\n", 400),
            (
                b"POST / HTTP/1.1\r\nhost: echo.example\r\ncontent-length: 3\r\n\
                  transfer-encoding: chunked\r\n\r\n0\r\n\r\n",
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nhost: echo.example\r\ncontent-length: 3, 4\r\n\r\nabcd",
                400,
            ),
            (oversized.as_bytes(), 431),
        ];
        for (request, status) in cases {
            let mut client = Client::connect(addr).await;
            client.send(request).await;
            let answer = client.answer("GET").await;
            assert_eq!(
                answer.status,
                status,
                "{:?}",
                String::from_utf8_lossy(&request[..40])
            );
            assert_eq!(answer.headers["connection"], "close");
            assert!(client.closed().await);
        }
        assert!(echo.requests().is_empty());
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_slow_head_gets_408_and_an_idle_connection_just_closes() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
        let limits = ClientLimits {
            header_read_timeout: Duration::from_secs(1),
            keepalive_timeout: Duration::from_secs(1),
            ..ClientLimits::default()
        };
        let config = ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
            .with_workers(NonZeroUsize::MIN)
            .with_client_limits(limits);
        let (_server, addr) = proxy_with(config, echo.addr(), &["echo.example"]).await;

        // Part of a head, then nothing: 408 and a close, within a tick of the limit.
        let mut slow = Client::connect(addr).await;
        let started = Instant::now();
        slow.send(b"GET / HTTP/1.1\r\nhost: echo.exa").await;
        let answer = slow.answer("GET").await;
        assert_eq!(answer.status, 408);
        assert_eq!(answer.headers["connection"], "close");
        assert!(slow.closed().await);
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );

        // A kept-alive connection that goes quiet after its answer closes silently
        // at the keep-alive timeout.
        let mut idle = Client::connect(addr).await;
        idle.send(b"GET / HTTP/1.1\r\nhost: echo.example\r\n\r\n")
            .await;
        assert_eq!(idle.answer("GET").await.status, 200);
        assert!(idle.closed().await, "closed with nothing more written");
        assert!(
            echo.requests().len() == 1,
            "only the complete request went upstream"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_closing_connection_lingers_while_the_client_still_sends() {
    tokio::time::timeout(LIMIT, async {
        let (_server, addr, _echo) = proxy().await;
        let mut client = Client::connect(addr).await;
        // The 404 is answered before the announced megabyte is sent. Closing right
        // away would reset the connection under the client's remaining writes (and
        // could destroy the answer before the client read it); lingering reads and
        // drops them instead.
        client
            .send(
                b"POST /x HTTP/1.1\r\nhost: nowhere.example\r\ncontent-length: 1000000\r\n\r\nabc",
            )
            .await;
        let answer = client.answer("POST").await;
        assert_eq!(answer.status, 404);
        assert_eq!(answer.headers["connection"], "close");
        assert!(client.closed().await, "our side is shut down");
        let piece = vec![b'x'; 16 * 1024];
        for _ in 0..32 {
            client.stream.write_all(&piece).await.unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_client_going_away_cancels_its_request_upstream() {
    tokio::time::timeout(LIMIT, async {
        // The backend never answers; only the proxy dropping the exchange ends its
        // connection.
        let (backend, mut closes) = raw_backend(b"").await;
        let (_server, addr) = proxy_to(backend, &["echo.example"]).await;
        let mut client = Client::connect(addr).await;
        client
            .send(b"GET /slow HTTP/1.1\r\nhost: echo.example\r\n\r\n")
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(client);
        let held = tokio::time::timeout(Duration::from_secs(10), closes.recv())
            .await
            .expect("the upstream exchange was not dropped")
            .unwrap();
        assert!(held < Duration::from_secs(5), "held {held:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn trailers_reach_only_clients_that_take_them() {
    tokio::time::timeout(LIMIT, async {
        let (backend, _closes) = raw_backend(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-sum: 7\r\n\r\n",
        )
        .await;
        let (_server, addr) = proxy_to(backend, &["echo.example"]).await;
        let mut client = Client::connect(addr).await;
        client
            .send(b"GET /t HTTP/1.1\r\nhost: echo.example\r\nte: trailers\r\n\r\n")
            .await;
        let answer = client.answer("GET").await;
        assert_eq!(answer.body, b"abc");
        assert_eq!(answer.headers["trailer:x-sum"], "7");
        client
            .send(b"GET /t HTTP/1.1\r\nhost: echo.example\r\n\r\n")
            .await;
        let answer = client.answer("GET").await;
        assert_eq!(answer.body, b"abc");
        assert!(!answer.headers.contains_key("trailer:x-sum"));
    })
    .await
    .unwrap();
}
