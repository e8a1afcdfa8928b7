use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn at(seconds: u64, nanos: u32) -> SystemTime {
    UNIX_EPOCH + Duration::new(seconds, nanos)
}

#[test]
fn formats_at_each_precision() {
    assert_eq!(
        format_rfc3339(at(0, 0), Precision::Seconds),
        "1970-01-01T00:00:00Z"
    );
    assert_eq!(
        format_rfc3339(at(951_782_400, 5_000), Precision::Micros),
        "2000-02-29T00:00:00.000005Z"
    );
    assert_eq!(
        format_rfc3339(at(1_796_441_792, 0), Precision::Micros),
        "2026-12-05T03:36:32.000000Z"
    );
    assert_eq!(
        format_rfc3339(at(1_796_058_301, 123_900_000), Precision::Millis),
        "2026-11-30T17:05:01.123Z"
    );
    assert_eq!(
        format_rfc3339(UNIX_EPOCH - Duration::from_secs(5), Precision::Seconds),
        "1970-01-01T00:00:00Z"
    );
}

#[test]
fn parses_kubernetes_timestamps() {
    assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
    assert_eq!(parse_rfc3339("2024-03-01T00:00:00Z"), Ok(1_709_251_200));
    assert_eq!(
        parse_rfc3339("2024-03-01T01:00:00+01:00"),
        Ok(1_709_251_200)
    );
    assert_eq!(parse_rfc3339("2024-03-01 00:00:00.999z"), Ok(1_709_251_200));
    assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), Ok(-1));
    assert_eq!(parse_rfc3339("2016-12-31T23:59:60Z"), Ok(1_483_228_800));
}

#[test]
fn refuses_malformed_text() {
    for bad in [
        "",
        "2024-03-01",
        "2024-13-01T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-03-01T24:00:00Z",
        "2024-03-01T00:00:00",
        "2024-03-01T00:00:00.Z",
        "2024-03-01T00:00:00+0100",
        "2024-03-01T00:00:00+01:0x",
        "２０２４-03-01T00:00:00Z",
        "2024-03-01T00:00:00Zjunk",
    ] {
        assert!(parse_rfc3339(bad).is_err(), "{bad:?} accepted");
    }
    assert_eq!(
        parse_rfc3339("nope").unwrap_err().to_string(),
        "\"nope\" is not an RFC 3339 timestamp"
    );
}

proptest! {
    #[test]
    fn parse_reads_what_format_writes(
        seconds in 0_u64..253_402_300_800, // up to year 9999
        nanos in 0_u32..1_000_000_000,
    ) {
        for precision in [Precision::Seconds, Precision::Millis, Precision::Micros] {
            let text = format_rfc3339(at(seconds, nanos), precision);
            prop_assert_eq!(parse_rfc3339(&text), Ok(i64::try_from(seconds).unwrap()));
        }
    }

    #[test]
    fn parse_never_panics(text in "\\PC{0,40}") {
        let _ = parse_rfc3339(&text);
    }
}
