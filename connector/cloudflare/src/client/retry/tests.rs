use super::*;

const POLICY: RetryPolicy = RetryPolicy {
    max_attempts: 4,
    base_delay: Duration::from_millis(500),
    max_delay: Duration::from_secs(8),
    max_retry_after: Duration::from_secs(60),
};

#[test]
fn which_failures_are_retried_by_method() {
    let secs = Duration::from_secs;
    let cases = [
        (Method::GET, Failed::NotSent, true),
        (Method::POST, Failed::NotSent, true),
        (Method::POST, Failed::Throttled(Some(secs(2))), true),
        (Method::POST, Failed::Throttled(None), true),
        (Method::POST, Failed::ServerError, false),
        (Method::POST, Failed::Lost, false),
        (Method::GET, Failed::ServerError, true),
        (Method::PUT, Failed::ServerError, true),
        (Method::DELETE, Failed::Lost, true),
        (Method::GET, Failed::Throttled(Some(secs(61))), false),
        (Method::GET, Failed::Throttled(Some(secs(60))), true),
    ];
    for (method, failed, retried) in cases {
        assert_eq!(
            next_delay(&POLICY, &method, 1, failed, 0).is_some(),
            retried,
            "{method} {failed:?}"
        );
    }
}

#[test]
fn attempts_are_bounded() {
    assert!(next_delay(&POLICY, &Method::GET, 3, Failed::ServerError, 0).is_some());
    assert!(next_delay(&POLICY, &Method::GET, 4, Failed::ServerError, 0).is_none());
    let once = RetryPolicy {
        max_attempts: 1,
        ..POLICY
    };
    assert!(next_delay(&once, &Method::GET, 1, Failed::NotSent, 0).is_none());
}

#[test]
fn backoff_grows_is_capped_and_jittered_within_its_step() {
    let ms = Duration::from_millis;
    let policy = RetryPolicy {
        max_attempts: 100,
        ..POLICY
    };
    for (attempt, step) in [
        (1, 500),
        (2, 1000),
        (3, 2000),
        (4, 4000),
        (5, 8000),
        (30, 8000),
    ] {
        for random in [0, 1, 12_345_678_901, u64::MAX] {
            let delay =
                next_delay(&policy, &Method::GET, attempt, Failed::ServerError, random).unwrap();
            assert!(
                delay >= ms(step / 2) && delay < ms(step),
                "{attempt}: {delay:?}"
            );
        }
    }
}

#[test]
fn retry_after_is_waited_out_exactly() {
    let wait = next_delay(
        &POLICY,
        &Method::GET,
        1,
        Failed::Throttled(Some(Duration::from_secs(7))),
        99,
    );
    assert_eq!(wait, Some(Duration::from_secs(7)));
}

#[test]
fn retry_after_takes_whole_seconds_only() {
    let value = |s: &'static str| http::HeaderValue::from_static(s);
    assert_eq!(
        parse_retry_after(Some(&value(" 30 "))),
        Some(Duration::from_secs(30))
    );
    assert_eq!(parse_retry_after(Some(&value("-1"))), None);
    assert_eq!(parse_retry_after(Some(&value("soon"))), None);
    assert_eq!(parse_retry_after(None), None);
}
