use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};

use super::http1::Connection;
use super::{PoolKey, UpstreamStream, Upstreams};

/// Opens a connection to a fresh listener; returns its clear-text pool key, our
/// side and the accepted side.
async fn connection() -> (PoolKey, Connection, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint: SocketAddr = listener.local_addr().unwrap();
    let ours = TcpStream::connect(endpoint).await.unwrap();
    let (theirs, _) = listener.accept().await.unwrap();
    let key = (endpoint, 0);
    (key, Connection::new(UpstreamStream::Tcp(ours)), theirs)
}

#[tokio::test]
async fn the_sweep_drops_idle_connections_the_backend_closed_and_empty_pools() {
    let upstreams = Upstreams::default();
    let (closed_at, closed, backend_side) = connection().await;
    let (open_at, open, _kept) = connection().await;
    upstreams.give_back(closed_at, closed);
    upstreams.give_back(open_at, open);
    drop(backend_side);
    // Let the FIN arrive and the runtime see the socket become readable.
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        upstreams.sweep_idle();
        if !upstreams.http1.borrow().contains_key(&closed_at) {
            break;
        }
    }
    let pools = upstreams.http1.borrow();
    assert!(!pools.contains_key(&closed_at), "closed connection kept");
    assert_eq!(
        pools.get(&open_at).map(Vec::len),
        Some(1),
        "open connection dropped"
    );
}
