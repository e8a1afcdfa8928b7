//! The `Date` field of the responses a worker writes: the wall clock read here, in
//! the IO layer, and handed to the `culvert-wire` codec, which reads no clock. The
//! HTTP-date text is formatted at most once per second per worker thread.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Calls `write` with the current time as an HTTP-date (`Tue, 01 Dec 2026 00:00:00
/// GMT`).
pub(crate) fn with_http_date<R>(write: impl FnOnce(&[u8]) -> R) -> R {
    thread_local! {
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    // The worker owns the wall clock its answers are dated by.
    #[allow(clippy::disallowed_methods)]
    let now = SystemTime::now();
    let second = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    DATE.with_borrow_mut(|(cached, text)| {
        if *cached != second {
            *cached = second;
            *text = httpdate::fmt_http_date(now);
        }
        write(text.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods, reason = "compares with the real clock")]
    fn the_date_is_an_http_date_of_now() {
        let text = with_http_date(|date| String::from_utf8(date.to_vec()).unwrap());
        let parsed = httpdate::parse_http_date(&text).unwrap();
        let skew = SystemTime::now()
            .duration_since(parsed)
            .unwrap_or_default()
            .as_secs();
        assert!(skew <= 1, "{text}");
        assert!(text.ends_with(" GMT"), "{text}");
    }
}
