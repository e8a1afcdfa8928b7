//! Go `time.ParseDuration`, for the `?delay=` query parameter.
//!
//! Accepts what Go accepts (`300ms`, `1.5h`, `2h45m`, `-1s`, `0`) with units `ns`,
//! `us`/`µs`/`μs`, `ms`, `s`, `m` and `h`, and rejects what Go rejects, including
//! anything above Go's maximum of `i64::MAX` nanoseconds. Negative durations come back
//! as zero: Go's `time.Sleep` returns at once for them.

use std::time::Duration;

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("time: invalid duration {0:?}")]
pub(super) struct InvalidDuration(String);

const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a Go duration string.
pub(super) fn parse(input: &str) -> Result<Duration, InvalidDuration> {
    let invalid = || InvalidDuration(input.to_owned());
    let (negative, mut rest) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_digits, after) = rest.split_at(int_len);
        let (frac_digits, after) = match after.strip_prefix('.') {
            Some(after) => {
                let len = after.bytes().take_while(u8::is_ascii_digit).count();
                after.split_at(len)
            }
            None => ("", after),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(invalid());
        }
        let unit_len = after
            .char_indices()
            .find(|&(_, c)| c == '.' || c.is_ascii_digit())
            .map_or(after.len(), |(i, _)| i);
        let (unit, after) = after.split_at(unit_len);
        let &(_, scale) = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .ok_or_else(invalid)?;
        let scale = u128::from(scale);
        let int: u128 = if int_digits.is_empty() {
            0
        } else {
            int_digits.parse().map_err(|_| invalid())?
        };
        let mut value = int.checked_mul(scale).ok_or_else(invalid)?;
        // Fractions beyond nanosecond precision cannot matter; Go drops them too.
        let mut place = scale;
        for digit in frac_digits.bytes().take(30) {
            place /= 10;
            value += u128::from(digit - b'0') * place;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > u128::from(i64::MAX.unsigned_abs()) {
            return Err(invalid());
        }
        rest = after;
    }
    if negative {
        return Ok(Duration::ZERO);
    }
    let nanos = u64::try_from(total).map_err(|_| invalid())?;
    Ok(Duration::from_nanos(nanos))
}
