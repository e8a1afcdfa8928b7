use proptest::prelude::*;

use super::*;

fn date(year: i64, month: u8, day: u8) -> CivilDate {
    CivilDate::new(year, month, day).unwrap()
}

#[test]
fn known_days() {
    assert_eq!(CivilDate::from_days(0), date(1970, 1, 1));
    assert_eq!(CivilDate::from_days(-1), date(1969, 12, 31));
    assert_eq!(CivilDate::from_days(11_016), date(2000, 2, 29));
    assert_eq!(utc_date(951_782_400), date(2000, 2, 29));
    assert_eq!(utc_date(1_796_441_792), date(2026, 12, 5));
    assert_eq!(date(2024, 3, 1).to_days() * 86_400, 1_709_251_200);
    assert_eq!(date(1950, 1, 1).to_days(), -7305);
}

#[test]
fn dates_that_do_not_exist_are_refused() {
    assert_eq!(CivilDate::new(2023, 2, 29), None);
    assert_eq!(CivilDate::new(1900, 2, 29), None);
    assert!(CivilDate::new(2000, 2, 29).is_some());
    assert_eq!(CivilDate::new(2024, 13, 1), None);
    assert_eq!(CivilDate::new(2024, 4, 31), None);
    assert_eq!(CivilDate::new(2024, 1, 0), None);
}

#[test]
fn consecutive_days_are_consecutive_dates() {
    let mut previous = CivilDate::from_days(-800_000);
    for days in -799_999..800_000 {
        let next = CivilDate::from_days(days);
        assert!(next > previous, "{previous:?} then {next:?}");
        assert!(CivilDate::new(next.year, next.month, next.day).is_some());
        previous = next;
    }
}

proptest! {
    #[test]
    fn days_round_trip(days in -(1_i64 << 40)..(1_i64 << 40)) {
        prop_assert_eq!(CivilDate::from_days(days).to_days(), days);
    }

    #[test]
    fn dates_round_trip(year in -100_000_i64..100_000, month in 1_u8..=12, day in 1_u8..=31) {
        if let Some(date) = CivilDate::new(year, month, day) {
            prop_assert_eq!(CivilDate::from_days(date.to_days()), date);
        }
    }
}
