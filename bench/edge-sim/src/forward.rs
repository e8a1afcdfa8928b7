//! What forwarding an eyeball request shares between the transports (`http.rs` for
//! QUIC connections, `edge_h2.rs` for HTTP/2 ones): the response head deadline, the
//! destination URL, and the websocket bridge after a `101`.

use std::time::Duration;

use culvert_connector::io::{InFlightGuard, TunnelStream};
use http::header::HOST;
use hyper_util::rt::TokioIo;

/// How long a connector may take to answer with a response head (Cloudflare: 100 s).
pub(crate) const RESPONSE_HEAD_TIMEOUT: Duration = Duration::from_secs(100);

/// Copies websocket frames both ways until either side ends.
pub(crate) async fn bridge(
    on_upgrade: hyper::upgrade::OnUpgrade,
    stream: TunnelStream,
    guard: InFlightGuard,
) {
    let _guard = guard;
    let Ok(upgraded) = on_upgrade.await else {
        stream.abort();
        return;
    };
    let mut client = TokioIo::new(upgraded);
    let mut stream = stream;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut stream).await;
}

/// The URL an eyeball request is forwarded to the connector as: its `Host` (or
/// `localhost`) and its path and query, over `http` (the edge terminated TLS).
pub(crate) fn destination(parts: &http::request::Parts) -> String {
    let host = parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    format!("http://{host}{path}")
}
