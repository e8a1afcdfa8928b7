use std::time::{Duration, SystemTime};

use super::*;

const DAY: u64 = 86_400;

fn day(n: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + n * DAY)
}

fn ninety_days() -> Validity {
    Validity {
        not_before: day(0),
        not_after: day(90),
    }
}

#[test]
fn renews_at_two_thirds_of_the_lifetime() {
    assert_eq!(renew_at(day(0), day(90)), day(60));
    assert_eq!(renew_at(day(10), day(16)), day(14));
    // Degenerate lifetimes are due at once.
    assert_eq!(renew_at(day(5), day(5)), day(5));
    assert_eq!(renew_at(day(5), day(1)), day(5));
}

#[test]
fn plans_by_the_date() {
    let table = [
        (day(0), false),
        (day(59), false),
        (day(60) - Duration::from_secs(1), false),
        (day(60), true),
        (day(89), true),
        (day(400), true),
    ];
    for (now, due) in table {
        let plan = plan(Ok(Some(ninety_days())), now);
        let expected = if due {
            Plan::Obtain(Reason::Due { renew_at: day(60) })
        } else {
            Plan::Keep {
                validity: ninety_days(),
                renew_at: day(60),
            }
        };
        assert_eq!(plan, expected, "at {now:?}");
    }
}

#[test]
fn plans_to_obtain_when_nothing_usable_is_stored() {
    assert_eq!(plan(Ok(None), day(0)), Plan::Obtain(Reason::Missing));
    assert_eq!(
        plan(Err("no key".to_owned()), day(0)),
        Plan::Obtain(Reason::Unusable("no key".to_owned()))
    );
}

#[test]
fn backoff_doubles_up_to_the_limit() {
    let backoff = Backoff {
        initial: Duration::from_secs(60),
        max: Duration::from_secs(600),
    };
    let delays: Vec<u64> = (1..=7).map(|n| retry_delay(backoff, n).as_secs()).collect();
    assert_eq!(delays, [60, 120, 240, 480, 600, 600, 600]);
    assert_eq!(retry_delay(backoff, 0).as_secs(), 60);
    assert_eq!(retry_delay(backoff, u32::MAX).as_secs(), 600);
}
