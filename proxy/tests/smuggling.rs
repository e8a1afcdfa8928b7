//! Request smuggling and protocol abuse: every raw request of
//! `data/smuggling.json` is written to Culvert on its own connection, in front of a
//! backend that parses what reaches it with its own small HTTP/1.1 reader, and
//! each answer is held to the case's `culvert` entry: the final status the client
//! gets (or none), and how many requests the backend saw. Whatever a case expects,
//! the backend never sees more requests than the client wrote.
//!
//! The same bytes were sent to nginx and HAProxy once and their answers are kept
//! in the file as data; where Culvert answers differently, the case's `why` says
//! why. The test runs against Culvert only.
//!
//! `CULVERT_SMUGGLING_PRINT=1` prints what Culvert answered for every case, as the
//! JSON of a `culvert` entry.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use culvert_proxy::{ServeConfig, Server};
use http::StatusCode;
use serde_json::{Value, json};
use support::{free_port, put_config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long the client waits after writing before it half-closes.
const PAUSE: Duration = Duration::from_millis(300);
/// How long the client reads after that, at most.
const READ_FOR: Duration = Duration::from_secs(3);
/// The answer the backend gives unless a case says otherwise.
const DEFAULT_RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// One request as the backend parsed it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    hosts: Vec<String>,
    body_len: usize,
}

/// A case's bytes: a string (one byte per code point) or a list of parts, a part
/// being a string or `{"repeat": c, "times": n}`.
fn bytes_of(value: &Value) -> Vec<u8> {
    let text_bytes = |text: &str| -> Vec<u8> {
        text.chars()
            .map(|c| u8::try_from(u32::from(c)).expect("one byte per code point"))
            .collect()
    };
    match value {
        Value::String(text) => text_bytes(text),
        Value::Array(parts) => parts
            .iter()
            .flat_map(|part| match part {
                Value::String(text) => text_bytes(text),
                Value::Object(repeat) => {
                    let byte = text_bytes(repeat["repeat"].as_str().unwrap());
                    let times = usize::try_from(repeat["times"].as_u64().unwrap()).unwrap();
                    byte.repeat(times)
                }
                other => panic!("not a request part: {other}"),
            })
            .collect(),
        other => panic!("not a request: {other}"),
    }
}

/// A backend on its own port that parses requests (head to the blank line, then a
/// body by `Content-Length` or chunked coding), records each and answers each with
/// `response` (closing after it when it is not the default answer).
async fn recording_backend(response: Vec<u8>) -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let record = Arc::clone(&record);
            let response = response.clone();
            tokio::spawn(serve_backend_connection(stream, record, response));
        }
    });
    (addr, seen)
}

async fn serve_backend_connection(
    mut stream: TcpStream,
    record: Arc<Mutex<Vec<Seen>>>,
    response: Vec<u8>,
) {
    let mut buf = Vec::new();
    loop {
        let request = loop {
            match parse_backend_request(&buf) {
                Some(Ok((seen, used))) => {
                    buf.drain(..used);
                    break seen;
                }
                Some(Err(())) => return,
                None => {
                    let mut chunk = [0u8; 16 * 1024];
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            }
        };
        record.lock().unwrap().push(request);
        if stream.write_all(&response).await.is_err() {
            return;
        }
        if response != DEFAULT_RESPONSE {
            return;
        }
    }
}

/// One request off the front of `buf`: `None` until it is complete, `Err` when it
/// is not HTTP/1.1 as a strict reader takes it.
fn parse_backend_request(buf: &[u8]) -> Option<Result<(Seen, usize), ()>> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let Ok(head) = std::str::from_utf8(&buf[..end]) else {
        return Some(Err(()));
    };
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target)) = (request_line.next(), request_line.next()) else {
        return Some(Err(()));
    };
    let mut hosts = Vec::new();
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Some(Err(()));
        };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "host" => hosts.push(value.to_owned()),
            "content-length" => length = value.parse::<usize>().ok(),
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let mut at = end + 4;
    let body_len = if chunked {
        let mut total = 0;
        loop {
            let line_end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
            let size_text = std::str::from_utf8(&buf[at..line_end]).ok()?;
            let size_text = size_text.split(';').next().unwrap_or_default();
            let Ok(size) = usize::from_str_radix(size_text, 16) else {
                return Some(Err(()));
            };
            at = line_end + 2;
            if size == 0 {
                // No trailers are expected from the proxy here.
                if buf.len() < at + 2 {
                    return None;
                }
                at += 2;
                break total;
            }
            if buf.len() < at + size + 2 {
                return None;
            }
            at += size + 2;
            total += size;
        }
    } else {
        let length = length.unwrap_or(0);
        if buf.len() < at + length {
            return None;
        }
        at += length;
        length
    };
    let seen = Seen {
        method: method.to_owned(),
        target: target.to_owned(),
        hosts,
        body_len,
    };
    Some(Ok((seen, at)))
}

