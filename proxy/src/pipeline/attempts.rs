//! The attempts of a forwarded request: which endpoint each goes to, how long it
//! may take, and whether another follows.
//!
//! A rule's retry policy gives the attempts (`1 + attempts`), but only a buffered
//! body can be sent more than once: a streamed one gets a single attempt. A
//! connection failure is retried, a backend status only when the policy lists it,
//! an attempt that timed out never (its request may be in progress there). A retry
//! waits the policy's backoff, and is not made when the backoff would reach the
//! request's deadline.

use std::net::SocketAddr;
use std::time::Duration;

use culvert_router::config::Unavailable;
use culvert_router::rule::{Backend, Retry};
use http::StatusCode;

use super::failure::BackendFailure;

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttemptEnd {
    /// The backend answered with this status.
    Answered(StatusCode),
    /// The exchange failed (connect, protocol).
    Failed,
    /// The attempt's time ran out before the response head came.
    TimedOut,
}

/// The attempts one request gets under its rule's retry policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attempts<'r> {
    retry: Option<&'r Retry>,
}

impl<'r> Attempts<'r> {
    /// The attempts for a request under `retry`, whose body can be sent again
    /// (`replayable`: buffered, or none) or only once.
    pub(crate) fn new(retry: Option<&'r Retry>, replayable: bool) -> Self {
        Self {
            retry: retry.filter(|_| replayable),
        }
    }

    /// How many attempts there may be.
    pub(crate) fn total(&self) -> u32 {
        1 + self.retry.map_or(0, |retry| retry.attempts)
    }

    /// After attempt number `attempt` (from 1) ended as `end`, with `time_left`
    /// before the request's deadline (if it has one): the backoff to wait before
    /// the next attempt, or `None` when this attempt's outcome is the answer.
    pub(crate) fn retry_after(
        &self,
        attempt: u32,
        end: AttemptEnd,
        time_left: Option<Duration>,
    ) -> Option<Duration> {
        let retry = self.retry?;
        if attempt >= self.total() {
            return None;
        }
        let retryable = match end {
            AttemptEnd::Answered(status) => retry.codes.contains(&status.as_u16()),
            AttemptEnd::Failed => true,
            AttemptEnd::TimedOut => false,
        };
        let in_time = time_left.is_none_or(|left| retry.backoff < left);
        (retryable && in_time).then_some(retry.backoff)
    }
}

/// How long one attempt may wait for its response head: the rule's
/// `backendRequest` timeout, cut to what is left of the request's.
pub(crate) fn attempt_limit(
    backend_request: Option<Duration>,
    time_left: Option<Duration>,
) -> Option<Duration> {
    match (backend_request, time_left) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One endpoint of `backend` chosen by `random`, or why it has none to offer: an
/// invalid reference (500) or no endpoints (503).
pub(crate) fn pick_endpoint(backend: &Backend, random: u64) -> Result<SocketAddr, BackendFailure> {
    match backend.unavailable {
        Some(Unavailable::InvalidReference) => return Err(BackendFailure::InvalidBackend),
        Some(Unavailable::NoEndpoints) => return Err(BackendFailure::NoEndpoints),
        None => {}
    }
    let count = backend.endpoints.len() as u64;
    if count == 0 {
        return Err(BackendFailure::NoEndpoints);
    }
    usize::try_from(random % count)
        .ok()
        .and_then(|index| backend.endpoints.get(index).copied())
        .ok_or(BackendFailure::NoEndpoints)
}
