//! The verdict cache as a table over time.

#![allow(
    clippy::disallowed_methods,
    reason = "tests give the verdict cache real instants"
)]

use std::time::{Duration, Instant};

use culvert_tunnel_proto::{TunnelToken, Uuid};

use super::*;

fn token(secret: &[u8]) -> TunnelToken {
    TunnelToken {
        account_tag: "699d98642c564d2e855e9661899b7252".to_owned(),
        tunnel_secret: secret.to_vec(),
        tunnel_id: Uuid::from_bytes([7; 16]),
        endpoint: None,
    }
}

fn credential(text: &str) -> ApiToken {
    ApiToken::new(text).unwrap()
}

fn key() -> ClaimKey {
    ClaimKey::new(
        &token(b"secret-0123456789-0123456789-0123"),
        &credential("cred"),
    )
}

const S: fn(u64) -> Duration = Duration::from_secs;

#[test]
fn keys_differ_by_every_part_and_hold_no_secret() {
    let base = key();
    assert_eq!(base, key());
    let mut other_account = token(b"secret-0123456789-0123456789-0123");
    other_account.account_tag = "799d98642c564d2e855e9661899b7252".to_owned();
    let mut other_tunnel = token(b"secret-0123456789-0123456789-0123");
    other_tunnel.tunnel_id = Uuid::from_bytes([8; 16]);
    let others = [
        ClaimKey::new(&other_account, &credential("cred")),
        ClaimKey::new(&other_tunnel, &credential("cred")),
        ClaimKey::new(
            &token(b"secret-0123456789-0123456789-0124"),
            &credential("cred"),
        ),
        ClaimKey::new(
            &token(b"secret-0123456789-0123456789-0123"),
            &credential("cred2"),
        ),
    ];
    for other in others {
        assert_ne!(base, other);
    }
    // Length prefixes: moving a byte between secret and credential changes the key.
    assert_ne!(
        ClaimKey::new(&token(b"ab"), &credential("c")),
        ClaimKey::new(&token(b"a"), &credential("bc"))
    );
    let printed = format!("{base:?}");
    assert!(
        !printed.contains("secret") && !printed.contains("cred"),
        "{printed}"
    );
}

/// One step of a table: at `at` seconds, either a check ends with `outcome` (begun at
/// the same time), or nothing happens; then the expected proof and due-ness.
struct Step {
    at: u64,
    outcome: Option<Outcome>,
    proof: Proof,
    due: bool,
}

fn run(name: &str, steps: &[Step]) {
    let start = Instant::now();
    let mut verdicts = ClaimVerdicts::default();
    let key = key();
    for (i, step) in steps.iter().enumerate() {
        let now = start + S(step.at);
        if let Some(outcome) = step.outcome {
            verdicts.begin(&key, now);
            verdicts.record(&key, outcome, now);
        }
        assert_eq!(
            verdicts.proof(&key),
            step.proof,
            "{name} step {i} (t={})",
            step.at
        );
        assert_eq!(
            verdicts.is_due(&key, now),
            step.due,
            "{name} step {i} (t={})",
            step.at
        );
    }
}

fn step(at: u64, outcome: Option<Outcome>, proof: Proof, due: bool) -> Step {
    Step {
        at,
        outcome,
        proof,
        due,
    }
}

#[test]
fn an_unknown_claim_is_unchecked_and_due() {
    let verdicts = ClaimVerdicts::default();
    assert_eq!(verdicts.proof(&key()), Proof::Unchecked);
    assert!(verdicts.is_due(&key(), Instant::now()));
}

#[test]
fn a_confirmation_lasts_an_hour_then_is_rechecked() {
    use Outcome::*;
    run(
        "confirm",
        &[
            step(0, Some(Confirmed), Proof::Confirmed, false),
            step(3599, None, Proof::Confirmed, false),
            step(3600, None, Proof::Confirmed, true),
            step(3600, Some(Confirmed), Proof::Confirmed, false),
            step(7199, None, Proof::Confirmed, false),
            step(7200, Some(Refuted), Proof::Refuted, false),
            step(7200 + 299, None, Proof::Refuted, false),
            step(7200 + 300, None, Proof::Refuted, true),
            step(7200 + 300, Some(CredentialRefused), Proof::Unchecked, false),
        ],
    );
}