/// What the client got back.
#[derive(Debug)]
struct ClientView {
    statuses: Vec<u16>,
    bytes: Vec<u8>,
}

impl ClientView {
    /// The first status that is not `1xx`.
    fn final_status(&self) -> Option<u16> {
        self.statuses.iter().copied().find(|&status| status >= 200)
    }
}

/// Writes `request` on a new connection, pauses, half-closes and reads what comes
/// back until the proxy closes (or [`READ_FOR`] passes).
async fn exchange(addr: SocketAddr, request: &[u8]) -> ClientView {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // A peer that refuses early may reset before all of a large request is written.
    let _ = stream.write_all(request).await;
    tokio::time::sleep(PAUSE).await;
    let _ = stream.shutdown().await;
    let mut bytes = Vec::new();
    let _ = tokio::time::timeout(READ_FOR, async {
        let mut chunk = [0u8; 16 * 1024];
        while let Ok(n) = stream.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&chunk[..n]);
        }
    })
    .await;
    let statuses = status_lines(&bytes);
    ClientView { statuses, bytes }
}

/// The codes of the status lines in `bytes`: every `HTTP/1.x NNN ` at the start or
/// right after a line break (the backend's bodies here hold no such line).
fn status_lines(bytes: &[u8]) -> Vec<u16> {
    (0..bytes.len())
        .filter(|&at| at == 0 || bytes[at - 1] == b'\n')
        .filter_map(|at| {
            let line = bytes.get(at..at + 13)?;
            let prefix_ok = line.starts_with(b"HTTP/1.") && line[8] == b' ' && line[12] == b' ';
            let code = std::str::from_utf8(&line[9..12]).ok()?.parse().ok()?;
            prefix_ok.then_some(code)
        })
        .collect()
}

/// How many requests the client wrote: those the case counts, else one.
fn client_requests(case: &Value) -> usize {
    case["client_requests"]
        .as_u64()
        .map_or(1, |n| usize::try_from(n).unwrap())
}

