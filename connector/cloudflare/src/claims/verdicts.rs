//! The verdict cache, without IO or clock: every method that depends on time takes
//! `now`.
//!
//! A confirmation is reused for [`CONFIRMED_FOR`], a refusal for [`REFUTED_FOR`]; after
//! that the claim is due for a new check, and the old verdict stands until Cloudflare
//! answers it. An outage never replaces an answer; a credential Cloudflare refuses
//! (401/403) does, with "unchecked", because it leaves nothing proven. A claim whose
//! check failed is asked about again at most every [`RETRY_EVERY`], so an outage does
//! not multiply calls to an API already failing.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use culvert_tunnel_proto::TunnelToken;

use super::Proof;
use crate::ApiToken;

/// How long a confirmation is reused.
pub const CONFIRMED_FOR: Duration = Duration::from_secs(60 * 60);

/// How long a refusal is reused.
pub const REFUTED_FOR: Duration = Duration::from_secs(5 * 60);

/// The shortest time between two checks of one claim.
pub const RETRY_EVERY: Duration = Duration::from_secs(30);

/// A claim neither checked nor answered for this long is forgotten.
pub const FORGET_AFTER: Duration = Duration::from_secs(2 * 60 * 60);

/// The most claims remembered; past it the least recently active is forgotten.
pub const MAX_CLAIMS: usize = 10_000;

/// Domain separation for the claim digest.
const KEY_CONTEXT: &[u8] = b"culvert tunnel claim v1";

/// A claim's identity: SHA-256 over the token's account, tunnel and secret and the
/// credential, each length-prefixed. Holds neither secret, and cannot be turned back
/// into them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClaimKey([u8; 32]);

impl ClaimKey {
    /// The key of `token`'s claim checked with `credential`.
    pub fn new(token: &TunnelToken, credential: &ApiToken) -> Self {
        let mut context = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
        context.update(KEY_CONTEXT);
        for part in [
            token.account_tag.as_bytes(),
            token.tunnel_id.as_bytes().as_slice(),
            &token.tunnel_secret,
            credential.expose().as_bytes(),
        ] {
            context.update(&(part.len() as u64).to_be_bytes());
            context.update(part);
        }
        let mut key = [0u8; 32];
        key.copy_from_slice(context.finish().as_ref());
        Self(key)
    }
}

impl fmt::Debug for ClaimKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClaimKey(")?;
        for byte in &self.0[..6] {
            write!(f, "{byte:02x}")?;
        }
        f.write_str("…)")
    }
}

/// What one check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The tunnel's own token matches.
    Confirmed,
    /// The tunnel does not exist, its token differs, or the token's account tag is not
    /// an account id.
    Refuted,
    /// Cloudflare refused the credential (401/403).
    CredentialRefused,
    /// No usable answer: 5xx, 429, timeout, no connection, an answer that did not parse.
    Unavailable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Confirmed,
    Refuted,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Cloudflare's last answer and when it came.
    answer: Option<(Answer, Instant)>,
    /// When the last check started.
    attempted: Option<Instant>,
}

impl Entry {
    fn last_active(&self) -> Option<Instant> {
        let answered = self.answer.map(|(_, at)| at);
        answered.max(self.attempted)
    }
}

/// Verdicts by claim.
#[derive(Debug, Default)]
pub struct ClaimVerdicts {
    entries: HashMap<ClaimKey, Entry>,
}

impl ClaimVerdicts {
    /// What is known about a claim now: the last answer Cloudflare gave, or unchecked.
    pub fn proof(&self, key: &ClaimKey) -> Proof {
        match self.entries.get(key).and_then(|entry| entry.answer) {
            Some((Answer::Confirmed, _)) => Proof::Confirmed,
            Some((Answer::Refuted, _)) => Proof::Refuted,
            None => Proof::Unchecked,
        }
    }

    /// Whether the claim should be checked at `now`: never checked, its answer
    /// expired, or no answer; and no check started within [`RETRY_EVERY`].
    pub fn is_due(&self, key: &ClaimKey, now: Instant) -> bool {
        let Some(entry) = self.entries.get(key) else {
            return true;
        };
        if entry
            .attempted
            .is_some_and(|at| now.saturating_duration_since(at) < RETRY_EVERY)
        {
            return false;
        }
        match entry.answer {
            None => true,
            Some((Answer::Confirmed, at)) => now.saturating_duration_since(at) >= CONFIRMED_FOR,
            Some((Answer::Refuted, at)) => now.saturating_duration_since(at) >= REFUTED_FOR,
        }
    }

    /// Notes that a check of the claim starts at `now`.
    pub fn begin(&mut self, key: &ClaimKey, now: Instant) {
        self.entry(key).attempted = Some(now);
    }

    /// Records what a check found at `now`.
    pub fn record(&mut self, key: &ClaimKey, outcome: Outcome, now: Instant) {
        let entry = self.entry(key);
        // The next check waits RETRY_EVERY from the end of this one.
        entry.attempted = Some(now);
        match outcome {
            Outcome::Confirmed => entry.answer = Some((Answer::Confirmed, now)),
            Outcome::Refuted => entry.answer = Some((Answer::Refuted, now)),
            Outcome::CredentialRefused => entry.answer = None,
            Outcome::Unavailable => {}
        }
    }

    /// Forgets claims with no check or answer in the last [`FORGET_AFTER`].
    pub fn prune(&mut self, now: Instant) {
        self.entries.retain(|_, entry| {
            entry
                .last_active()
                .is_some_and(|at| now.saturating_duration_since(at) < FORGET_AFTER)
        });
    }

    /// How many claims are remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no claim is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn entry(&mut self, key: &ClaimKey) -> &mut Entry {
        if !self.entries.contains_key(key) && self.entries.len() >= MAX_CLAIMS {
            let stalest = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.last_active())
                .map(|(key, _)| *key);
            if let Some(stalest) = stalest {
                self.entries.remove(&stalest);
            }
        }
        self.entries.entry(*key).or_insert(Entry {
            answer: None,
            attempted: None,
        })
    }
}
