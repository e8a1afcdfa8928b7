//! The data plane end to end: a `Server` started in-process on loopback, configured
//! through `PUT /config`, forwarding to `culvert_bench::EchoBackend`s.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use bytes::Bytes;
use culvert_bench::{EchoBackend, EchoConfig};
use culvert_proxy::{Error, ServeConfig, Server};
use http::{Request, StatusCode};
use http_body_util::Full;
use serde_json::{Value, json};
use support::{Reply, free_port, get, put_config, send};

const LIMIT: Duration = Duration::from_secs(60);

fn start(token: Option<&str>) -> Server {
    let mut config = ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_workers(NonZeroUsize::new(2).unwrap());
    if let Some(token) = token {
        config = config.with_token(token);
    }
    Server::start(config).unwrap()
}

fn route(name: &str, hostname: &str, rule: Value) -> Value {
    json!({"name": name, "listeners": ["web"], "hostnames": [hostname], "rules": [rule]})
}

fn backend(endpoint: SocketAddr) -> Value {
    json!({"name": "default/echo:80", "endpoints": [endpoint.to_string()]})
}

fn config(version: u64, port: u16, routes: Vec<Value>) -> Value {
    json!({
        "version": version,
        "listeners": [{"name": "web", "port": port, "protocol": "HTTP"}],
        "httpRoutes": routes,
    })
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

async fn control_get(server: &Server, path: &str, token: Option<&str>) -> Reply {
    let mut request = Request::get(path).header("host", "control");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    send(
        server.control_addr(),
        request.body(Full::new(Bytes::new())).unwrap(),
    )
    .await
}

#[tokio::test]
async fn forwards_and_answers_failures() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
        let port = free_port();
        let dead = local(free_port());
        let server = start(None);
        let control = server.control_addr();

        assert_eq!(
            control_get(&server, "/healthz", None).await.status,
            StatusCode::OK
        );
        assert_eq!(
            control_get(&server, "/readyz", None).await.status,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            control_get(&server, "/config", None).await.json()["ready"],
            false
        );

        let routes = vec![
            route(
                "echo",
                "echo.example",
                json!({
                    "filters": [{"type": "RequestHeaderModifier",
                        "requestHeaderModifier": {"add": [{"name": "x-added", "value": "yes"}]}}],
                    "backends": [backend(echo.addr())],
                }),
            ),
            route(
                "invalid",
                "invalid.example",
                json!({
                    "backends": [{"name": "default/missing:80", "unavailable": "InvalidReference"}],
                }),
            ),
            route(
                "empty",
                "empty.example",
                json!({
                    "backends": [{"name": "default/empty:80", "endpoints": []}],
                }),
            ),
            route("dead", "dead.example", json!({"backends": [backend(dead)]})),
            route(
                "redirect",
                "redirect.example",
                json!({
                    "filters": [{"type": "RequestRedirect",
                        "requestRedirect": {"hostname": "elsewhere.example", "statusCode": 301}}],
                }),
            ),
            route(
                "slow",
                "slow.example",
                json!({
                    "timeouts": {"request": "200ms"},
                    "backends": [backend(echo.addr())],
                }),
            ),
        ];
        let good = config(1, port, routes.clone());
        let applied = put_config(control, &good, None).await;
        assert_eq!(applied.status, StatusCode::OK, "{:?}", applied.body);
        assert_eq!(applied.json()["version"], 1);
        let hash = applied.json()["hash"].as_str().unwrap().to_owned();
        assert_eq!(
            control_get(&server, "/readyz", None).await.status,
            StatusCode::OK
        );
        let current = control_get(&server, "/config", None).await.json();
        assert_eq!(current, json!({"version": 1, "hash": hash, "ready": true}));

        let request = Request::get("/some/./path?x=1")
            .header("host", "echo.example")
            .header("x-forwarded-for", "192.0.2.1")
            .header("forwarded", "for=192.0.2.99")
            .header("x-forwarded-host", "spoofed.example")
            .header("x-client", "kept")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let reply = send(local(port), request).await;
        assert_eq!(reply.status, StatusCode::OK);
        let seen = reply.json();
        assert_eq!(seen["path"], "/some/path?x=1");
        assert_eq!(seen["host"], "echo.example");
        assert_eq!(
            seen["headers"]["X-Forwarded-For"],
            json!(["192.0.2.1, 127.0.0.1"])
        );
        assert_eq!(seen["headers"]["X-Forwarded-Proto"], json!(["http"]));
        // An untrusted client's `Forwarded` and `X-Forwarded-Host` are replaced.
        assert_eq!(
            seen["headers"]["Forwarded"],
            json!(["for=127.0.0.1;proto=http;host=\"echo.example\""])
        );
        assert_eq!(seen["headers"]["X-Forwarded-Host"], json!(["echo.example"]));
        assert_eq!(seen["headers"]["X-Added"], json!(["yes"]));
        assert_eq!(seen["headers"]["X-Client"], json!(["kept"]));

        // A body is streamed through.
        let request = Request::post("/upload")
            .header("host", "echo.example")
            .body(Full::new(Bytes::from_static(b"hello upstream")))
            .unwrap();
        assert_eq!(send(local(port), request).await.status, StatusCode::OK);
        let last = echo.requests().pop().unwrap();
        assert_eq!(&last.body[..], b"hello upstream");

        assert_eq!(
            get(local(port), "unknown.example", "/").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get(local(port), "invalid.example", "/").await.status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            get(local(port), "empty.example", "/").await.status,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            get(local(port), "dead.example", "/").await.status,
            StatusCode::BAD_GATEWAY
        );
        let redirect = get(local(port), "redirect.example", "/some/path").await;
        assert_eq!(redirect.status, StatusCode::MOVED_PERMANENTLY);
        let location = redirect.headers["location"].to_str().unwrap();
        assert!(
            location.starts_with("http://elsewhere.example"),
            "{location}"
        );
        assert!(location.ends_with("/some/path"), "{location}");
        assert_eq!(
            get(local(port), "slow.example", "/?delay=3s").await.status,
            StatusCode::GATEWAY_TIMEOUT
        );

        // A refused config leaves version 1 serving.
        let mut bad = config(2, port, routes.clone());
        bad["httpRoutes"][0]["rules"][0]["matches"] =
            json!([{"path": {"type": "RegularExpression", "value": "/(unclosed"}}]);
        let refused = put_config(control, &bad, None).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert!(
            refused.json()["error"]
                .as_str()
                .unwrap()
                .contains("refused")
        );
        assert_eq!(
            get(local(port), "echo.example", "/").await.status,
            StatusCode::OK
        );

        let unparsable = put_config(control, &json!({"version": 3, "bogus": 1}), None).await;
        assert_eq!(unparsable.status, StatusCode::BAD_REQUEST);

        let older = put_config(control, &config(0, port, routes.clone()), None).await;
        assert_eq!(older.status, StatusCode::CONFLICT);
        assert_eq!(older.json()["currentVersion"], 1);
        // The serving version again: the same content is a no-op answered with its
        // hash (no swap counted), other content is a conflict.
        let swaps = |text: &str| {
            text.lines()
                .find(|l| l.starts_with("culvert_config_swaps_total"))
                .map(str::to_owned)
        };
        let before = swaps(&String::from_utf8_lossy(
            &control_get(&server, "/metrics", None).await.body,
        ));
        assert!(before.is_some(), "no swap counter in /metrics");
        let again = put_config(control, &good, None).await;
        assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);
        assert_eq!(again.json()["hash"], hash.as_str());
        assert_eq!(
            swaps(&String::from_utf8_lossy(
                &control_get(&server, "/metrics", None).await.body
            )),
            before
        );
        let mut other = good.clone();
        other["httpRoutes"].as_array_mut().unwrap().pop();
        let conflict = put_config(control, &other, None).await;
        assert_eq!(conflict.status, StatusCode::CONFLICT);
        assert_eq!(conflict.json()["currentVersion"], 1);
        assert!(
            conflict.json()["error"]
                .as_str()
                .unwrap()
                .contains("other content"),
            "{:?}",
            conflict.body
        );

        let text = Request::put("/config")
            .header("host", "control")
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from(good.to_string())))
            .unwrap();
        assert_eq!(
            send(control, text).await.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(
            control_get(&server, "/config", None).await.json()["version"],
            1
        );

        server.shutdown();
        echo.shutdown().await;
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn token_is_required_when_set() {
    tokio::time::timeout(LIMIT, async {
        let exposed = ServeConfig::new(SocketAddr::from(([0, 0, 0, 0], 0)));
        assert!(matches!(
            Server::start(exposed),
            Err(Error::InsecureControl { .. })
        ));

        let server = start(Some("s3cret"));
        let control = server.control_addr();
        let document = config(1, free_port(), vec![]);
        assert_eq!(
            put_config(control, &document, None).await.status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            put_config(control, &document, Some("s3creT")).await.status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            control_get(&server, "/config", None).await.status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            control_get(&server, "/healthz", None).await.status,
            StatusCode::OK
        );
        assert_eq!(
            put_config(control, &document, Some("s3cret")).await.status,
            StatusCode::OK
        );
        let current = control_get(&server, "/config", Some("s3cret")).await;
        assert_eq!(current.json()["version"], 1);
        server.shutdown();
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn moving_the_listener_closes_the_old_port() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
        let (old, new) = (free_port(), free_port());
        let server = start(None);
        let control = server.control_addr();
        let routes = vec![route(
            "echo",
            "echo.example",
            json!({"backends": [backend(echo.addr())]}),
        )];

        assert_eq!(
            put_config(control, &config(1, old, routes.clone()), None)
                .await
                .status,
            StatusCode::OK
        );
        assert_eq!(
            get(local(old), "echo.example", "/").await.status,
            StatusCode::OK
        );

        assert_eq!(
            put_config(control, &config(2, new, routes), None)
                .await
                .status,
            StatusCode::OK
        );
        assert!(
            tokio::net::TcpStream::connect(local(old)).await.is_err(),
            "old port still accepts"
        );
        assert_eq!(
            get(local(new), "echo.example", "/").await.status,
            StatusCode::OK
        );

        server.shutdown();
        echo.shutdown().await;
    })
    .await
    .expect("test timed out");
}
