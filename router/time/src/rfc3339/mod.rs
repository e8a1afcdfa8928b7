//! RFC 3339 timestamps in UTC: formatted at a chosen precision (what the access log,
//! the simulated Cloudflare API and the fake API server write), and parsed, with any
//! fraction and offset, to Unix seconds (what Kubernetes writes in
//! `creationTimestamp`, ordered by the router).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::civil::{CivilDate, SECONDS_PER_DAY};

/// How many digits of the second [`format_rfc3339`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// Whole seconds: `2026-12-05T03:36:32Z` (Kubernetes `metav1.Time`).
    Seconds,
    /// Milliseconds: `2026-12-05T03:36:32.123Z`.
    Millis,
    /// Microseconds: `2026-12-05T03:36:32.123456Z`.
    Micros,
}

/// `time` as RFC 3339 UTC (`Z`) at `precision`; an instant before 1970 is written as
/// 1970-01-01T00:00:00Z.
pub fn format_rfc3339(time: SystemTime, precision: Precision) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let date = crate::civil::utc_date(seconds);
    let of_day = seconds % SECONDS_PER_DAY;
    let (year, month, day) = (date.year, date.month, date.day);
    let (hour, minute, second) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    let head = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    match precision {
        Precision::Seconds => format!("{head}Z"),
        Precision::Millis => format!("{head}.{:03}Z", since.subsec_millis()),
        Precision::Micros => format!("{head}.{:06}Z", since.subsec_micros()),
    }
}

/// Text that is not an RFC 3339 timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 timestamp")]
pub struct NotRfc3339 {
    /// The text refused.
    pub text: String,
}

/// Seconds since the Unix epoch (UTC) of an RFC 3339 timestamp such as
/// `2024-05-01T12:00:00Z` or `2024-05-01T14:00:00.5+02:00`. The separator may be
/// `T`, `t` or a space; a fraction of a second is dropped; second 60 (a leap second)
/// is taken as the next second's start.
pub fn parse_rfc3339(text: &str) -> Result<i64, NotRfc3339> {
    parse(text).ok_or_else(|| NotRfc3339 {
        text: text.to_owned(),
    })
}

fn parse(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = number(b, 0..4)?;
    let month = u8::try_from(number(b, 5..7)?).ok()?;
    let day = u8::try_from(number(b, 8..10)?).ok()?;
    let (hour, minute, second) = (number(b, 11..13)?, number(b, 14..16)?, number(b, 17..19)?);
    let date = CivilDate::new(year, month, day)?;
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &b[19..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (hours, minutes) = (number(rest, 1..3)?, number(rest, 4..6)?);
            let sign = if *sign == b'-' { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    Some(date.to_days() * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// The ASCII digits at `range` as a number.
fn number(bytes: &[u8], range: std::ops::Range<usize>) -> Option<i64> {
    let digits = bytes.get(range)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0, |value, digit| value * 10 + i64::from(digit - b'0')),
    )
}

#[cfg(test)]
mod tests;
