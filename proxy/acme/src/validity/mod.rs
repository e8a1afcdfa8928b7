//! The validity period (notBefore, notAfter) of an X.509 certificate, read straight from
//! its DER. The input may come from the ACME server or a file anyone could have edited,
//! so every length is checked and nothing panics; only what RFC 5280 §4.1.2.5 allows is
//! accepted (UTCTime or GeneralizedTime, seconds present, `Z`).
//!
//! A full X.509 parser would do the same with a dozen more crates to build; this reads
//! five fields and skips the rest.

use std::time::{Duration, SystemTime};

use culvert_time::CivilDate;

/// When a certificate starts and stops being valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Validity {
    pub(crate) not_before: SystemTime,
    pub(crate) not_after: SystemTime,
}

/// Why a certificate's validity could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed certificate: {0}")]
pub(crate) struct Malformed(&'static str);

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// Reads notBefore and notAfter from a DER certificate.
pub(crate) fn validity(certificate: &[u8]) -> Result<Validity, Malformed> {
    let (certificate, _) = expect(certificate, SEQUENCE, "certificate")?;
    let (tbs, _) = expect(certificate, SEQUENCE, "tbsCertificate")?;
    let mut rest = tbs;
    if rest.first() == Some(&VERSION) {
        rest = element(rest)?.2;
    }
    let (_, rest) = expect(rest, INTEGER, "serialNumber")?;
    let (_, rest) = expect(rest, SEQUENCE, "signature")?;
    let (_, rest) = expect(rest, SEQUENCE, "issuer")?;
    let (validity, _) = expect(rest, SEQUENCE, "validity")?;
    let (tag, value, rest) = element(validity)?;
    let not_before = time(tag, value)?;
    let (tag, value, rest) = element(rest)?;
    let not_after = time(tag, value)?;
    if !rest.is_empty() {
        return Err(Malformed("validity has extra fields"));
    }
    Ok(Validity {
        not_before,
        not_after,
    })
}

/// One element with the given tag: its contents and what follows it.
fn expect<'a>(
    input: &'a [u8],
    tag: u8,
    what: &'static str,
) -> Result<(&'a [u8], &'a [u8]), Malformed> {
    let (found, value, rest) = element(input)?;
    if found != tag {
        return Err(Malformed(what));
    }
    Ok((value, rest))
}

/// One DER element: tag, contents, the bytes after it. Only single-byte tags and
/// definite lengths up to four bytes (enough for any certificate) are read.
fn element(input: &[u8]) -> Result<(u8, &[u8], &[u8]), Malformed> {
    let (&tag, input) = input.split_first().ok_or(Malformed("truncated"))?;
    if tag & 0x1f == 0x1f {
        return Err(Malformed("multi-byte tag"));
    }
    let (&first, mut input) = input.split_first().ok_or(Malformed("truncated"))?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 {
            return Err(Malformed("unsupported length"));
        }
        let (bytes, after) = input
            .split_at_checked(count)
            .ok_or(Malformed("truncated"))?;
        input = after;
        bytes
            .iter()
            .fold(0usize, |length, byte| (length << 8) | usize::from(*byte))
    };
    let (value, rest) = input
        .split_at_checked(length)
        .ok_or(Malformed("truncated"))?;
    Ok((tag, value, rest))
}

/// A UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`).
fn time(tag: u8, value: &[u8]) -> Result<SystemTime, Malformed> {
    let (year, rest) = match (tag, value.len()) {
        (UTC_TIME, 13) => {
            let yy = digits(&value[..2])?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &value[2..])
        }
        (GENERALIZED_TIME, 15) => (digits(&value[..4])?, &value[4..]),
        _ => return Err(Malformed("time is not UTCTime or GeneralizedTime in UTC")),
    };
    if rest[10] != b'Z' {
        return Err(Malformed("time is not in UTC"));
    }
    let month = digits(&rest[0..2])?;
    let day = digits(&rest[2..4])?;
    let hour = digits(&rest[4..6])?;
    let minute = digits(&rest[6..8])?;
    let second = digits(&rest[8..10])?;
    let date = u8::try_from(month)
        .ok()
        .zip(u8::try_from(day).ok())
        .and_then(|(month, day)| CivilDate::new(i64::from(year), month, day));
    let Some(date) = date.filter(|_| hour <= 23 && minute <= 59 && second <= 59) else {
        return Err(Malformed("time out of range"));
    };
    let seconds = date.to_days() * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    let offset = Duration::from_secs(seconds.unsigned_abs());
    let at = if seconds >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(offset)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(offset)
    };
    at.ok_or(Malformed("time not representable"))
}

fn digits(bytes: &[u8]) -> Result<u32, Malformed> {
    bytes.iter().try_fold(0u32, |value, byte| {
        if byte.is_ascii_digit() {
            Ok(value * 10 + u32::from(byte - b'0'))
        } else {
            Err(Malformed("time has a non-digit"))
        }
    })
}

#[cfg(test)]
mod tests;
