//! The pusher against config API stand-ins over HTTPS on loopback. Waits are
//! on the summaries' watch channel, bounded generously; nothing is timed tightly.

mod stand_in;

use std::sync::Arc;
use std::time::Duration;

use culvert_router::DataPlaneConfig;
use http::{Method, StatusCode};

use super::client::{Client, MAX_ANSWER};
use super::{PlaneKey, PlaneTarget, PushSettings, Pusher};
use crate::Error;
use crate::push::state::Reported;
use crate::push::{Failure, PlaneSummary, Timing};
use stand_in::{Pki, Raw, Silent, StandIn};

/// The config Service name the certificates are for.
const SERVER_NAME: &str = "culvert-edge-config.tenant-a.svc";

/// The longest any wait may take before the test fails.
const BOUND: Duration = Duration::from_secs(20);

/// Quick clocks: the re-check in a fifth of a second, short backoff.
fn settings() -> PushSettings {
    PushSettings {
        timing: Timing {
            backoff_min: Duration::from_millis(20),
            backoff_max: Duration::from_millis(200),
            recheck: Duration::from_millis(200),
            sustained_after: Duration::from_secs(60),
        },
        request_timeout: Duration::from_secs(2),
        seed: 11,
        ..PushSettings::default()
    }
}

/// A config with one HTTP listener on `port`: different ports, different content.
fn config(port: u16) -> Arc<DataPlaneConfig> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "version": 0,
            "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
        }))
        .unwrap(),
    )
}

fn target(
    config: Arc<DataPlaneConfig>,
    pods: &[std::net::SocketAddr],
    token: &str,
    pki: &Pki,
) -> PlaneTarget {
    PlaneTarget {
        config,
        pods: pods.to_vec(),
        token: token.to_owned(),
        ca_pem: pki.ca_pem.clone(),
        server_name: SERVER_NAME.to_owned(),
    }
}

/// Waits until `key`'s summary satisfies `done`.
async fn wait_for(
    pusher: &Pusher,
    key: &PlaneKey,
    what: &str,
    done: impl Fn(&PlaneSummary) -> bool,
) -> PlaneSummary {
    let mut summaries = pusher.subscribe();
    let waited = tokio::time::timeout(
        BOUND,
        summaries.wait_for(|all| all.get(key).is_some_and(&done)),
    )
    .await;
    match waited {
        Ok(Ok(all)) => all[key].clone(),
        _ => panic!("{what}: {:?}", pusher.summary(key)),
    }
}

/// Waits until `check` holds, polling.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let waited = tokio::time::timeout(BOUND, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}");
}

fn hash(config: &DataPlaneConfig) -> String {
    config.content_hash().unwrap()
}

#[tokio::test]
async fn two_pods_reach_the_desired_config_and_follow_its_changes() {
    let pki = Pki::new("plane ca");
    let tls = pki.server_config(SERVER_NAME);
    let pods = [
        StandIn::start(Arc::clone(&tls), "token-a").await,
        StandIn::start(tls, "token-a").await,
    ];
    let addrs: Vec<_> = pods.iter().map(|pod| pod.addr).collect();
    let pusher = Pusher::new(settings()).unwrap();
    let key = PlaneKey::new("tenant-a", "edge");
    let first = config(8080);
    pusher
        .set_plane(
            key.clone(),
            target(Arc::clone(&first), &addrs, "token-a", &pki),
        )
        .unwrap();
    let summary = wait_for(
        &pusher,
        &key,
        "both pods current",
        PlaneSummary::all_current,
    )
    .await;
    assert_eq!((summary.pods, summary.version), (2, 1));
    assert_eq!(summary.hash, hash(&first));
    for pod in &pods {
        assert_eq!(pod.serving(), Some((1, hash(&first))));
        // Asked first, then pushed once.
        let seen = pod.seen();
        assert_eq!(seen[0].method, Method::GET);
        assert_eq!(pod.puts().len(), 1);
        assert_eq!(pod.puts()[0].version, Some(1));
    }

    // The same content again changes nothing; new content is version 2 everywhere.
    pusher
        .set_plane(key.clone(), target(first, &addrs, "token-a", &pki))
        .unwrap();
    let second = config(9090);
    pusher
        .set_plane(
            key.clone(),
            target(Arc::clone(&second), &addrs, "token-a", &pki),
        )
        .unwrap();
    let summary = wait_for(&pusher, &key, "the new content everywhere", |summary| {
        summary.hash == hash(&second) && summary.all_current()
    })
    .await;
    assert_eq!(summary.version, 2);
    for pod in &pods {
        assert_eq!(pod.serving(), Some((2, hash(&second))));
        let versions: Vec<_> = pod.puts().iter().map(|seen| seen.version).collect();
        assert_eq!(versions, vec![Some(1), Some(2)]);
        // Every request carried the plane's token.
        for seen in pod.seen() {
            assert_eq!(seen.path, "/config");
            assert_eq!(seen.authorization.as_deref(), Some("Bearer token-a"));
        }
    }
}

