//! `culvert controller` end to end on loopback: the controller process, the fake
//! API server, and two real `culvert serve` processes standing in for a dedicated
//! plane's pods (the fake's EndpointSlice of the plane's config Service points at
//! their loopback addresses, as the kubelet would). The controller makes the
//! plane's token and certificate; the planes run with them; every push is HTTPS
//! with that token. A route change reaches both planes; a plane that refuses the
//! controller does not hold up the other; a plane restarted empty gets the config
//! back by replay; a pod whose certificate has expired is pushed nothing. A
//! Gateway without a GatewayConfig is served the same way by its class's shared
//! plane, whose pod runs with that plane's own credentials. A tunnel Gateway is
//! taken through to the edge simulator playing Cloudflare: ingress and DNS written
//! through its API, the plane registered with its edge, a request at its front
//! door served. A Gateway moving from the shared plane to a dedicated one is
//! served throughout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

// The data plane's test helpers, one copy for both crates' tests.
#[path = "../../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use culvert_bench::{EchoBackend, EchoConfig};
use culvert_controller::credentials::Authority;
use culvert_fake_apiserver::{FakeApiServer, Serving, fixtures};
use http::{Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use support::{Process, free_port, get, temp_dir, try_send, until};

const GW: &str = "gateway.networking.k8s.io/v1";
const CONTROLLER: &str = "culvert.dev/gateway-controller";
/// What a plane pod runs with, from the Secrets the controller made.
struct Credentials {
    token: String,
    ca_pem: String,
    cert: PathBuf,
    key: PathBuf,
    /// The config API name its certificate is issued for.
    server_name: String,
}

impl Credentials {
    /// Once the controller made them: the Secrets of the plane whose objects
    /// are called `workload` in `namespace`, the files written to `dir`.
    async fn of_plane(server: &FakeApiServer, namespace: &str, workload: &str, dir: &Path) -> Self {
        let tls = format!("{workload}-config-tls");
        let token = format!("{workload}-token");
        until(
            "the plane's Secrets exist",
            Duration::from_secs(20),
            async || {
                secret_value(server, namespace, &tls, "tls.crt").is_some()
                    && secret_value(server, namespace, &token, "token").is_some()
            },
        )
        .await;
        let value = |name: &str, key: &str| secret_value(server, namespace, name, key).unwrap();
        Self {
            token: value(&token, "token"),
            ca_pem: value(&tls, "ca.crt"),
            cert: write(dir, &format!("{workload}.crt"), &value(&tls, "tls.crt")),
            key: write(dir, &format!("{workload}.key"), &value(&tls, "tls.key")),
            server_name: format!("{workload}-config.{namespace}.svc"),
        }
    }
}

fn secret_value(server: &FakeApiServer, namespace: &str, name: &str, key: &str) -> Option<String> {
    let secret = server.get("v1", "Secret", Some(namespace), name)?;
    let encoded = secret["data"][key].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

fn start_plane(control: SocketAddr, credentials: &Credentials, token: &str) -> Process {
    start_plane_with(control, credentials, token, &[])
}

/// [`start_plane`] with `extra` arguments (a tunnel's).
fn start_plane_with(
    control: SocketAddr,
    credentials: &Credentials,
    token: &str,
    extra: &[String],
) -> Process {
    let child = Command::new(env!("CARGO_BIN_EXE_culvert"))
        .args(["serve", "--workers", "1", "--no-pin", "--no-access-log"])
        .args(extra)
        .args(["--control", &control.to_string(), "--token", token])
        .arg("--control-tls-cert")
        .arg(&credentials.cert)
        .arg("--control-tls-key")
        .arg(&credentials.key)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Process(child)
}

/// `GET /config` of the plane at `addr`, over HTTPS trusting only the
/// controller's CA for the plane's config API name; `None` while it does not
/// answer.
async fn plane_config(addr: SocketAddr, credentials: &Credentials) -> Option<Value> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(credentials.ca_pem.as_bytes()).ok()?)
        .ok()?;
    let provider = culvert_tls::crypto_provider();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    let name = ServerName::try_from(credentials.server_name.clone()).ok()?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .ok()?;
    tokio::spawn(connection);
    let request = Request::get("/config")
        .header("host", &credentials.server_name)
        .header("authorization", format!("Bearer {}", credentials.token))
        .body(Full::new(Bytes::new()))
        .ok()?;
    let response = sender.send_request(request).await.ok()?;
    let body = response.into_body().collect().await.ok()?.to_bytes();
    serde_json::from_slice(&body).ok()
}

