//! What the controller's integration tests share: the controller's settings and
//! a poll until a condition holds.

#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use culvert_controller::render::{Image, PodPeer, PullPolicy};
use culvert_controller::run::{CloudflareSettings, Settings};

/// A controller in `culvert-system` whose Cloudflare API is `api_url` (the real
/// one when `None`), resyncing every 300 ms.
pub(crate) fn settings(api_url: Option<String>) -> Settings {
    let mut cloudflare = CloudflareSettings::default();
    if let Some(api_url) = api_url {
        cloudflare.api_url = api_url;
    }
    Settings {
        namespace: "culvert-system".to_owned(),
        image: Image {
            name: "ghcr.io/culvert-proxy/culvert:test".to_owned(),
            pull_policy: PullPolicy::IfNotPresent,
        },
        controller_pods: PodPeer {
            namespace: "culvert-system".to_owned(),
            labels: BTreeMap::from([("app.kubernetes.io/name".to_owned(), "culvert".to_owned())]),
        },
        tunnel_edges: vec!["127.0.0.1:7844".to_owned()],
        resync: Duration::from_millis(300),
        cloudflare,
    }
}

/// Polls `check` every 50 ms until it holds or 20 s pass.
pub(crate) async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < Duration::from_secs(20), "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
