use super::*;
use std::time::{Duration, UNIX_EPOCH};

#[test]
fn rfc3339_formats_known_instants() {
    let at = |secs: u64, millis: u64| {
        rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
    };
    assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
    // 2000-02-29 (a leap day in a century leap year) 12:34:56.789.
    assert_eq!(at(951_827_696, 789), "2000-02-29T12:34:56.789Z");
    // 2026-11-30 17:05:01.
    assert_eq!(at(1_796_058_301, 5), "2026-11-30T17:05:01.005Z");
}

#[test]
fn sampling_keeps_failures_and_the_asked_fraction() {
    let log = AccessLog::start(0.25).unwrap();
    assert!(log.wants(true, u64::MAX));
    let kept = (0..1000u64)
        .filter(|i| log.wants(false, i.wrapping_mul(u64::MAX / 1000)))
        .count();
    assert!((240..=260).contains(&kept), "{kept}");
    assert!(AccessLog::start(1.0).unwrap().wants(false, u64::MAX));
    assert!(!AccessLog::off().wants(true, 0));
}