#[tokio::test]
async fn a_pod_restarted_empty_is_replayed_and_a_current_one_left_alone() {
    let pki = Pki::new("plane ca");
    let tls = pki.server_config(SERVER_NAME);
    let restarted = StandIn::start(Arc::clone(&tls), "token-b").await;
    let steady = StandIn::start(tls, "token-b").await;
    let pusher = Pusher::new(settings()).unwrap();
    let key = PlaneKey::new("tenant-b", "edge");
    let desired = config(8080);
    pusher
        .set_plane(
            key.clone(),
            target(
                Arc::clone(&desired),
                &[restarted.addr, steady.addr],
                "token-b",
                &pki,
            ),
        )
        .unwrap();
    wait_for(
        &pusher,
        &key,
        "both pods current",
        PlaneSummary::all_current,
    )
    .await;

    restarted.restart_empty();
    eventually("the restarted pod is pushed again", || {
        restarted.serving() == Some((1, hash(&desired)))
    })
    .await;
    assert_eq!(restarted.puts().len(), 2);
    // Re-checked meanwhile, never pushed again.
    eventually("the steady pod is re-checked", || steady.seen().len() >= 4).await;
    assert_eq!(steady.puts().len(), 1);
}

#[tokio::test]
async fn the_version_continues_above_what_a_pod_serves() {
    let pki = Pki::new("plane ca");
    let pod = StandIn::start(pki.server_config(SERVER_NAME), "token-c").await;
    // Served before a controller restart.
    pod.serve(7, "00000000000000aa");
    let pusher = Pusher::new(settings()).unwrap();
    let key = PlaneKey::new("tenant-c", "edge");
    let desired = config(8080);
    pusher
        .set_plane(
            key.clone(),
            target(Arc::clone(&desired), &[pod.addr], "token-c", &pki),
        )
        .unwrap();
    let summary = wait_for(&pusher, &key, "the pod current", PlaneSummary::all_current).await;
    assert_eq!(summary.version, 8);
    assert_eq!(pod.serving(), Some((8, hash(&desired))));
}

