//! Gateway API durations (GEP-2257): one or more `<number><unit>` pairs with units
//! `h`, `m`, `s` and `ms`, such as `1h`, `1m30s` or `500ms`.

use std::time::Duration;

/// Longest duration accepted, as Gateway API's validation allows: 99999 hours.
const MAX: Duration = Duration::from_secs(99_999 * 3600);

/// Parses a Gateway API duration, refusing anything outside the GEP-2257 grammar.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.is_empty() {
        return Err("empty duration".to_owned());
    }
    let bytes = text.as_bytes();
    let mut total = Duration::ZERO;
    let mut at = 0;
    let mut parts = 0;
    while at < bytes.len() {
        let digits_start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        if at == digits_start || at - digits_start > 5 {
            return Err(format!("{text:?} is not a duration like \"1h2m3s4ms\""));
        }
        let number: u64 = text[digits_start..at]
            .parse()
            .map_err(|_| format!("{text:?} has a bad number"))?;
        let unit = match (bytes.get(at), bytes.get(at + 1)) {
            (Some(b'm'), Some(b's')) => {
                at += 2;
                Duration::from_millis(1)
            }
            (Some(b'h'), _) => {
                at += 1;
                Duration::from_secs(3600)
            }
            (Some(b'm'), _) => {
                at += 1;
                Duration::from_secs(60)
            }
            (Some(b's'), _) => {
                at += 1;
                Duration::from_secs(1)
            }
            _ => return Err(format!("{text:?} needs a unit of h, m, s or ms")),
        };
        parts += 1;
        if parts > 4 {
            return Err(format!("{text:?} has more than four parts"));
        }
        total = unit
            .checked_mul(u32::try_from(number).unwrap_or(u32::MAX))
            .and_then(|part| total.checked_add(part))
            .filter(|sum| *sum <= MAX)
            .ok_or_else(|| format!("{text:?} is longer than 99999h"))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_gep_2257_grammar() {
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_duration("1h2m3s4ms"),
            Ok(Duration::from_millis(3_723_004))
        );
    }

    #[test]
    fn refuses_what_is_outside_it() {
        for bad in [
            "",
            "10",
            "s",
            "1.5s",
            "-1s",
            "1d",
            "1h2m3s4ms5s",
            "123456s",
            "1 s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_duration("99999h1s").is_err());
    }
}
