//! Certificates from a real Pebble ACME server on loopback: HTTP-01 and TLS-ALPN-01
//! validations actually performed, chains checked against Pebble's issuing root, the
//! account reused across managers, renewal at two thirds of the lifetime, and a wrong
//! answer failing the order promptly. Needs `pebble` (`apt-get install pebble`); with
//! `CULVERT_SKIP_PEBBLE=1` and no `pebble`, each test says so and passes.
#![allow(clippy::unwrap_used, reason = "tests")]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

mod support;

use std::fs;
use std::time::{Duration, Instant};

use culvert_acme::{AcmeConfig, Action, ChallengeKind, Challenges, Error, Manager, Status};
use support::{
    FixedClock, Http01Responder, Pebble, TempDir, TlsAlpnResponder, mode, pebble_installed,
    verify_chain,
};

/// Pebble and both responders, sharing one set of challenge stores.
struct Rig {
    pebble: Pebble,
    challenges: Challenges,
    http01: Http01Responder,
    tls_alpn: TlsAlpnResponder,
    scratch: TempDir,
}

impl Rig {
    async fn start(test: &str) -> Self {
        let challenges = Challenges::new();
        let http01 = Http01Responder::start(challenges.clone()).await;
        let tls_alpn = TlsAlpnResponder::start(challenges.clone()).await;
        let pebble = Pebble::start(http01.port, tls_alpn.port);
        Self {
            pebble,
            challenges,
            http01,
            tls_alpn,
            scratch: TempDir::new(test),
        }
    }

    /// The state directory, which the manager creates.
    fn state(&self) -> std::path::PathBuf {
        self.scratch.path().join("state")
    }

    fn config(&self, names: &[&str], challenge: ChallengeKind) -> AcmeConfig {
        let mut config = AcmeConfig::new(
            self.pebble.directory_url.clone(),
            self.state(),
            names.iter().map(|n| (*n).to_owned()).collect(),
            challenge,
        );
        config.contacts = vec!["ops@culvert.test".to_owned()];
        config.trust = Some(self.pebble.tls_ca_pem.clone());
        config.system_roots = false;
        config.request_timeout = Duration::from_secs(10);
        config.order_timeout = Duration::from_secs(30);
        config
    }

    fn manager(&self, names: &[&str], challenge: ChallengeKind) -> Manager {
        Manager::new(self.config(names, challenge), self.challenges.clone()).unwrap()
    }

    fn account_file(&self) -> std::path::PathBuf {
        let accounts: Vec<_> = fs::read_dir(self.state())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                path.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("account-")
            })
            .collect();
        assert_eq!(accounts.len(), 1, "one account file: {accounts:?}");
        accounts[0].clone()
    }
}

#[tokio::test]
async fn http01_certificate_verifies_against_pebbles_root_and_is_stored_privately() {
    if !pebble_installed("http01") {
        return;
    }
    let rig = Rig::start("http01").await;
    let names = ["www.culvert.test", "culvert.test"];
    let manager = rig.manager(&names, ChallengeKind::Http01);
    let report = manager.renew_if_due().await.unwrap();

    assert!(
        matches!(report.action, Action::Obtained { .. }),
        "{report:?}"
    );
    // Pebble really fetched both answers over HTTP.
    let requests = rig.http01.requests();
    for name in names {
        assert!(
            requests
                .iter()
                .any(|r| r.starts_with(&format!("{name}/.well-known/acme-challenge/"))),
            "no HTTP-01 request for {name}: {requests:?}"
        );
    }
    assert!(rig.challenges.http01().is_empty(), "answers withdrawn");

    let paths = manager.paths();
    assert_eq!(paths.dir, rig.state().join("www.culvert.test"));
    let chain = fs::read(&paths.certificate).unwrap();
    let root = rig.pebble.issuing_root().await;
    for name in names {
        verify_chain(&chain, &root, name);
    }
    assert_eq!(mode(&paths.private_key), 0o600);
    assert_eq!(mode(&paths.certificate), 0o644);
    assert_eq!(mode(&rig.account_file()), 0o600);
    assert_eq!(mode(&rig.state()), 0o700);
    assert!(report.not_before < report.renew_at && report.renew_at < report.not_after);
}

#[tokio::test]
async fn tls_alpn01_certificate_verifies_against_pebbles_root() {
    if !pebble_installed("tls-alpn-01") {
        return;
    }
    let rig = Rig::start("tls-alpn").await;
    let manager = rig.manager(&["alpn.culvert.test"], ChallengeKind::TlsAlpn01);
    let report = manager.renew_if_due().await.unwrap();

    assert!(
        matches!(report.action, Action::Obtained { .. }),
        "{report:?}"
    );
    assert!(
        rig.tls_alpn
            .handshakes()
            .contains(&"alpn.culvert.test".to_owned()),
        "Pebble completed no acme-tls/1 handshake"
    );
    assert!(rig.http01.requests().is_empty(), "HTTP-01 was not used");
    assert!(rig.challenges.tls_alpn01().is_empty(), "answers withdrawn");
    let chain = fs::read(&manager.paths().certificate).unwrap();
    verify_chain(
        &chain,
        &rig.pebble.issuing_root().await,
        "alpn.culvert.test",
    );
}