#[tokio::test]
async fn a_refusing_or_silent_plane_does_not_stall_another() {
    let pki = Pki::new("plane ca");
    let tls = pki.server_config(SERVER_NAME);
    let refusing = StandIn::start(Arc::clone(&tls), "the-right-token").await;
    let silent = Silent::start().await;
    let healthy = StandIn::start(tls, "token-ok").await;
    let mut settings = settings();
    settings.request_timeout = Duration::from_millis(300);
    let pusher = Pusher::new(settings).unwrap();
    let (refused_key, silent_key, healthy_key) = (
        PlaneKey::new("tenant-r", "edge"),
        PlaneKey::new("tenant-s", "edge"),
        PlaneKey::new("tenant-h", "edge"),
    );
    let secret = "sekret-wrong-token-4f9c";
    pusher
        .set_plane(
            refused_key.clone(),
            target(config(1), &[refusing.addr], secret, &pki),
        )
        .unwrap();
    pusher
        .set_plane(
            silent_key.clone(),
            target(config(2), &[silent.addr], "token-s", &pki),
        )
        .unwrap();
    pusher
        .set_plane(
            healthy_key.clone(),
            target(config(3), &[healthy.addr], "token-ok", &pki),
        )
        .unwrap();

    wait_for(
        &pusher,
        &healthy_key,
        "the healthy plane",
        PlaneSummary::all_current,
    )
    .await;
    let refused = wait_for(&pusher, &refused_key, "a 401", |summary| {
        summary.failing.iter().any(|failure| failure.attempts >= 2)
    })
    .await;
    assert_eq!(refused.failing[0].error, Failure::Unauthorized);
    assert_eq!(refused.current, 0);
    assert!(!refused.sustained);
    let timed_out = wait_for(&pusher, &silent_key, "a timeout", |summary| {
        !summary.failing.is_empty()
    })
    .await;
    assert_eq!(
        timed_out.failing[0].error,
        Failure::Timeout(Duration::from_millis(300))
    );
    // The plane's own token was sent, and is nowhere in what is reported.
    assert!(
        refusing
            .seen()
            .iter()
            .all(|seen| { seen.authorization.as_deref() == Some(&format!("Bearer {secret}")) })
    );
    let everything = format!("{:?}", pusher.subscribe().borrow().clone());
    assert!(!everything.contains(secret), "{everything}");

    // Removing a plane drops its summary and stops its pushes.
    assert!(pusher.remove_plane(&refused_key));
    assert!(!pusher.remove_plane(&refused_key));
    assert_eq!(pusher.summary(&refused_key), None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = refusing.seen().len();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(refusing.seen().len(), before);
    assert!(pusher.summary(&healthy_key).is_some());
}

#[tokio::test]
async fn an_untrusted_certificate_or_another_name_fails_the_handshake() {
    let pki = Pki::new("plane ca");
    let stranger = Pki::new("another ca");
    let trusted = StandIn::start(pki.server_config(SERVER_NAME), "token-t").await;
    let untrusted = StandIn::start(stranger.server_config(SERVER_NAME), "token-t").await;
    let pusher = Pusher::new(settings()).unwrap();

    let wrong_name = PlaneKey::new("tenant-t", "wrong-name");
    let mut wrong = target(config(1), &[trusted.addr], "token-t", &pki);
    wrong.server_name = "culvert-other-config.tenant-t.svc".to_owned();
    pusher.set_plane(wrong_name.clone(), wrong).unwrap();
    let wrong_ca = PlaneKey::new("tenant-t", "wrong-ca");
    pusher
        .set_plane(
            wrong_ca.clone(),
            target(config(1), &[untrusted.addr], "token-t", &pki),
        )
        .unwrap();

    for key in [&wrong_name, &wrong_ca] {
        let summary = wait_for(&pusher, key, "a TLS failure", |summary| {
            !summary.failing.is_empty()
        })
        .await;
        let error = &summary.failing[0].error;
        assert!(matches!(error, Failure::Tls(_)), "{key}: {error}");
        assert_eq!(error.label(), "tls");
    }
    // Nothing got through to either.
    assert!(trusted.seen().is_empty());
    assert!(untrusted.seen().is_empty());
}

#[tokio::test]
async fn unusable_targets_are_refused() {
    let pki = Pki::new("plane ca");
    let pusher = Pusher::new(settings()).unwrap();
    let key = PlaneKey::new("tenant-x", "edge");
    let base = target(config(1), &[], "token-x", &pki);
    let cases = [
        (
            PlaneTarget {
                token: String::new(),
                ..base.clone()
            },
            Error::ConfigApiToken,
        ),
        (
            PlaneTarget {
                token: "line\nbreak".to_owned(),
                ..base.clone()
            },
            Error::ConfigApiToken,
        ),
        (
            PlaneTarget {
                server_name: "not a name".to_owned(),
                ..base.clone()
            },
            Error::ConfigApiServerName("not a name".to_owned()),
        ),
    ];
    for (target, expected) in cases {
        assert_eq!(pusher.set_plane(key.clone(), target).unwrap_err(), expected);
    }
    let no_ca = PlaneTarget {
        ca_pem: "no certificate here".to_owned(),
        ..base.clone()
    };
    assert!(matches!(
        pusher.set_plane(key.clone(), no_ca).unwrap_err(),
        Error::ConfigApiCa(_)
    ));
    assert_eq!(pusher.summary(&key), None);
    // The token is not in a target's debug form either.
    assert!(!format!("{base:?}").contains("token-x"));
}

#[tokio::test]
async fn an_answer_past_the_limit_or_not_json_is_unreadable() {
    let pki = Pki::new("plane ca");
    let tls = pki.server_config(SERVER_NAME);
    let big = vec![b'x'; MAX_ANSWER + 1];
    let mut oversized =
        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", big.len()).into_bytes();
    oversized.extend_from_slice(&big);
    let oversized = Raw::start(Arc::clone(&tls), oversized).await;
    let garbage = Raw::start(tls, b"this is not HTTP\r\n\r\n".to_vec()).await;
    let pusher = Pusher::new(settings()).unwrap();
    for (name, addr) in [("oversized", oversized.addr), ("garbage", garbage.addr)] {
        let key = PlaneKey::new("tenant-o", name);
        pusher
            .set_plane(key.clone(), target(config(1), &[addr], "token-o", &pki))
            .unwrap();
        let summary = wait_for(&pusher, &key, name, |summary| !summary.failing.is_empty()).await;
        let error = &summary.failing[0].error;
        assert!(matches!(error, Failure::Response(_)), "{name}: {error}");
        if name == "oversized" {
            assert!(error.to_string().contains("larger than"), "{error}");
        }
    }
}

#[test]
fn answers_are_classified_bounded_and_without_the_token() {
    let pki = Pki::new("plane ca");
    let token = "tok-3c1d9e";
    let client = Client::new(
        &target(config(1), &[], token, &pki),
        &PushSettings::default().crypto_provider,
    )
    .unwrap();
    let long = "y".repeat(5000);
    let echoed = format!(r#"{{"error": "bad header Bearer {token}"}}"#);
    let cases: Vec<(StatusCode, &str, Result<Reported, Failure>)> = vec![
        (
            StatusCode::OK,
            r#"{"version": 3, "hash": "ab", "ready": true}"#,
            Ok(Reported::serving(3, "ab")),
        ),
        (
            StatusCode::OK,
            r#"{"version": null, "hash": null, "ready": false}"#,
            Ok(Reported::empty()),
        ),
        (StatusCode::UNAUTHORIZED, "", Err(Failure::Unauthorized)),
        (
            StatusCode::CONFLICT,
            r#"{"error": "stale", "currentVersion": 12}"#,
            Err(Failure::Conflict {
                current_version: Some(12),
            }),
        ),
        (
            StatusCode::CONFLICT,
            "conflict",
            Err(Failure::Conflict {
                current_version: None,
            }),
        ),
        (
            StatusCode::BAD_REQUEST,
            r#"{"error": "unknown field `x`"}"#,
            Err(Failure::Refused {
                status: 400,
                reason: "unknown field `x`".to_owned(),
            }),
        ),
        (
            StatusCode::BAD_REQUEST,
            &echoed,
            Err(Failure::Refused {
                status: 400,
                reason: "bad header Bearer [token]".to_owned(),
            }),
        ),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "down",
            Err(Failure::Server {
                status: 503,
                reason: "down".to_owned(),
            }),
        ),
        (
            StatusCode::FOUND,
            "",
            Err(Failure::Response("unexpected status 302 Found".to_owned())),
        ),
    ];
    for (status, body, expected) in cases {
        assert_eq!(
            client.classify(status, body.as_bytes()),
            expected,
            "{status} {body}"
        );
    }
    let Err(Failure::Server { reason, .. }) =
        client.classify(StatusCode::BAD_GATEWAY, long.as_bytes())
    else {
        panic!("a 502 is a server error");
    };
    assert!(reason.len() < 600, "{}", reason.len());
    assert!(matches!(
        client.classify(StatusCode::OK, b"<html>"),
        Err(Failure::Response(_))
    ));
}

#[test]
fn the_pusher_needs_a_runtime() {
    assert_eq!(
        Pusher::new(PushSettings::default()).unwrap_err(),
        Error::NoRuntime
    );
}
