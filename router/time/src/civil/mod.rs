//! Civil (proleptic Gregorian) dates and day counts since 1970-01-01, both ways.

/// Seconds in a UTC day (no leap seconds, as Unix time counts).
pub const SECONDS_PER_DAY: u64 = 86_400;

/// A proleptic Gregorian date: year, month 1–12, day 1–31 (as the month allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CivilDate {
    /// The year (astronomical: year 0 is 1 BC).
    pub year: i64,
    /// The month, 1 to 12.
    pub month: u8,
    /// The day of the month, 1 to [`days_in_month`].
    pub day: u8,
}

impl CivilDate {
    /// The date `year-month-day`, or `None` when the month or day does not exist.
    pub fn new(year: i64, month: u8, day: u8) -> Option<Self> {
        ((1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month))
            .then_some(Self { year, month, day })
    }

    /// The date `days` days after 1970-01-01 (before it when negative); Hinnant's
    /// `civil_from_days`. Defined for any `days` within ±2^60.
    pub fn from_days(days: i64) -> Self {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let day_of_era = z.rem_euclid(146_097);
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let mp = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        Self {
            year: year_of_era + era * 400 + i64::from(month <= 2),
            // 1..=12 and 1..=31 by construction.
            month: u8::try_from(month).unwrap_or(1),
            day: u8::try_from(day).unwrap_or(1),
        }
    }

    /// Days since 1970-01-01 (negative before it); Hinnant's `days_from_civil`.
    pub fn to_days(self) -> i64 {
        let month = i64::from(self.month);
        let year = self.year - i64::from(month <= 2);
        let era = year.div_euclid(400);
        let year_of_era = year - era * 400;
        let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + i64::from(self.day) - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        era * 146_097 + day_of_era - 719_468
    }
}

/// The UTC date of Unix time `seconds`.
pub fn utc_date(seconds: u64) -> CivilDate {
    // u64 seconds / 86 400 fits an i64.
    CivilDate::from_days(i64::try_from(seconds / SECONDS_PER_DAY).unwrap_or(i64::MAX / 2))
}

/// Days in `month` (1–12) of `year`; 31 for a month out of range.
pub fn days_in_month(year: i64, month: u8) -> u8 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

#[cfg(test)]
mod tests;
