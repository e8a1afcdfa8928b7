//! Proving tunnel claims against a stand-in that answers the tunnel token endpoint as
//! Cloudflare does: the tunnel's own connector token for a credential with access,
//! 404 for a tunnel the account does not have, 401/403 for a bad credential, 503 in an
//! outage.

#![allow(clippy::unwrap_used, reason = "tests")]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use culvert_cloudflare::claims::{Outcome, prove};
use culvert_cloudflare::{ApiToken, ClaimProver, Proof};
use culvert_tunnel_proto::{TunnelToken, Uuid};
use serde_json::json;
use support::{Reply, Server, fast_retries};

const ACCOUNT: &str = "699d98642c564d2e855e9661899b7252";
const TUNNEL: [u8; 16] = [0x11; 16];
const SECRET: [u8; 32] = [0x5a; 32];

fn genuine() -> TunnelToken {
    TunnelToken {
        account_tag: ACCOUNT.to_owned(),
        tunnel_secret: SECRET.to_vec(),
        tunnel_id: Uuid::from_bytes(TUNNEL),
        endpoint: None,
    }
}

fn credential(name: &str) -> ApiToken {
    ApiToken::new(name).unwrap()
}

struct Cloudflare {
    server: Server,
    outage: Arc<AtomicBool>,
}

impl Cloudflare {
    async fn start() -> Self {
        let outage = Arc::new(AtomicBool::new(false));
        let down = outage.clone();
        let own_token_path = format!(
            "/accounts/{ACCOUNT}/cfd_tunnel/{}/token",
            Uuid::from_bytes(TUNNEL)
        );
        let server = Server::start(move |seen| {
            if down.load(Ordering::SeqCst) {
                return Reply::error(503, 0, "service unavailable");
            }
            match seen.authorization.as_deref() {
                Some("Bearer good") => {}
                Some("Bearer scoped") => {
                    return Reply::error(403, 9109, "Unauthorized to access requested resource");
                }
                _ => return Reply::error(401, 10000, "Authentication error"),
            }
            if seen.method == "GET" && seen.path() == own_token_path {
                Reply::ok(json!(genuine().encode()))
            } else {
                Reply::error(404, 1003, "Tunnel not found")
            }
        })
        .await;
        Self { server, outage }
    }

    fn prover(&self) -> ClaimProver {
        let client = self
            .server
            .builder()
            .retry(fast_retries(1))
            .build()
            .unwrap();
        ClaimProver::new(client)
    }

    fn requests(&self) -> usize {
        self.server.seen().len()
    }
}

#[tokio::test]
async fn a_genuine_token_is_confirmed_and_anything_else_refuted() {
    let cloudflare = Cloudflare::start().await;
    let client = cloudflare.server.client();
    let good = credential("good");
    assert_eq!(prove(&client, &genuine(), &good).await, Outcome::Confirmed);

    let mut other_secret = genuine();
    other_secret.tunnel_secret[31] ^= 1;
    let mut short_secret = genuine();
    short_secret.tunnel_secret.truncate(16);
    let mut other_tunnel = genuine();
    other_tunnel.tunnel_id = Uuid::from_bytes([0x22; 16]);
    let mut other_account = genuine();
    other_account.account_tag = "799d98642c564d2e855e9661899b7252".to_owned();
    for (name, forged) in [
        ("secret", other_secret),
        ("short secret", short_secret),
        ("tunnel", other_tunnel),
        ("account", other_account),
    ] {
        assert_eq!(
            prove(&client, &forged, &good).await,
            Outcome::Refuted,
            "{name}"
        );
    }
    // The check goes out with the claim's credential, not the client's own token.
    let seen = cloudflare.server.seen();
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer good"))
    );
}

#[tokio::test]
async fn an_account_tag_that_is_no_account_id_is_refused_without_asking() {
    let cloudflare = Cloudflare::start().await;
    let client = cloudflare.server.client();
    for tag in [
        "",
        "699D98642C564D2E855E9661899B7252",
        "../../user/tokens/verify",
    ] {
        let mut token = genuine();
        tag.clone_into(&mut token.account_tag);
        let outcome = prove(&client, &token, &credential("good")).await;
        assert_eq!(outcome, Outcome::Refuted, "{tag:?}");
    }
    assert_eq!(cloudflare.requests(), 0);
}