#[tokio::test]
async fn the_account_is_created_once_and_reused_by_later_managers() {
    if !pebble_installed("account reuse") {
        return;
    }
    let rig = Rig::start("account").await;
    let first = rig.manager(&["one.culvert.test"], ChallengeKind::Http01);
    let Action::Obtained { account } = first.renew_if_due().await.unwrap().action else {
        panic!("the first run orders");
    };
    let account_file = rig.account_file();
    let stored = fs::read(&account_file).unwrap();

    // A new manager (as after a restart) for another name uses the same account.
    let second = rig.manager(&["two.culvert.test"], ChallengeKind::Http01);
    let Action::Obtained { account: again } = second.renew_if_due().await.unwrap().action else {
        panic!("a new name is ordered");
    };
    assert_eq!(again, account);
    assert_eq!(
        fs::read(&account_file).unwrap(),
        stored,
        "account file rewritten"
    );

    // And a restarted manager for the first name keeps its certificate.
    let restarted = rig.manager(&["one.culvert.test"], ChallengeKind::Http01);
    let before = fs::read(&restarted.paths().certificate).unwrap();
    assert_eq!(restarted.renew_if_due().await.unwrap().action, Action::Kept);
    assert_eq!(fs::read(&restarted.paths().certificate).unwrap(), before);
}

#[tokio::test]
async fn renews_past_two_thirds_of_the_lifetime_and_not_before() {
    if !pebble_installed("renewal") {
        return;
    }
    let rig = Rig::start("renewal").await;
    let names = ["renew.culvert.test"];
    let first = rig
        .manager(&names, ChallengeKind::Http01)
        .renew_if_due()
        .await
        .unwrap();
    let lifetime = first.not_after.duration_since(first.not_before).unwrap();
    let certificate = rig
        .manager(&names, ChallengeKind::Http01)
        .paths()
        .certificate
        .clone();
    let original = fs::read(&certificate).unwrap();

    // 60 % of the way through: kept, nothing ordered, the file untouched.
    let early = rig
        .manager(&names, ChallengeKind::Http01)
        .with_clock(FixedClock(first.not_before + lifetime.mul_f64(0.6)));
    let report = early.renew_if_due().await.unwrap();
    assert_eq!(report.action, Action::Kept);
    assert_eq!(report.renew_at, first.renew_at);
    assert_eq!(fs::read(&certificate).unwrap(), original);

    // 70 % of the way through: renewed, a different certificate that verifies.
    let late = rig
        .manager(&names, ChallengeKind::Http01)
        .with_clock(FixedClock(first.not_before + lifetime.mul_f64(0.7)));
    let report = late.renew_if_due().await.unwrap();
    assert!(
        matches!(report.action, Action::Obtained { .. }),
        "{report:?}"
    );
    let renewed = fs::read(&certificate).unwrap();
    assert_ne!(renewed, original);
    verify_chain(
        &renewed,
        &rig.pebble.issuing_root().await,
        "renew.culvert.test",
    );
}

#[tokio::test]
async fn a_wrong_http01_answer_fails_the_order_promptly_with_the_servers_reason() {
    if !pebble_installed("wrong answer") {
        return;
    }
    let rig = Rig::start("wrong").await;
    rig.http01.answer_wrongly_for("wrong.culvert.test");
    let manager = rig.manager(&["wrong.culvert.test"], ChallengeKind::Http01);

    let started = Instant::now();
    let err = manager.renew_if_due().await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "took {:?}",
        started.elapsed()
    );
    let Error::Validation { detail } = &err else {
        panic!("expected a validation error, got {err:?}");
    };
    assert!(detail.contains("wrong.culvert.test"), "{detail}");
    assert!(detail.contains("did not match"), "{detail}");
    assert!(!manager.paths().certificate.exists(), "nothing written");
    assert!(rig.challenges.http01().is_empty(), "answers withdrawn");
}

#[tokio::test]
async fn run_publishes_ready_then_stops_on_shutdown() {
    if !pebble_installed("run") {
        return;
    }
    let rig = Rig::start("run").await;
    let manager = rig.manager(&["run.culvert.test"], ChallengeKind::Http01);
    let mut status = manager.subscribe();
    assert_eq!(*status.borrow(), Status::Starting);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = async {
        manager
            .run(async {
                let _ = stopped.await;
            })
            .await;
    };
    let watching = async {
        let ready = tokio::time::timeout(
            Duration::from_secs(30),
            status.wait_for(|status| matches!(status, Status::Ready(_))),
        )
        .await
        .expect("ready within 30 s")
        .unwrap()
        .clone();
        stop.send(()).unwrap();
        ready
    };
    let ((), ready) = tokio::time::timeout(Duration::from_secs(40), async {
        tokio::join!(running, watching)
    })
    .await
    .expect("run returns after shutdown");
    let Status::Ready(report) = ready else {
        unreachable!()
    };
    assert!(matches!(report.action, Action::Obtained { .. }));
    assert!(manager.paths().certificate.exists());
}