fn set_hostname(server: &FakeApiServer, host: &str) {
    let mut route = server.get(GW, "HTTPRoute", Some("default"), "web").unwrap();
    route["spec"]["hostnames"] = json!([host]);
    route["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    server.apply_object(route).unwrap();
}

/// `(status, reason, message)` of `ProxyConfigPushed` on Gateway `edge`, or on
/// route `name`'s entry for it.
fn pushed(server: &FakeApiServer, kind: &str, name: &str) -> Option<(String, String, String)> {
    let object = server.get(GW, kind, Some("default"), name)?;
    let conditions = match kind {
        "Gateway" => object["status"]["conditions"].clone(),
        _ => object["status"]["parents"][0]["conditions"].clone(),
    };
    let condition = conditions
        .as_array()?
        .iter()
        .find(|c| c["type"] == "ProxyConfigPushed")?
        .clone();
    let text = |field: &str| condition[field].as_str().unwrap_or_default().to_owned();
    Some((text("status"), text("reason"), text("message")))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The fake API server with the minimal cluster (Gateway `default/edge` on
/// `port`, Service `web` to `backend`), HTTPRoute `web` for `host`, and the
/// controller's namespace.
fn cluster(port: u16, backend: u16, host: &str) -> FakeApiServer {
    let server = FakeApiServer::new();
    fixtures::register_repository_crds(&server).unwrap();
    for object in fixtures::minimal_cluster(CONTROLLER, port, backend) {
        server.create(object).unwrap();
    }
    server.create(fixtures::http_route("web", host)).unwrap();
    server
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "culvert-system"}}))
        .unwrap();
    server
}

/// GatewayConfig `default/own` with `spec`, named by Gateway `edge`.
fn dedicate(server: &FakeApiServer, spec: Value) {
    server
        .create(
            json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
            "metadata": {"name": "own", "namespace": "default"}, "spec": spec}),
        )
        .unwrap();
    let mut gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
    gateway["spec"]["infrastructure"] =
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    gateway["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    server.apply_object(gateway).unwrap();
}

/// A running `culvert controller` against `server`, with its scratch directory.
struct Running {
    controller: Process,
    dir: PathBuf,
    _serving: Serving,
}

/// Serves `server` and starts `culvert controller` on it (namespace
/// `culvert-system`, image `culvert:test`, resync 1 s) with `extra` arguments;
/// its stderr goes to `dir/controller.log`.
async fn start_controller(server: &FakeApiServer, name: &str, extra: &[String]) -> Running {
    let serving = server.serve().await.unwrap();
    let dir = temp_dir(name);
    let kubeconfig = dir.join("kubeconfig");
    serving.write_kubeconfig(&kubeconfig).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_culvert"))
        .args(["controller", "--namespace", "culvert-system"])
        .args(["--image", "culvert:test", "--identity", "controller-1"])
        .args(["--resync", "1s"])
        .args(extra)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stderr(std::fs::File::create(dir.join("controller.log")).unwrap())
        .spawn()
        .unwrap();
    Running {
        controller: Process(child),
        dir,
        _serving: serving,
    }
}

/// The EndpointSlice of plane `workload`'s config Service in `namespace`, with
/// a not-yet-ready endpoint per address in `pods`.
fn plane_endpoints(server: &FakeApiServer, namespace: &str, workload: &str, pods: &[&str]) {
    let endpoints: Vec<Value> = pods
        .iter()
        .map(|ip| json!({"addresses": [ip], "conditions": {"ready": false}}))
        .collect();
    server
        .create(
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("{workload}-config-1"), "namespace": namespace,
                         "labels": {"kubernetes.io/service-name": format!("{workload}-config")}},
            "addressType": "IPv4", "ports": [{"name": "control", "port": 8081}],
            "endpoints": endpoints}),
        )
        .unwrap();
}

