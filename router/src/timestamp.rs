//! RFC 3339 timestamps as Kubernetes writes them (`2024-05-01T12:00:00Z`, optional
//! fraction and offset), reduced to a number that orders routes oldest first.

/// Seconds since the Unix epoch (UTC), or an error saying why the text is not RFC 3339.
/// Fractions of a second are dropped.
pub fn parse_rfc3339(text: &str) -> Result<i64, String> {
    let bad = || format!("{text:?} is not an RFC 3339 timestamp");
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let num = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let part = text.get(range).ok_or_else(bad)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse().map_err(|_| bad())
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return Err(bad());
    }
    if second > 60 {
        return Err(bad());
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let rb = rest.as_bytes();
            let digits = |r: std::ops::Range<usize>| rb[r].iter().all(u8::is_ascii_digit);
            if rb.len() != 6 || !matches!(rb[0], b'+' | b'-') || rb[3] != b':' {
                return Err(bad());
            }
            if !digits(1..3) || !digits(4..6) {
                return Err(bad());
            }
            let hours: i64 = rest.get(1..3).ok_or_else(bad)?.parse().map_err(|_| bad())?;
            let minutes: i64 = rest.get(4..6).ok_or_else(bad)?.parse().map_err(|_| bad())?;
            let sign = if rb[0] == b'-' { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    Ok(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubernetes_timestamps() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_rfc3339("2024-03-01T00:00:00Z"), Ok(1_709_251_200));
        assert_eq!(
            parse_rfc3339("2024-03-01T01:00:00+01:00"),
            Ok(1_709_251_200)
        );
        assert_eq!(parse_rfc3339("2024-03-01T00:00:00.999Z"), Ok(1_709_251_200));
    }

    #[test]
    fn orders_by_instant_not_by_text() {
        let earlier = parse_rfc3339("2024-03-01T00:30:00+01:00");
        let later = parse_rfc3339("2024-03-01T00:00:00Z");
        assert!(earlier < later);
    }

    #[test]
    fn refuses_malformed_text() {
        for bad in [
            "",
            "2024-03-01",
            "2024-13-01T00:00:00Z",
            "2024-03-01T00:00:00",
            "2024-03-01T00:00:00+0100",
            "２０２４-03-01T00:00:00Z",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad:?} accepted");
        }
    }
}
