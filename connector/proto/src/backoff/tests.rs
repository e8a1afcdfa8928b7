use std::time::Duration;

use super::{Backoff, BackoffConfig};

fn config() -> BackoffConfig {
    BackoffConfig {
        base: Duration::from_millis(100),
        max_exponent: 3,
    }
}

#[test]
fn delays_stay_inside_a_doubling_window_capped_by_the_exponent() {
    let mut backoff = Backoff::new(config(), 7);
    let windows = [100, 200, 400, 800, 800, 800];
    for window in windows {
        assert_eq!(backoff.window(), Duration::from_millis(window));
        let delay = backoff.next_delay();
        assert!(
            delay < Duration::from_millis(window),
            "{delay:?} >= {window} ms"
        );
    }
    assert_eq!(backoff.attempts(), 6);
}

#[test]
fn reset_starts_from_the_base_window() {
    let mut backoff = Backoff::new(config(), 1);
    backoff.next_delay();
    backoff.next_delay();
    backoff.reset();
    assert_eq!(backoff.attempts(), 0);
    assert_eq!(backoff.window(), Duration::from_millis(100));
}

#[test]
fn the_same_seed_gives_the_same_delays_and_jitter_varies() {
    let run = |seed| {
        let mut b = Backoff::new(config(), seed);
        (0..8).map(|_| b.next_delay()).collect::<Vec<_>>()
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
    let delays = run(9);
    assert!(delays.windows(2).any(|w| w[0] != w[1]));
}

#[test]
fn a_zero_base_never_waits() {
    let mut backoff = Backoff::new(
        BackoffConfig {
            base: Duration::ZERO,
            max_exponent: 5,
        },
        3,
    );
    assert_eq!(backoff.next_delay(), Duration::ZERO);
}