#[test]
fn a_refusal_lasts_five_minutes_and_a_fix_is_seen_after() {
    use Outcome::*;
    run(
        "refute",
        &[
            step(0, Some(Refuted), Proof::Refuted, false),
            step(299, None, Proof::Refuted, false),
            step(300, None, Proof::Refuted, true),
            step(300, Some(Confirmed), Proof::Confirmed, false),
        ],
    );
}

#[test]
fn a_refused_credential_decides_nothing_and_is_retried_every_30_s() {
    use Outcome::*;
    run(
        "401",
        &[
            step(0, Some(CredentialRefused), Proof::Unchecked, false),
            step(29, None, Proof::Unchecked, false),
            step(30, None, Proof::Unchecked, true),
            step(30, Some(CredentialRefused), Proof::Unchecked, false),
            step(60, Some(Confirmed), Proof::Confirmed, false),
            // A 401 after a confirmation takes it away: the credential proves nothing.
            step(3660, Some(CredentialRefused), Proof::Unchecked, false),
        ],
    );
}

#[test]
fn an_outage_keeps_a_confirmation_and_confirms_nothing_new() {
    use Outcome::*;
    run(
        "outage",
        &[
            step(0, Some(Confirmed), Proof::Confirmed, false),
            step(3600, Some(Unavailable), Proof::Confirmed, false),
            step(3629, None, Proof::Confirmed, false),
            step(3630, None, Proof::Confirmed, true),
            step(3630, Some(Unavailable), Proof::Confirmed, false),
            // Hours into the outage, still confirmed, still retried every 30 s.
            step(20_000, Some(Unavailable), Proof::Confirmed, false),
            step(20_030, None, Proof::Confirmed, true),
            step(20_030, Some(Refuted), Proof::Refuted, false),
        ],
    );
    run(
        "new claim in an outage",
        &[
            step(0, Some(Unavailable), Proof::Unchecked, false),
            step(15, None, Proof::Unchecked, false),
            step(30, None, Proof::Unchecked, true),
            step(30, Some(Unavailable), Proof::Unchecked, false),
        ],
    );
    run(
        "refusal in an outage",
        &[
            step(0, Some(Refuted), Proof::Refuted, false),
            step(300, Some(Unavailable), Proof::Refuted, false),
            step(330, None, Proof::Refuted, true),
        ],
    );
}

#[test]
fn a_check_in_flight_is_not_started_twice() {
    let start = Instant::now();
    let mut verdicts = ClaimVerdicts::default();
    verdicts.begin(&key(), start);
    assert!(!verdicts.is_due(&key(), start + S(29)));
    assert!(verdicts.is_due(&key(), start + S(30)));
}

#[test]
fn idle_claims_are_forgotten_and_the_cache_is_bounded() {
    let start = Instant::now();
    let mut verdicts = ClaimVerdicts::default();
    verdicts.record(&key(), Outcome::Confirmed, start);
    verdicts.prune(start + FORGET_AFTER - S(1));
    assert_eq!(verdicts.proof(&key()), Proof::Confirmed);
    verdicts.prune(start + FORGET_AFTER);
    assert_eq!(verdicts.proof(&key()), Proof::Unchecked);
    assert!(verdicts.is_empty());

    for i in 0..=MAX_CLAIMS as u64 {
        let claim = ClaimKey::new(&token(&i.to_be_bytes()), &credential("cred"));
        verdicts.record(&claim, Outcome::Refuted, start + Duration::from_millis(i));
    }
    assert_eq!(verdicts.len(), MAX_CLAIMS);
    let oldest = ClaimKey::new(&token(&0u64.to_be_bytes()), &credential("cred"));
    assert_eq!(verdicts.proof(&oldest), Proof::Unchecked);
    let newest = ClaimKey::new(
        &token(&(MAX_CLAIMS as u64).to_be_bytes()),
        &credential("cred"),
    );
    assert_eq!(verdicts.proof(&newest), Proof::Refuted);
}