#[tokio::test]
async fn the_controller_pushes_each_route_change_to_every_plane_pod() {
    let echo = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
    let port = free_port();
    let server = cluster(port, echo.addr().port(), "www.example.com");
    dedicate(&server, json!({"replicas": 2}));
    let running = start_controller(&server, "controller-planes", &[]).await;
    let dir = &running.dir;

    // The plane's credentials, as its pods would mount them.
    let credentials = Credentials::of_plane(&server, "default", "culvert-edge", dir).await;
    let pods: [SocketAddr; 2] = [
        "127.0.41.1:8081".parse().unwrap(),
        "127.0.41.2:8081".parse().unwrap(),
    ];
    let _first = start_plane(pods[0], &credentials, &credentials.token);
    // The second pod runs with another token: it refuses every push.
    let mut second = start_plane(pods[1], &credentials, "not-the-plane-token");
    plane_endpoints(
        &server,
        "default",
        "culvert-edge",
        &["127.0.41.1", "127.0.41.2"],
    );

    until(
        "the first pod serves the route",
        Duration::from_secs(20),
        async || {
            plane_config(pods[0], &credentials)
                .await
                .is_some_and(|c| c["ready"] == true)
        },
    )
    .await;
    let reply = get(
        SocketAddr::from(([127, 0, 0, 1], port)),
        "www.example.com",
        "/",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["service"], "web");
    let first = plane_config(pods[0], &credentials).await.unwrap();
    // Status says how far the pushes got: on the Gateway (with the version) and
    // on the route's entry for it, the refusing pod named by what it answers.
    until(
        "the Gateway reports the refusing pod",
        Duration::from_secs(20),
        async || {
            pushed(&server, "Gateway", "edge").is_some_and(|(status, reason, message)| {
                status == "False"
                    && reason == "Pending"
                    && message.starts_with("pushes to 1 of 2 pods fail (unauthorized)")
                    && message.contains("config version")
            }) && pushed(&server, "HTTPRoute", "web").is_some_and(|(status, _, message)| {
                status == "False" && message == "pushes to 1 of 2 pods fail (unauthorized)"
            })
        },
    )
    .await;

    // A route change reaches the pod that accepts pushes, under a newer version,
    // while the other one keeps refusing.
    set_hostname(&server, "other.example.com");
    until(
        "the route change reaches the first pod",
        Duration::from_secs(20),
        async || {
            plane_config(pods[0], &credentials)
                .await
                .is_some_and(|c| c["hash"] != first["hash"])
        },
    )
    .await;
    let changed = plane_config(pods[0], &credentials).await.unwrap();
    assert!(
        changed["version"].as_u64() > first["version"].as_u64(),
        "{changed} after {first}"
    );
    let reply = get(
        SocketAddr::from(([127, 0, 0, 1], port)),
        "other.example.com",
        "/",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);

    // The refusing pod restarts with the plane's token, empty: replay brings it
    // the current config within seconds.
    let _ = second.0.kill();
    let _ = second.0.wait();
    tokio::time::sleep(Duration::from_millis(200)).await;
    second = start_plane(pods[1], &credentials, &credentials.token);
    until(
        "the restarted pod gets the config back",
        Duration::from_secs(15),
        async || {
            plane_config(pods[1], &credentials)
                .await
                .is_some_and(|c| c["hash"] == changed["hash"] && c["ready"] == true)
        },
    )
    .await;
    until(
        "the Gateway reports every pod",
        Duration::from_secs(20),
        async || {
            pushed(&server, "Gateway", "edge")
                .is_some_and(|(status, reason, _)| status == "True" && reason == "Pushed")
                && pushed(&server, "HTTPRoute", "web")
                    .is_some_and(|(status, _, _)| status == "True")
        },
    )
    .await;
    drop(second);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_gateway_without_a_gateway_config_is_served_by_its_class_s_shared_plane() {
    let echo = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
    let port = free_port();
    let server = cluster(port, echo.addr().port(), "www.example.com");
    let running = start_controller(&server, "controller-shared-plane", &[]).await;
    let dir = &running.dir;

    let credentials =
        Credentials::of_plane(&server, "culvert-system", "culvert-class-culvert", dir).await;
    let deployment = server
        .get(
            "apps/v1",
            "Deployment",
            Some("culvert-system"),
            "culvert-class-culvert",
        )
        .expect("the shared plane is rendered beside the controller");
    assert_eq!(
        deployment["metadata"]["ownerReferences"][0]["kind"],
        "GatewayClass"
    );
    let pod: SocketAddr = "127.0.42.1:8081".parse().unwrap();
    let _pod = start_plane(pod, &credentials, &credentials.token);
    plane_endpoints(
        &server,
        "culvert-system",
        "culvert-class-culvert",
        &["127.0.42.1"],
    );
    until(
        "the shared plane's pod serves the route",
        Duration::from_secs(20),
        async || {
            plane_config(pod, &credentials)
                .await
                .is_some_and(|c| c["ready"] == true)
        },
    )
    .await;
    // Listeners open just after the config is taken: ask until one answers.
    let listener = SocketAddr::from(([127, 0, 0, 1], port));
    let request = || {
        Request::get("/")
            .header("host", "www.example.com")
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    until(
        "the shared plane's listener answers",
        Duration::from_secs(10),
        async || try_send(listener, request()).await.is_ok(),
    )
    .await;
    let reply = get(listener, "www.example.com", "/").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["service"], "web");
    until(
        "the shared Gateway and its route report the push",
        Duration::from_secs(20),
        async || {
            pushed(&server, "Gateway", "edge").is_some_and(|(status, reason, message)| {
                status == "True" && reason == "Pushed" && !message.contains("version")
            }) && pushed(&server, "HTTPRoute", "web").is_some_and(|(status, _, _)| status == "True")
        },
    )
    .await;

    // Clients reach the plane through its LoadBalancer Service: until that has
    // an address the Gateway is not programmed, then it reports it.
    let service = server
        .get(
            "v1",
            "Service",
            Some("culvert-system"),
            "culvert-class-culvert",
        )
        .expect("the shared plane's data Service");
    assert_eq!(service["spec"]["type"], "LoadBalancer");
    assert_eq!(service["spec"]["ports"][0]["port"], port);
    let programmed = |server: &FakeApiServer| {
        let gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
        let condition = gateway["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Programmed")
            .cloned()
            .unwrap_or_default();
        (
            condition["status"].as_str().unwrap_or_default().to_owned(),
            condition["reason"].as_str().unwrap_or_default().to_owned(),
            gateway["status"]["addresses"].clone(),
        )
    };
    until(
        "the Gateway waits for its load balancer",
        Duration::from_secs(20),
        async || programmed(&server).1 == "AddressNotAssigned",
    )
    .await;
    let mut balanced = service;
    balanced["status"] = json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}});
    balanced["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    server.write_status(balanced).unwrap();
    until(
        "the Gateway reports the load balancer's address",
        Duration::from_secs(20),
        async || {
            let (status, _, addresses) = programmed(&server);
            status == "True" && addresses == json!([{"type": "IPAddress", "value": "203.0.113.7"}])
        },
    )
    .await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_plane_pod_with_an_expired_certificate_gets_no_push() {
    let port = free_port();
    let server = cluster(port, free_port(), "www.example.com");
    dedicate(&server, json!({}));
    let running = start_controller(&server, "controller-expired-plane", &[]).await;
    let dir = &running.dir;
    let mut credentials = Credentials::of_plane(&server, "default", "culvert-edge", dir).await;

    // The pod serves a certificate from the controller's own CA, for the right
    // name, that ended months ago.
    let authority = Authority {
        common_name: "culvert-controller".to_owned(),
        certificate_pem: secret_value(&server, "culvert-system", "culvert-controller-ca", "ca.crt")
            .unwrap(),
        key_pem: secret_value(&server, "culvert-system", "culvert-controller-ca", "ca.key")
            .unwrap(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expired = authority
        .issue(&credentials.server_name, now - 200 * 86_400)
        .unwrap();
    credentials.cert = write(dir, "expired.crt", &expired.certificate_pem);
    credentials.key = write(dir, "expired.key", &expired.key_pem);
    let pod: SocketAddr = "127.0.43.1:8081".parse().unwrap();
    let _pod = start_plane(pod, &credentials, &credentials.token);
    plane_endpoints(&server, "default", "culvert-edge", &["127.0.43.1"]);
    until(
        "the Gateway reports the refused certificate",
        Duration::from_secs(20),
        async || {
            pushed(&server, "Gateway", "edge").is_some_and(|(status, _, message)| {
                status == "False" && message.starts_with("pushes to 1 of 1 pods fail (tls)")
            })
        },
    )
    .await;
    // Nothing reached the pod: its listener port was never opened.
    let listener = SocketAddr::from(([127, 0, 0, 1], port));
    let request = Request::get("/")
        .header("host", "www.example.com")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert!(try_send(listener, request).await.is_err());
    std::fs::remove_dir_all(dir).unwrap();
}

/// The condition `kind` of Gateway `default/edge`, or of route `web`'s entry:
/// `(status, reason)`.
fn condition(server: &FakeApiServer, kind: &str, name: &str, condition: &str) -> (String, String) {
    let Some(object) = server.get(GW, kind, Some("default"), name) else {
        return Default::default();
    };
    let conditions = match kind {
        "Gateway" => object["status"]["conditions"].clone(),
        _ => object["status"]["parents"][0]["conditions"].clone(),
    };
    let found = conditions
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == condition)
        .cloned()
        .unwrap_or_default();
    let text = |field: &str| found[field].as_str().unwrap_or_default().to_owned();
    (text("status"), text("reason"))
}

/// Issue 27's end to end: nothing faked inside Culvert. The edge simulator plays
/// Cloudflare (API and edge); a tunnel is created through its API; the cluster
/// (the fake API server) holds a Gateway whose GatewayConfig names that tunnel's
/// token and an API token; the controller writes the tunnel's ingress and DNS
/// through the API; a plane process registers with the simulated edge and gets
/// its config pushed; a request for the route's hostname at the simulator's front
/// door reaches the backend; deleting the route removes its DNS records and
/// ingress rule.
#[tokio::test]
async fn a_tunnel_gateway_is_reachable_at_cloudflare_s_front_door() {
    use culvert_cloudflare::{AccountId, ApiToken, Client, ZoneId};
    use culvert_edge_sim::{EdgeSim, SimConfig};
    use std::str::FromStr as _;

    let echo = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
    let sim = EdgeSim::start(SimConfig {
        zones: vec!["example.com".to_owned()],
        ..SimConfig::loopback()
    })
    .await
    .unwrap();
    let api = Client::builder(ApiToken::new(sim.api_token()).unwrap())
        .base_url(sim.api_base())
        .build()
        .unwrap();
    let account = AccountId::from_str(&sim.account_id()).unwrap();
    let zone = ZoneId::from_str(&sim.zones()[0].0).unwrap();
    let tunnel = api.create_tunnel(&account, "edge", None).await.unwrap();
    let connector_token = api
        .tunnel_token(&account, &tunnel.id)
        .await
        .unwrap()
        .expose()
        .to_owned();
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);

    let port = free_port();
    let server = cluster(port, echo.addr().port(), "app.example.com");
    for object in [
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "edge-tunnel", "namespace": "default",
                            "labels": {"culvert.dev/tunnel-token": "true"}},
               "data": {"token": b64(&connector_token)}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "cloudflare", "namespace": "default"},
               "data": {"token": b64(&sim.api_token())}}),
    ] {
        server.create(object).unwrap();
    }
    dedicate(
        &server,
        json!({"tunnel": {"tokenRef": {"name": "edge-tunnel"}},
               "cloudflareCredentialsSecretRef": {"name": "cloudflare"}}),
    );
    let edges: Vec<String> = sim.quic_addrs().iter().map(ToString::to_string).collect();
    let mut extra: Vec<String> = ["--dns-owner-id", "e2e", "--log-level", "debug"]
        .map(str::to_owned)
        .into();
    extra.extend(["--cloudflare-api-url".to_owned(), sim.api_base()]);
    for edge in &edges {
        extra.extend(["--tunnel-edge".to_owned(), edge.clone()]);
    }
    let running = start_controller(&server, "controller-tunnel", &extra).await;
    let dir = &running.dir;

    // The controller writes the tunnel's DNS record and ingress through the API.
    let target = format!("{}.cfargotunnel.com", tunnel.id);
    until(
        "the hostname's CNAME points at the tunnel",
        Duration::from_secs(30),
        async || {
            api.dns_records(&zone, Some("CNAME"), Some("app.example.com"))
                .await
                .is_ok_and(|records| records.iter().any(|r| r.content == target))
        },
    )
    .await;
    let rules = api
        .tunnel_configuration(&account, &tunnel.id)
        .await
        .unwrap()
        .ingress
        .unwrap_or_default();
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert_eq!(rules[0].hostname.as_deref(), Some("app.example.com"));
    assert_eq!(rules[1].service, "http_status:404");

    // The plane pod: its credentials from the controller's Secrets, the tunnel's
    // token, the simulated edge and its CA.
    let credentials = Credentials::of_plane(&server, "default", "culvert-edge", dir).await;
    let token_file = write(dir, "tunnel-token", &connector_token);
    let ca_file = write(dir, "edge-ca.pem", &sim.ca().cert_pem);
    let mut tunnel_args = vec![
        "--tunnel-token-file".to_owned(),
        token_file.display().to_string(),
        "--tunnel-ca-file".to_owned(),
        ca_file.display().to_string(),
        "--tunnel-protocol".to_owned(),
        "quic".to_owned(),
    ];
    for edge in &edges {
        tunnel_args.extend(["--tunnel-edge".to_owned(), edge.clone()]);
    }
    let pod: SocketAddr = "127.0.44.1:8081".parse().unwrap();
    let _pod = start_plane_with(pod, &credentials, &credentials.token, &tunnel_args);
    plane_endpoints(&server, "default", "culvert-edge", &["127.0.44.1"]);

    // A request at Cloudflare's front door, for the route's hostname, reaches the
    // backend through the tunnel the plane registered.
    let front = sim.http_addr();
    until(
        "the front door reaches the backend",
        Duration::from_secs(30),
        async || {
            let request = Request::get("/hello")
                .header("host", "app.example.com")
                .body(Full::new(Bytes::new()))
                .unwrap();
            try_send(front, request)
                .await
                .is_ok_and(|reply| reply.status == StatusCode::OK)
        },
    )
    .await;
    let reply = get(front, "app.example.com", "/hello").await;
    assert_eq!(reply.json()["service"], "web");
    until(
        "status says what was done at Cloudflare",
        Duration::from_secs(20),
        async || {
            condition(&server, "Gateway", "edge", "CloudflareSynced").0 == "True"
                && condition(&server, "HTTPRoute", "web", "DNSRecordsProgrammed").0 == "True"
                && condition(&server, "Gateway", "edge", "Programmed").0 == "True"
        },
    )
    .await;
    let gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
    assert_eq!(
        gateway["status"]["addresses"],
        json!([{"type": "Hostname", "value": target}])
    );

    // The route goes: its DNS records and ingress rule go with it.
    server
        .delete(GW, "HTTPRoute", Some("default"), "web")
        .unwrap();
    until(
        "the route's DNS records are removed",
        Duration::from_secs(30),
        async || {
            api.dns_records(&zone, None, None)
                .await
                .is_ok_and(|records| records.is_empty())
        },
    )
    .await;
    let rules = api
        .tunnel_configuration(&account, &tunnel.id)
        .await
        .unwrap()
        .ingress
        .unwrap_or_default();
    assert_eq!(rules.len(), 1, "only the catch-all is left: {rules:?}");

    // The API token appears nowhere: not in the controller's log (at debug), not
    // in an Event, not in any status.
    drop(running.controller);
    let log = std::fs::read_to_string(dir.join("controller.log")).unwrap();
    assert!(!log.is_empty(), "the controller logged at debug level");
    let secret = sim.api_token();
    assert!(
        !log.contains(&secret),
        "the API token is in the controller's log"
    );
    for api_version in ["v1", "events.k8s.io/v1"] {
        let events = serde_json::to_string(&server.list(api_version, "Event")).unwrap();
        assert!(!events.contains(&secret), "the API token is in an Event");
    }
    let statuses = serde_json::to_string(&server.list(GW, "Gateway")).unwrap();
    assert!(!statuses.contains(&secret));
    std::fs::remove_dir_all(dir).unwrap();
}

