use super::exchange::splitmix64;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[test]
fn splitmix_matches_reference() {
    // First output of splitmix64 seeded with 0 (state advanced once).
    assert_eq!(splitmix64(0x9E37_79B9_7F4A_7C15), 0xE220_A839_7B1D_CDAF);
}

#[tokio::test]
async fn accepted_sockets_inherit_nodelay_from_the_listener() {
    let listener = super::listen::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    client.write_all(b"G").await.unwrap();
    let (accepted, _) = listener.accept().await.unwrap();
    assert!(accepted.nodelay().unwrap());
}

/// A client that has connected but sent nothing is held by the kernel; its first
/// bytes hand it over.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn connections_are_accepted_once_their_first_bytes_are_in() {
    let listener = super::listen::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    assert!(super::listen::defer_accept::get(&listener).unwrap() > 0);
    let addr = listener.local_addr().unwrap();
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let early = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(early.is_err(), "accepted before the client sent anything");
    client.write_all(b"GET").await.unwrap();
    let (mut accepted, _) = tokio::time::timeout(Duration::from_secs(5), listener.accept())
        .await
        .expect("accepted once bytes arrived")
        .unwrap();
    let mut first = [0; 3];
    accepted.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"GET");
}

#[test]
fn a_grpc_status_other_than_ok_makes_a_request_failed() {
    use super::exchange::record::Record;
    use crate::metrics::WorkerStats;
    use http::{Method, Version};
    let stats = WorkerStats::new();
    let client = std::net::IpAddr::from([127, 0, 0, 1]);
    let mut record = Record::start(&stats, Method::POST, None, Version::HTTP_2, client);
    record.grpc = true;
    assert!(!record.failed(), "no status yet");
    record.grpc_status = Some(0);
    assert!(!record.failed());
    let line: serde_json::Value = serde_json::from_str(&record.line(0, 0, true)).unwrap();
    assert_eq!(line["grpcStatus"], 0);
    record.grpc_status = Some(14);
    assert!(record.failed(), "logged whatever the sampling");
    let plain = Record::start(&stats, Method::GET, None, Version::HTTP_11, client);
    let line: serde_json::Value = serde_json::from_str(&plain.line(0, 0, true)).unwrap();
    assert!(line["grpcStatus"].is_null());
}
