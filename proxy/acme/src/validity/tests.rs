use std::time::{Duration, SystemTime};

use proptest::prelude::*;

use super::*;

fn at(unix: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(unix)
}

fn certificate(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Vec<u8> {
    let mut params = rcgen::CertificateParams::new(vec!["example.com".to_owned()]).unwrap();
    params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
    params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().der().to_vec()
}

#[test]
fn reads_utc_and_generalized_times_from_a_real_certificate() {
    // 2030-01-01 is written as UTCTime, 2050-01-01 as GeneralizedTime (RFC 5280).
    let der = certificate((2030, 1, 1), (2050, 1, 1));
    let validity = validity(&der).unwrap();
    assert_eq!(validity.not_before, at(1_893_456_000));
    assert_eq!(validity.not_after, at(2_524_608_000));
}

#[test]
fn reads_a_leap_day() {
    let der = certificate((2024, 2, 29), (2024, 3, 1));
    let validity = validity(&der).unwrap();
    assert_eq!(validity.not_before, at(1_709_164_800));
    assert_eq!(
        validity
            .not_after
            .duration_since(validity.not_before)
            .unwrap(),
        Duration::from_secs(86_400)
    );
}

#[test]
fn parses_times_by_the_rules() {
    assert_eq!(time(UTC_TIME, b"700101000000Z"), Ok(at(0)));
    assert_eq!(time(UTC_TIME, b"491231235959Z"), Ok(at(2_524_607_999)));
    assert_eq!(time(GENERALIZED_TIME, b"19700101000001Z"), Ok(at(1)));
    assert_eq!(
        time(GENERALIZED_TIME, b"19691231235959Z"),
        Ok(SystemTime::UNIX_EPOCH - Duration::from_secs(1))
    );
    for (tag, bad) in [
        (UTC_TIME, &b"700101000000+"[..]),
        (UTC_TIME, b"7001010000Z"),
        (UTC_TIME, b"701301000000Z"),
        (UTC_TIME, b"700230000000Z"),
        (UTC_TIME, b"700101240000Z"),
        (UTC_TIME, b"70010100000aZ"),
        (GENERALIZED_TIME, b"700101000000Z"),
        (GENERALIZED_TIME, b"21000229000000Z"),
        (0x04, b"700101000000Z"),
    ] {
        assert!(
            time(tag, bad).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn refuses_what_is_not_a_certificate() {
    assert!(validity(b"").is_err());
    assert!(validity(&[0x30, 0x80, 0, 0]).is_err());
    assert!(validity(&[0x30, 0x85, 1, 1, 1, 1, 1]).is_err());
    let der = certificate((2030, 1, 1), (2031, 1, 1));
    assert!(validity(&der[..der.len() - 1]).is_err());
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = validity(&bytes);
    }

    #[test]
    fn never_panics_on_a_damaged_certificate(index in 0usize..300, byte in any::<u8>()) {
        let mut der = certificate((2030, 1, 1), (2031, 1, 1));
        let index = index % der.len();
        der[index] = byte;
        let _ = validity(&der);
    }

    #[test]
    fn days_agree_with_counting(days in 0i64..200_000) {
        let date = SystemTime::UNIX_EPOCH + Duration::from_secs(days as u64 * 86_400);
        // Walk forward from 1970-01-01 counting month lengths, the slow way.
        let (mut year, mut month, mut left) = (1970i64, 1u8, days);
        while left >= i64::from(culvert_time::days_in_month(year, month)) {
            left -= i64::from(culvert_time::days_in_month(year, month));
            month += 1;
            if month == 13 { month = 1; year += 1; }
        }
        let text = format!("{year:04}{month:02}{:02}000000Z", left + 1);
        prop_assert_eq!(time(GENERALIZED_TIME, text.as_bytes()), Ok(date));
    }
}
