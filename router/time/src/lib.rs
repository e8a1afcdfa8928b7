//! Calendar arithmetic for every Culvert crate, once: the proleptic Gregorian date of a
//! day count since 1970-01-01 and back ([`CivilDate`], Howard Hinnant's algorithms),
//! and RFC 3339 UTC text ([`format_rfc3339`], [`parse_rfc3339`]). HTTP-dates (`Date`,
//! `Retry-After`) are the `httpdate` crate's, already a dependency and exactly that.
//!
//! Why not `jiff` or `time`: Culvert needs days↔dates and one timestamp shape, about a
//! hundred lines; a full time-zone-aware library would add a dependency tree for
//! nothing it uses. This crate depends on nothing but `thiserror`.
//!
//! It never reads a clock: every function takes the instant it works on, so the
//! sans-IO crates can use it and the callers own `SystemTime::now()`.
//!
//! Start at [`CivilDate::from_days`] and [`format_rfc3339`].

#![forbid(unsafe_code)]

mod civil;
mod rfc3339;

pub use civil::{CivilDate, SECONDS_PER_DAY, days_in_month, utc_date};
pub use rfc3339::{NotRfc3339, Precision, format_rfc3339, parse_rfc3339};