#[tokio::test]
async fn smuggling_and_abuse_cases_get_the_answers_in_the_table() {
    let table: Value =
        serde_json::from_str(include_str!("data/smuggling.json")).expect("the table parses");
    let cases = table["cases"].as_array().unwrap();

    // One listener per case, each routing everything to the case's own backend,
    // so the cases run at once and each backend's record is its case's alone.
    // The backends hold their ports before the listeners' ports are picked, so
    // no picked port is one a backend takes afterwards.
    let mut recorders = Vec::new();
    for case in cases {
        let response = case
            .get("backend_response")
            .map_or_else(|| DEFAULT_RESPONSE.to_vec(), bytes_of);
        recorders.push(recording_backend(response).await);
    }
    let mut ports = std::collections::HashSet::new();
    let mut backends = Vec::new();
    let mut listeners = Vec::new();
    let mut routes = Vec::new();
    for (index, (backend, seen)) in recorders.into_iter().enumerate() {
        let port = std::iter::repeat_with(free_port)
            .find(|port| ports.insert(*port))
            .unwrap();
        let name = format!("case-{index}");
        listeners.push(json!({"name": name, "port": port, "protocol": "HTTP"}));
        routes.push(json!({"name": name, "listeners": [name],
            "rules": [{"backends": [{"name": "b", "endpoints": [backend.to_string()]}]}]}));
        backends.push((port, seen));
    }
    let config =
        ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0))).with_workers(NonZeroUsize::MIN);
    let server: Server = Server::start(config).unwrap();
    let reply = put_config(
        server.control_addr(),
        &json!({"version": 1, "listeners": listeners, "httpRoutes": routes}),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);

    let runs = cases.iter().zip(&backends).map(|(case, (port, _))| {
        let request = bytes_of(&case["request"]);
        let addr = SocketAddr::from(([127, 0, 0, 1], *port));
        async move { exchange(addr, &request).await }
    });
    let views = futures_util::future::join_all(runs).await;

    let print = std::env::var_os("CULVERT_SMUGGLING_PRINT").is_some();
    let mut failures = Vec::new();
    for ((case, (_, seen)), view) in cases.iter().zip(&backends).zip(&views) {
        let name = case["name"].as_str().unwrap();
        let seen = seen.lock().unwrap().clone();
        let status = view.final_status();
        if print {
            println!(
                "{name}: {}",
                json!({"status": status, "backend_requests": seen.len(),
                    "backend_saw": seen.iter().map(|s| json!({"method": s.method,
                        "target": s.target.chars().take(40).collect::<String>(),
                        "host": s.hosts, "body_length": s.body_len})).collect::<Vec<_>>(),
                    "statuses": view.statuses,
                    "head": String::from_utf8_lossy(&view.bytes[..view.bytes.len().min(160)])})
            );
        }
        if seen.len() > client_requests(case) {
            failures.push(format!(
                "{name}: the backend saw {} requests where the client sent {}: {seen:?}",
                seen.len(),
                client_requests(case)
            ));
        }
        let Some(expected) = case.get("culvert") else {
            failures.push(format!("{name}: no `culvert` entry"));
            continue;
        };
        let expected_status = expected["status"]
            .as_u64()
            .map(|s| u16::try_from(s).unwrap());
        if status != expected_status {
            failures.push(format!(
                "{name}: status {status:?}, expected {expected_status:?}; got {:?}",
                String::from_utf8_lossy(&view.bytes[..view.bytes.len().min(200)])
            ));
        }
        let expected_requests = usize::try_from(expected["backend_requests"].as_u64().unwrap());
        if Ok(seen.len()) != expected_requests {
            failures.push(format!(
                "{name}: the backend saw {} requests, expected {expected_requests:?}: {seen:?}",
                seen.len()
            ));
        }
        if let Some(host) = expected.get("backend_host").and_then(Value::as_str) {
            for request in &seen {
                if request.hosts != [host] {
                    failures.push(format!(
                        "{name}: the backend saw Host {:?}, expected [{host:?}]",
                        request.hosts
                    ));
                }
            }
        }
        if let Some(statuses) = expected.get("statuses") {
            let statuses: Vec<u16> = serde_json::from_value(statuses.clone()).unwrap();
            if view.statuses != statuses {
                failures.push(format!(
                    "{name}: statuses {:?}, expected {statuses:?}",
                    view.statuses
                ));
            }
        }
        let differs = [&case["nginx"], &case["haproxy"]]
            .iter()
            .any(|peer| peer["status"].as_u64() != expected["status"].as_u64());
        if differs
            && expected
                .get("why")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            failures.push(format!(
                "{name}: Culvert answers unlike nginx or HAProxy and the table does not say why"
            ));
        }
    }
    drop(server);
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
