//! Proving tunnel claims: does a connector token really hold the tunnel it names?
//!
//! Anyone can write a tunnel UUID into a token; only someone given the tunnel's token
//! has its secret. [`prove`] fetches the tunnel's own connector token with the
//! credential that will write the tunnel's configuration and compares account, tunnel
//! and secret (the secret in constant time):
//!
//! - an account tag that is not a Cloudflare account id is refuted before asking;
//! - the same three values: confirmed; a 404 or any difference: refuted (which one is
//!   logged at debug level, never the secret, and never told to the claimant);
//! - 401 or 403 says something about the credential, not the claim: unchecked;
//! - an outage (5xx, 429, timeout, no connection): unchecked, and a verdict Cloudflare
//!   gave earlier stands.
//!
//! [`ClaimVerdicts`] keeps the verdicts under a digest of token and credential
//! ([`ClaimKey`]) and decides when each is due again; it is pure (time is an argument).
//! [`ClaimProver`] joins it to a [`Client`]: a translator reads
//! [`ClaimProver::proof`] synchronously, and a reconcile loop calls
//! [`ClaimProver::check_due`] with the claims it holds to run the checks that are due.

mod verdicts;

use std::sync::{Mutex, MutexGuard, PoisonError};

use culvert_tunnel_proto::TunnelToken;

use crate::{AccountId, ApiToken, Client, TunnelId};
pub use verdicts::{
    CONFIRMED_FOR, ClaimKey, ClaimVerdicts, FORGET_AFTER, MAX_CLAIMS, Outcome, REFUTED_FOR,
    RETRY_EVERY,
};

/// How far Cloudflare has confirmed that a connector token holds the tunnel it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// The tunnel's own token carries the same account, tunnel and secret.
    Confirmed,
    /// Cloudflare answered, and the token does not hold that tunnel.
    Refuted,
    /// Not known (yet): never checked, an outage, or a credential Cloudflare refused.
    Unchecked,
}

/// Checks one claim now, without any cache.
pub async fn prove(client: &Client, token: &TunnelToken, credential: &ApiToken) -> Outcome {
    let tunnel = TunnelId::from(token.tunnel_id);
    let Ok(account) = token.account_tag.parse::<AccountId>() else {
        tracing::debug!(%tunnel, "tunnel claim refuted: the account tag is not an account id");
        return Outcome::Refuted;
    };
    let client = client.with_token(credential.clone());
    match client.tunnel_token_parsed(&account, &tunnel).await {
        Ok(own) => {
            let same_secret = aws_lc_rs::constant_time::verify_slices_are_equal(
                &own.tunnel_secret,
                &token.tunnel_secret,
            )
            .is_ok();
            let same_account = own.account_tag == token.account_tag;
            let same_tunnel = own.tunnel_id == token.tunnel_id;
            if same_secret && same_account && same_tunnel {
                tracing::debug!(%tunnel, %account, "tunnel claim confirmed");
                Outcome::Confirmed
            } else {
                tracing::debug!(
                    %tunnel,
                    %account,
                    same_account,
                    same_tunnel,
                    same_secret,
                    "tunnel claim refuted: the tunnel's own token differs"
                );
                Outcome::Refuted
            }
        }
        Err(error) if error.is_not_found() => {
            tracing::debug!(%tunnel, %account, "tunnel claim refuted: no such tunnel");
            Outcome::Refuted
        }
        Err(error) if error.is_auth() => {
            tracing::debug!(%tunnel, %account, %error, "tunnel claim unchecked: credential refused");
            Outcome::CredentialRefused
        }
        Err(error) => {
            tracing::debug!(%tunnel, %account, %error, "tunnel claim unchecked: no answer");
            Outcome::Unavailable
        }
    }
}

/// The cache of verdicts and the client that fills it.
#[derive(Debug)]
pub struct ClaimProver {
    client: Client,
    verdicts: Mutex<ClaimVerdicts>,
}

impl ClaimProver {
    /// A prover asking through `client` (its token is replaced by each claim's
    /// credential; the pool and the request budget are shared).
    pub fn new(client: Client) -> Self {
        Self {
            client,
            verdicts: Mutex::new(ClaimVerdicts::default()),
        }
    }

    /// What is known about the claim of `token` checked with `credential`. Never waits
    /// on Cloudflare.
    pub fn proof(&self, token: &TunnelToken, credential: &ApiToken) -> Proof {
        self.proof_of(&ClaimKey::new(token, credential))
    }

    /// What is known about the claim with this key.
    pub fn proof_of(&self, key: &ClaimKey) -> Proof {
        self.verdicts().proof(key)
    }

    /// Checks those of `claims` that are due (never known, expired, or a failed check
    /// more than [`RETRY_EVERY`] ago), one after the other, and forgets claims nobody
    /// asked about for [`FORGET_AFTER`]. Returns how many were checked.
    pub async fn check_due<'a>(
        &self,
        claims: impl IntoIterator<Item = (&'a TunnelToken, &'a ApiToken)>,
    ) -> usize {
        self.verdicts().prune(now());
        let mut checked = 0;
        for (token, credential) in claims {
            let key = ClaimKey::new(token, credential);
            {
                let mut verdicts = self.verdicts();
                let now = now();
                if !verdicts.is_due(&key, now) {
                    continue;
                }
                // Marked before asking, so a concurrent call skips this claim.
                verdicts.begin(&key, now);
            }
            let outcome = prove(&self.client, token, credential).await;
            self.verdicts().record(&key, outcome, now());
            checked += 1;
        }
        checked
    }

    /// Checks one claim now, due or not, and returns the proof it leaves.
    pub async fn check_now(&self, token: &TunnelToken, credential: &ApiToken) -> Proof {
        let key = ClaimKey::new(token, credential);
        self.verdicts().begin(&key, now());
        let outcome = prove(&self.client, token, credential).await;
        let mut verdicts = self.verdicts();
        verdicts.record(&key, outcome, now());
        verdicts.proof(&key)
    }

    fn verdicts(&self) -> MutexGuard<'_, ClaimVerdicts> {
        // Every change to the verdicts is one map operation, so a panic elsewhere
        // cannot leave them half-written.
        self.verdicts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The runtime's clock, so tests with paused time move it.
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

#[cfg(test)]
mod tests;
