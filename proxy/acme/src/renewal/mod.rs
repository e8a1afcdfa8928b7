//! When to renew, decided from dates alone: no IO, no clock of its own. A certificate is
//! renewed once two thirds of its lifetime (notBefore to notAfter) have passed, which
//! leaves a third of it (30 days of a 90-day certificate) to retry failures in.

use std::time::{Duration, SystemTime};

use crate::Backoff;
use crate::validity::Validity;

/// The moment two thirds of the lifetime from `not_before` to `not_after` have passed.
/// A certificate whose end is not after its start is due at `not_before`.
pub fn renew_at(not_before: SystemTime, not_after: SystemTime) -> SystemTime {
    match not_after.duration_since(not_before) {
        Ok(lifetime) if !lifetime.is_zero() => not_before
            .checked_add(lifetime / 3 * 2)
            .unwrap_or(not_after),
        _ => not_before,
    }
}

/// What to do about one certificate at a given time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Keep the stored certificate until `renew_at`.
    Keep {
        validity: Validity,
        renew_at: SystemTime,
    },
    /// Order a certificate now, for the reason given.
    Obtain(Reason),
}

/// Why a certificate is ordered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Nothing is stored yet.
    Missing,
    /// What is stored cannot be used (unreadable, wrong names, no key).
    Unusable(String),
    /// The stored certificate is past two thirds of its lifetime.
    Due { renew_at: SystemTime },
}

/// The plan for a stored certificate (or its absence, or why it is unusable) at `now`.
pub(crate) fn plan(stored: Result<Option<Validity>, String>, now: SystemTime) -> Plan {
    match stored {
        Err(reason) => Plan::Obtain(Reason::Unusable(reason)),
        Ok(None) => Plan::Obtain(Reason::Missing),
        Ok(Some(validity)) => {
            let renew_at = renew_at(validity.not_before, validity.not_after);
            if now >= renew_at {
                Plan::Obtain(Reason::Due { renew_at })
            } else {
                Plan::Keep { validity, renew_at }
            }
        }
    }
}

/// The wait before the next attempt after `failures` failures in a row (at least one).
pub(crate) fn retry_delay(backoff: Backoff, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(31);
    backoff
        .initial
        .checked_mul(1u32 << doublings)
        .map_or(backoff.max, |delay| delay.min(backoff.max))
}

#[cfg(test)]
mod tests;
