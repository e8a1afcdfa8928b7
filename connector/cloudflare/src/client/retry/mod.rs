//! Whether and when a failed attempt is tried again. A pure function of the attempt's
//! outcome, the method and a random draw, so the rules are tested as a table.
//!
//! - A request the server never saw (the connection could not be made) is retried
//!   whatever its method.
//! - 429 is retried whatever the method too: Cloudflare refuses a throttled request
//!   before acting on it. Its `Retry-After` is waited out; one longer than
//!   [`RetryPolicy::max_retry_after`] ends the attempts instead, since retrying early
//!   would only be throttled again.
//! - A 5xx, a timeout or a connection lost mid-exchange is retried only for idempotent
//!   methods (GET, PUT, DELETE): a POST the server may have acted on is never repeated.
//! - Waits grow exponentially from [`RetryPolicy::base_delay`] up to
//!   [`RetryPolicy::max_delay`], each drawn between half and all of that step.

use std::time::Duration;

use http::Method;

/// How failed attempts are repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included (at least 1).
    pub max_attempts: u32,
    /// The first backoff step.
    pub base_delay: Duration,
    /// The largest backoff step.
    pub max_delay: Duration,
    /// The longest `Retry-After` waited out; a longer one ends the call with the 429.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// What went wrong with one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failed {
    /// No connection: the server never saw the request.
    NotSent,
    /// 429, with the `Retry-After` it carried.
    Throttled(Option<Duration>),
    /// A 5xx answer.
    ServerError,
    /// A timeout or a connection lost after the request may have been sent.
    Lost,
}

/// Whether `method` may be repeated after the server may have acted on it.
pub(crate) fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS
    )
}

/// How long to wait before the next attempt, or `None` to stop. `attempt` is the
/// number of the attempt that failed, from 1; `random` is any uniformly drawn value.
pub(crate) fn next_delay(
    policy: &RetryPolicy,
    method: &Method,
    attempt: u32,
    failed: Failed,
    random: u64,
) -> Option<Duration> {
    if attempt >= policy.max_attempts {
        return None;
    }
    let backoff = || {
        let step = policy
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(20))
            .min(policy.max_delay);
        let half = step / 2;
        let spread = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let extra = if spread == 0 { 0 } else { random % spread };
        half + Duration::from_nanos(extra)
    };
    match failed {
        Failed::NotSent => Some(backoff()),
        Failed::Throttled(Some(wait)) if wait > policy.max_retry_after => None,
        Failed::Throttled(Some(wait)) => Some(wait),
        Failed::Throttled(None) => Some(backoff()),
        Failed::ServerError | Failed::Lost if is_idempotent(method) => Some(backoff()),
        Failed::ServerError | Failed::Lost => None,
    }
}

/// Reads `Retry-After` as a whole number of seconds; anything else is ignored.
pub(crate) fn parse_retry_after(value: Option<&http::HeaderValue>) -> Option<Duration> {
    let text = value?.to_str().ok()?.trim();
    text.parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests;
