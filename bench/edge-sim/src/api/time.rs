//! RFC 3339 timestamps (UTC, microseconds) for the API's `created_at` fields,
//! from the system clock.

use std::time::SystemTime;

/// Now, as `2026-12-05T03:36:32.123456Z`.
#[allow(
    clippy::disallowed_methods,
    reason = "the simulated API stamps what it creates on the real clock, as Cloudflare does"
)]
pub(crate) fn now_rfc3339() -> String {
    culvert_time::format_rfc3339(SystemTime::now(), culvert_time::Precision::Micros)
}
