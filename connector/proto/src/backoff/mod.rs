//! Reconnect delays (PROTOCOL.md §6.2): exponential with full jitter, as cloudflared does
//! (a random wait in `[0, base * 2^n)`, the exponent capped by its `--retries`).
//!
//! Pure and deterministic for a given seed: the randomness is a small SplitMix64
//! generator seeded by the caller, so tests can pin it. It never sleeps; the driver
//! owns the clock.

use std::time::Duration;

/// Backoff parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffConfig {
    /// The first window (cloudflared: 1 s).
    pub base: Duration,
    /// The cap on the exponent (cloudflared's `--retries`, default 5).
    pub max_exponent: u32,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            max_exponent: 5,
        }
    }
}

/// Produces jittered delays for consecutive failed attempts.
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    attempts: u32,
    state: u64,
}

impl Backoff {
    /// A backoff whose jitter is drawn from `seed`.
    pub fn new(config: BackoffConfig, seed: u64) -> Self {
        Self {
            config,
            attempts: 0,
            state: seed,
        }
    }

    /// How many delays were handed out since the last reset.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Starts over after a success.
    pub fn reset(&mut self) {
        self.attempts = 0;
    }

    /// The upper bound of the next delay's window.
    pub fn window(&self) -> Duration {
        let exponent = self.attempts.min(self.config.max_exponent).min(31);
        self.config.base.saturating_mul(1u32 << exponent)
    }

    /// The next delay: uniform in `[0, window)`, then the window doubles.
    pub fn next_delay(&mut self) -> Duration {
        let window = self.window();
        self.attempts = self.attempts.saturating_add(1);
        let nanos = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.next_u64() % nanos)
    }

    fn next_u64(&mut self) -> u64 {
        // SplitMix64: tiny, well distributed, good enough for jitter.
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests;
