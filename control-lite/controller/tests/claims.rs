//! Tunnel claims proven against the edge simulator's Cloudflare API, through the
//! whole controller (`serve::start`, the fake API server on loopback): a Gateway
//! whose token holds its tunnel is accepted and gets its plane; an older Gateway of
//! another namespace whose token names the same tunnel with another secret is
//! refused with a message that says no more than that Cloudflare did not confirm
//! it; a claim checked with a credential Cloudflare rejects (401) stays unchecked,
//! not refuted.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any error"
)]

mod support;

use support::{eventually, settings};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use culvert_cloudflare::{AccountId, ApiToken, Client};
use culvert_controller::serve;
use culvert_edge_sim::{EdgeSim, SimConfig};
use culvert_fake_apiserver::{FakeApiServer, fixtures};
use culvert_kubernetes::SourceConfig;
use culvert_tunnel_proto::TunnelToken;
use serde_json::{Value, json};
use tokio::sync::watch;

const CONTROLLER: &str = "culvert.dev/gateway-controller";
const GW: &str = "gateway.networking.k8s.io/v1";

/// Namespace `namespace` with a dedicated Gateway `name` whose connector token is
/// `token`, checked with the API token `credential` (Secret `cf`, key `token`).
fn tenant(namespace: &str, name: &str, token: &TunnelToken, credential: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "tunnel", "namespace": namespace,
                         "labels": {"culvert.dev/tunnel-token": "true"}},
            "data": {"token": STANDARD.encode(token.encode())}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "cf", "namespace": namespace},
            "data": {"token": STANDARD.encode(credential)}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
            "metadata": {"name": "own", "namespace": namespace},
            "spec": {"tunnel": {"tokenRef": {"name": "tunnel"}},
                     "cloudflareCredentialsSecretRef": {"name": "cf"}}}),
        json!({"apiVersion": GW, "kind": "Gateway",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"gatewayClassName": "culvert",
                     "infrastructure": {"parametersRef": {"group": "culvert.dev",
                         "kind": "GatewayConfig", "name": "own"}},
                     "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
    ]
}

/// Gateway `namespace/name`'s `Accepted` condition: status, reason, message.
fn accepted(
    server: &FakeApiServer,
    namespace: &str,
    name: &str,
) -> Option<(String, String, String)> {
    let gateway = server.get(GW, "Gateway", Some(namespace), name)?;
    let condition = gateway["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Accepted")?
        .clone();
    let text = |field: &str| condition[field].as_str().unwrap_or_default().to_owned();
    Some((text("status"), text("reason"), text("message")))
}

fn plane(server: &FakeApiServer, namespace: &str, name: &str) -> Option<Value> {
    server.get(
        "apps/v1",
        "Deployment",
        Some(namespace),
        &format!("culvert-{name}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_claim_cloudflare_confirms_holds_its_tunnel() {
    let sim = EdgeSim::start(SimConfig::loopback()).await.unwrap();
    let api_token = sim.api_token();
    let client = Client::builder(ApiToken::new(api_token.clone()).unwrap())
        .base_url(sim.api_base())
        .build()
        .unwrap();
    let account: AccountId = sim.account_id().parse().unwrap();
    let real = client
        .create_tunnel(&account, "team-a", None)
        .await
        .unwrap();
    let real = real.token.unwrap().parse().unwrap();
    let mut forged: TunnelToken = real.clone();
    forged.tunnel_secret = vec![7; 32];
    let other = client
        .create_tunnel(&account, "team-c", None)
        .await
        .unwrap();
    let other = other.token.unwrap().parse().unwrap();

    let server = FakeApiServer::new();
    fixtures::register_repository_crds(&server).unwrap();
    for object in fixtures::minimal_cluster(CONTROLLER, 8080, 9001) {
        server.create(object).unwrap();
    }
    server
        .create(json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "culvert-system"}}))
        .unwrap();
    // B is the older Gateway: by age alone it would hold the tunnel.
    server.set_clock(Some("2020-01-01T00:00:00Z"));
    for object in tenant("team-b", "b", &forged, &api_token) {
        server.create(object).unwrap();
    }
    server.set_clock(Some("2024-01-01T00:00:00Z"));
    for object in tenant("team-a", "a", &real, &api_token) {
        server.create(object).unwrap();
    }
    // A genuine token, checked with a credential the API answers 401.
    for object in tenant("team-c", "c", &other, "not-the-api-token") {
        server.create(object).unwrap();
    }
    server.set_clock(None);
    let serving = server.serve().await.unwrap();
    let kubeconfig =
        std::env::temp_dir().join(format!("culvert-claims-{}.yaml", std::process::id()));
    serving.write_kubeconfig(&kubeconfig).unwrap();

    let mut source = SourceConfig::new(CONTROLLER);
    source.kubeconfig = Some(kubeconfig.clone());
    source.addresses = vec!["192.0.2.1".to_owned()];
    let controller = serve::start(settings(Some(sim.api_base())), source)
        .await
        .unwrap();
    let (stop_tx, stop) = watch::channel(false);
    let running = tokio::spawn(controller.run(stop));

    eventually("A is accepted and its plane rendered", || {
        accepted(&server, "team-a", "a").is_some_and(|(status, _, _)| status == "True")
            && plane(&server, "team-a", "a").is_some()
    })
    .await;
    let a = server.get(GW, "Gateway", Some("team-a"), "a").unwrap();
    assert_eq!(
        a["status"]["addresses"][0]["value"],
        format!("{}.cfargotunnel.com", real.tunnel_id)
    );
    eventually("B is refused as unproven", || {
        accepted(&server, "team-b", "b").is_some_and(|(_, _, message)| message.contains("did not"))
    })
    .await;
    assert_eq!(
        accepted(&server, "team-b", "b").unwrap(),
        (
            "False".to_owned(),
            "InvalidParameters".to_owned(),
            "Cloudflare did not confirm that the connector token holds the tunnel it names"
                .to_owned()
        ),
        "the message says nothing of why"
    );
    assert!(plane(&server, "team-b", "b").is_none(), "B has no plane");
    // One round checks every due claim before the translation is told, so C's
    // check has happened by now: a 401 leaves it unchecked, waiting, not refuted.
    let (status, reason, message) = accepted(&server, "team-c", "c").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidParameters")
    );
    assert!(
        message.contains("not confirmed by Cloudflare yet"),
        "{message}"
    );
    assert!(!message.contains("did not confirm"), "{message}");
    assert!(plane(&server, "team-c", "c").is_none());
    // A still holds its tunnel.
    assert_eq!(
        accepted(&server, "team-a", "a").unwrap().0,
        "True",
        "the older B does not evict A"
    );

    stop_tx.send_replace(true);
    running.await.unwrap();
    let _ = std::fs::remove_file(&kubeconfig);
    sim.shutdown().await;
}
