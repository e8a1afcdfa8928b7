//! The sizes the design depends on, held to stated bounds: an idle kept-alive
//! connection costs its connection future and nothing more (no buffer, no request
//! state), and a request's future is boxed once and copied into that box, so both
//! must stay small. A change that grows either past its bound fails here and has
//! to say why in the bound it raises.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;

use super::conn::Conn;
use super::{serve, serve_one};
use crate::pipeline::ConnectionInfo;
use crate::pipeline::fields::Forwarding;
use crate::worker::exchange::Worker;
use crate::worker::io::Io;
use crate::{AccessLog, ClientLimits, SnapshotCell};

/// What one connection's future may weigh (952 bytes when this bound was set, in
/// the test build; the test prints the current figure).
const CONNECTION_FUTURE_BOUND: usize = 1152;
/// What one request's future may weigh (2,656 bytes when this bound was set).
const REQUEST_FUTURE_BOUND: usize = 3072;

fn worker() -> Rc<Worker> {
    Rc::new(Worker::new(
        0,
        Arc::new(SnapshotCell::new()),
        (Forwarding::default(), ClientLimits::default()),
        Arc::new(AccessLog::off()),
        Some(1),
    ))
}

#[test]
fn connection_and_request_futures_stay_within_their_bounds() {
    let worker = worker();
    let addr = SocketAddr::from(([127, 0, 0, 1], 8080));
    let info = ConnectionInfo::new(addr, addr, addr);
    let mut drain = worker.drain().watch();
    let io: Box<dyn Io> = Box::new(tokio::io::empty());
    let connection = serve(&worker, io, BytesMut::new(), &info, &mut drain);
    let connection_size = size_of_val(&connection);
    drop(connection);

    let mut head = BytesMut::from(&b"GET / HTTP/1.1\r\nhost: a.example\r\n\r\n"[..]);
    let head = culvert_wire::parse_request_head(&mut head, culvert_wire::HeadLimits::DEFAULT)
        .expect("parses")
        .expect("whole");
    let io: Box<dyn Io> = Box::new(tokio::io::empty());
    let conn = Rc::new(std::cell::RefCell::new(Conn::new(
        io,
        BytesMut::new(),
        culvert_wire::HeadLimits::DEFAULT,
    )));
    let request = serve_one(&worker, &conn, head, &info);
    let request_size = size_of_val(&request);
    drop(request);

    println!("connection future: {connection_size} bytes; request future: {request_size} bytes");
    assert!(
        connection_size <= CONNECTION_FUTURE_BOUND,
        "an idle connection's future grew to {connection_size} bytes (bound {CONNECTION_FUTURE_BOUND})"
    );
    assert!(
        request_size <= REQUEST_FUTURE_BOUND,
        "a request's future grew to {request_size} bytes (bound {REQUEST_FUTURE_BOUND})"
    );
}
