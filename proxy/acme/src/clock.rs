//! Wall-clock time, injectable. Renewal decisions compare certificate dates with
//! [`Clock::now`], so a test can stand at any point of a certificate's life without waiting.

use std::fmt::Debug;
use std::time::SystemTime;

/// Where a [`Manager`](crate::Manager) reads the current time from.
pub trait Clock: Debug + Send + Sync + 'static {
    /// The current wall-clock time.
    fn now(&self) -> SystemTime;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(
        clippy::disallowed_methods,
        reason = "the system clock is this trait's one real implementation"
    )]
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}
