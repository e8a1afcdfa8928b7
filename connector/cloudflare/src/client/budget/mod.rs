//! The per-account request budget: at most `requests` requests start in any window of
//! `per`, across every caller of one client (and its [`with_token`] copies).
//!
//! It is a token bucket whose tokens come back one by one, each exactly one window after
//! it was spent, so the bound holds over every sliding window, not just on average: a
//! caller that finds no token waits for the oldest one to return and never goes over.
//! Cloudflare's global limit is 1200 requests per five minutes per user; the default
//! stays at that.
//!
//! [`with_token`]: crate::Client::with_token

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The most requests per window a budget may be configured with; it keeps one
/// timestamp per request in the window.
pub(crate) const MAX_REQUESTS: u32 = 100_000;

/// How many requests may start per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests per window, at least 1.
    pub requests: u32,
    /// The window.
    pub per: Duration,
}

impl Default for RateLimit {
    /// Cloudflare's global API limit: 1200 requests per 5 minutes.
    fn default() -> Self {
        Self {
            requests: 1200,
            per: Duration::from_secs(300),
        }
    }
}

/// The shared budget.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: RateLimit,
    /// When each request in the current window started, oldest first.
    spent: Mutex<VecDeque<Instant>>,
}

impl Budget {
    pub(crate) fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            spent: Mutex::new(VecDeque::new()),
        }
    }

    /// Waits until a request may start, and counts it.
    pub(crate) async fn acquire(&self) {
        loop {
            let wake = {
                let now = Instant::now();
                // A poisoned lock only means another caller panicked between two
                // queue operations, which leave the queue consistent.
                let mut spent = self
                    .spent
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                while spent
                    .front()
                    .is_some_and(|&start| start + self.limit.per <= now)
                {
                    spent.pop_front();
                }
                if spent.len() < self.limit.requests as usize {
                    spent.push_back(now);
                    return;
                }
                match spent.front() {
                    Some(&oldest) => oldest + self.limit.per,
                    None => return,
                }
            };
            tracing::debug!(
                wait_ms = wake.saturating_duration_since(Instant::now()).as_millis() as u64,
                "cloudflare request budget spent; waiting"
            );
            tokio::time::sleep_until(wake).await;
        }
    }
}

#[cfg(test)]
mod tests;