#[tokio::test]
async fn a_refused_credential_decides_nothing() {
    let cloudflare = Cloudflare::start().await;
    let prover = cloudflare.prover();
    for name in ["revoked", "scoped"] {
        let proof = prover.check_now(&genuine(), &credential(name)).await;
        assert_eq!(proof, Proof::Unchecked, "{name}");
    }
    // The same token with a working credential is a different claim, and confirmed.
    assert_eq!(
        prover.check_now(&genuine(), &credential("good")).await,
        Proof::Confirmed
    );
    assert_eq!(
        prover.proof(&genuine(), &credential("revoked")),
        Proof::Unchecked
    );
}

#[tokio::test]
async fn an_outage_keeps_a_confirmation_and_confirms_nothing_new() {
    let cloudflare = Cloudflare::start().await;
    let prover = cloudflare.prover();
    let good = credential("good");
    assert_eq!(prover.check_now(&genuine(), &good).await, Proof::Confirmed);
    cloudflare.outage.store(true, Ordering::SeqCst);
    assert_eq!(prover.check_now(&genuine(), &good).await, Proof::Confirmed);
    let mut forged = genuine();
    forged.tunnel_secret[0] ^= 1;
    assert_eq!(prover.check_now(&forged, &good).await, Proof::Unchecked);
    cloudflare.outage.store(false, Ordering::SeqCst);
    assert_eq!(prover.check_now(&forged, &good).await, Proof::Refuted);
    assert_eq!(prover.proof(&genuine(), &good), Proof::Confirmed);
}

#[tokio::test(start_paused = true)]
async fn due_checks_run_once_per_period_per_claim() {
    let cloudflare = Cloudflare::start().await;
    let prover = cloudflare.prover();
    let good = credential("good");
    let revoked = credential("revoked");
    let genuine = genuine();
    let mut forged = genuine.clone();
    forged.tunnel_secret[5] ^= 1;
    let claims = [(&genuine, &good), (&genuine, &revoked), (&forged, &good)];

    // Nothing known yet: every claim unchecked, every claim due.
    assert!(
        claims
            .iter()
            .all(|(t, c)| prover.proof(t, c) == Proof::Unchecked)
    );
    assert_eq!(prover.check_due(claims).await, 3);
    assert_eq!(cloudflare.requests(), 3);
    assert_eq!(prover.proof(&genuine, &good), Proof::Confirmed);
    assert_eq!(prover.proof(&genuine, &revoked), Proof::Unchecked);
    assert_eq!(prover.proof(&forged, &good), Proof::Refuted);

    // Right away nothing is due.
    assert_eq!(prover.check_due(claims).await, 0);
    // After 30 s only the unchecked claim is asked about again.
    tokio::time::advance(Duration::from_secs(30)).await;
    assert_eq!(prover.check_due(claims).await, 1);
    // After five minutes the refusal too.
    tokio::time::advance(Duration::from_secs(270)).await;
    assert_eq!(prover.check_due(claims).await, 2);
    assert_eq!(prover.proof(&forged, &good), Proof::Refuted);
    // After an hour the confirmation, which stays through an outage.
    tokio::time::advance(Duration::from_secs(3300)).await;
    cloudflare.outage.store(true, Ordering::SeqCst);
    assert_eq!(prover.check_due(claims).await, 3);
    assert_eq!(prover.proof(&genuine, &good), Proof::Confirmed);
    assert_eq!(prover.proof(&forged, &good), Proof::Refuted);
    assert_eq!(cloudflare.requests(), 9);
}

#[tokio::test]
async fn the_prover_can_be_shared_between_tasks() {
    let cloudflare = Cloudflare::start().await;
    let prover = Arc::new(cloudflare.prover());
    let checker = prover.clone();
    let task = tokio::spawn(async move {
        let token = genuine();
        let good = credential("good");
        checker.check_due([(&token, &good)]).await
    });
    assert_eq!(task.await.unwrap(), 1);
    assert_eq!(
        prover.proof(&genuine(), &credential("good")),
        Proof::Confirmed
    );
}