/// `GET /` for `host` on `port` of loopback: the status, or `None` when nothing
/// answers.
async fn status_at(port: u16, host: &str) -> Option<StatusCode> {
    let request = Request::get("/")
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    try_send(SocketAddr::from(([127, 0, 0, 1], port)), request)
        .await
        .ok()
        .map(|reply| reply.status)
}

#[tokio::test]
async fn a_gateway_moving_to_a_dedicated_plane_is_served_throughout() {
    let echo = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
    let (port, other_port) = (free_port(), free_port());
    let server = cluster(port, echo.addr().port(), "www.example.com");
    // A second Gateway keeps the shared plane wanted throughout.
    server
        .create(json!({"apiVersion": GW, "kind": "Gateway",
            "metadata": {"name": "other", "namespace": "default"},
            "spec": {"gatewayClassName": "culvert",
                     "listeners": [{"name": "http", "port": other_port, "protocol": "HTTP"}]}}))
        .unwrap();
    let running = start_controller(&server, "controller-handover", &[]).await;
    let dir = &running.dir;

    // The shared plane serves Gateway edge.
    let shared =
        Credentials::of_plane(&server, "culvert-system", "culvert-class-culvert", dir).await;
    let shared_pod: SocketAddr = "127.0.45.1:8081".parse().unwrap();
    let _shared_pod = start_plane(shared_pod, &shared, &shared.token);
    plane_endpoints(
        &server,
        "culvert-system",
        "culvert-class-culvert",
        &["127.0.45.1"],
    );
    until(
        "the shared plane serves edge's route",
        Duration::from_secs(20),
        async || status_at(port, "www.example.com").await == Some(StatusCode::OK),
    )
    .await;

    // Edge asks for a dedicated plane. Its pods are not up yet: the shared plane
    // keeps serving it (without the hold its listener would close at once).
    dedicate(&server, json!({}));
    let dedicated = Credentials::of_plane(&server, "default", "culvert-edge", dir).await;
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        assert_eq!(
            status_at(port, "www.example.com").await,
            Some(StatusCode::OK),
            "edge is served while its dedicated plane starts"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Its dedicated pod comes up and takes the config; the shared plane then lets
    // edge go (the hold asks for a translation itself once the pushes say the new
    // plane serves): its listener closes there, and the dedicated pod alone
    // serves it.
    let before = plane_config(shared_pod, &shared).await.unwrap();
    let dedicated_pod: SocketAddr = "127.0.45.2:8081".parse().unwrap();
    let mut dedicated_process = start_plane(dedicated_pod, &dedicated, &dedicated.token);
    plane_endpoints(&server, "default", "culvert-edge", &["127.0.45.2"]);
    until(
        "the dedicated pod serves",
        Duration::from_secs(20),
        async || {
            plane_config(dedicated_pod, &dedicated)
                .await
                .is_some_and(|c| c["ready"] == true)
        },
    )
    .await;
    until(
        "the shared plane drops edge",
        Duration::from_secs(20),
        async || {
            plane_config(shared_pod, &shared)
                .await
                .is_some_and(|c| c["hash"] != before["hash"])
        },
    )
    .await;
    assert_eq!(
        status_at(port, "www.example.com").await,
        Some(StatusCode::OK)
    );
    let _ = dedicated_process.0.kill();
    let _ = dedicated_process.0.wait();
    until(
        "only the dedicated pod served edge",
        Duration::from_secs(10),
        async || status_at(port, "www.example.com").await.is_none(),
    )
    .await;
    assert_eq!(
        status_at(other_port, "www.example.com").await,
        Some(StatusCode::NOT_FOUND),
        "the shared plane still serves the other Gateway"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
