use std::net::TcpListener;
use std::path::PathBuf;

use super::*;
use crate::config::{Backoff, ChallengeKind};

#[derive(Debug)]
struct Fixed(SystemTime);

impl Clock for Fixed {
    fn now(&self) -> SystemTime {
        self.0
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "culvert-acme-manager-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A directory URL nothing listens on: any attempt to order fails at once.
fn unreachable_directory() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("https://127.0.0.1:{port}/dir")
}

fn config(state: &std::path::Path) -> AcmeConfig {
    let mut config = AcmeConfig::new(
        unreachable_directory(),
        state,
        vec!["keep.example".to_owned()],
        ChallengeKind::Http01,
    );
    let key = rcgen::KeyPair::generate().unwrap();
    let ca = rcgen::CertificateParams::new(Vec::<String>::new())
        .unwrap()
        .self_signed(&key)
        .unwrap();
    config.trust = Some(ca.pem());
    config.system_roots = false;
    config.request_timeout = Duration::from_secs(2);
    config.backoff = Backoff {
        initial: Duration::from_secs(7),
        max: Duration::from_secs(60),
    };
    config
}

#[tokio::test]
async fn keeps_a_stored_certificate_without_asking_the_server() {
    let state = scratch("keep");
    let manager = Manager::new(config(&state), Challenges::new()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["keep.example".to_owned()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2030, 1, 1);
    params.not_after = rcgen::date_time_ymd(2030, 4, 1);
    let certificate = params.self_signed(&key).unwrap();
    stored::store(
        manager.paths(),
        certificate.pem().as_bytes(),
        key.serialize_pem().as_bytes(),
    )
    .unwrap();

    let not_before = SystemTime::UNIX_EPOCH + Duration::from_secs(1_893_456_000);
    let not_after = not_before + Duration::from_secs(90 * 86_400);
    let manager = manager.with_clock(Fixed(not_before + Duration::from_secs(86_400)));
    let report = manager.renew_if_due().await.unwrap();
    assert_eq!(
        report,
        Report {
            action: Action::Kept,
            not_before,
            not_after,
            renew_at: not_before + Duration::from_secs(60 * 86_400),
        }
    );

    // Past the renewal time it must order, and the unreachable server makes that fail.
    let manager = manager.with_clock(Fixed(not_before + Duration::from_secs(61 * 86_400)));
    assert!(matches!(manager.renew_if_due().await, Err(Error::Acme(_))));
    std::fs::remove_dir_all(&state).unwrap();
}

#[tokio::test]
async fn run_reports_a_failure_with_its_cause_and_the_backoff_then_stops() {
    let state = scratch("fail");
    let manager = Manager::new(config(&state), Challenges::new()).unwrap();
    let mut status = manager.subscribe();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = manager.run(async {
        let _ = stopped.await;
    });
    let watch = async {
        let failed = status
            .wait_for(|status| matches!(status, Status::Failed { .. }))
            .await
            .unwrap()
            .clone();
        stop.send(()).unwrap();
        failed
    };
    let ((), failed) =
        tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(run, watch) })
            .await
            .expect("the round fails fast and run stops on shutdown");
    let Status::Failed {
        error,
        failures,
        retry_in,
    } = failed
    else {
        unreachable!()
    };
    assert_eq!(failures, 1);
    assert_eq!(retry_in, Duration::from_secs(7));
    // The causes are spelled out, not just "acme request failed".
    assert!(error.starts_with("acme request failed: "), "{error}");
    assert!(error.len() > "acme request failed: ".len() + 10, "{error}");
    let _ = std::fs::remove_dir_all(&state);
}
