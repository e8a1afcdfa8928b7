//! Encoding and decoding the message every tunnel request starts with: a
//! `ConnectRequest` with a 42-byte URL and 12 metadata entries (method and host,
//! then 10 headers a browser request through Cloudflare typically carries), every
//! text decoded into an owned `String`.
//!
//! `cargo bench -p culvert-tunnel-proto --bench connect_request`
#![allow(missing_docs, reason = "criterion's generated harness functions")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use culvert_tunnel_proto::{ConnectRequest, ConnectionType, Decoded, Metadata};

fn request() -> ConnectRequest {
    let mut metadata = vec![
        Metadata::new("HttpMethod", "GET"),
        Metadata::new("HttpHost", "app.example.com"),
    ];
    for (name, value) in [
        (
            "User-Agent",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
        ),
        (
            "Accept",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        ),
        ("Accept-Encoding", "gzip, deflate, br"),
        ("Accept-Language", "en-US,en;q=0.9"),
        ("Cf-Connecting-Ip", "203.0.113.7"),
        ("Cf-Ray", "8a1b2c3d4e5f6a7b-AMS"),
        ("Cf-Ipcountry", "NL"),
        ("X-Forwarded-Proto", "https"),
        ("Cf-Visitor", "{\"scheme\":\"https\"}"),
        ("Cookie", "session=0123456789abcdef0123456789abcdef"),
    ] {
        metadata.push(Metadata::new(format!("HttpHeader:{name}"), value));
    }
    let request = ConnectRequest {
        dest: "https://app.example.com/api/v1/users?id=42".to_owned(),
        kind: ConnectionType::Http,
        metadata,
    };
    assert_eq!(request.dest.len(), 42);
    request
}

fn bench(c: &mut Criterion) {
    let request = request();
    let wire = request.encode();
    match ConnectRequest::decode(&wire) {
        Ok(Decoded::Complete { value, consumed }) => {
            assert_eq!((value, consumed), (request.clone(), wire.len()));
        }
        other => panic!("the bench request does not decode: {other:?}"),
    }
    let mut group = c.benchmark_group("connect_request");
    group.bench_function("decode", |b| {
        b.iter(|| ConnectRequest::decode(black_box(&wire)))
    });
    group.bench_function("encode", |b| b.iter(|| black_box(&request).encode()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
