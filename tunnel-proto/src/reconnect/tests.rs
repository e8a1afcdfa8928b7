use std::time::Duration;

use super::{Dial, Edge, Ended, Next, Reconnect, Start};
use crate::backoff::BackoffConfig;
use crate::registration::RegistrationError;

const BACKOFF: BackoffConfig = BackoffConfig {
    base: Duration::from_millis(100),
    max_exponent: 3,
};

const DIAL_FAILED: Ended = Ended::DialFailed {
    socket_refused: false,
};

fn lost(registered: bool, timed_out: bool) -> Ended {
    Ended::Lost {
        registered,
        timed_out,
        socket_refused: false,
    }
}

/// The transport, edge and fallback of a retry (its delay checked apart).
fn retry_of(next: &Next) -> (Dial, Edge, bool) {
    match next {
        Next::Retry {
            dial,
            edge,
            fell_back,
            ..
        } => (*dial, *edge, *fell_back),
        other => panic!("no retry: {other:?}"),
    }
}

#[test]
fn each_ending_leads_where_cloudflared_goes() {
    let permanent = RegistrationError::Permanent {
        cause: "tunnel deleted".to_owned(),
    };
    let unauthorized = RegistrationError::Permanent {
        cause: "Unauthorized: token".to_owned(),
    };
    let retryable = RegistrationError::Retryable {
        cause: "busy".to_owned(),
        retry_after: None,
    };
    // (why, configured transport, ending, what follows: None = no retry)
    let cases = [
        ("drained", Start::Quic, Ended::Drained, None),
        (
            "dial failed: another edge",
            Start::Quic,
            DIAL_FAILED,
            Some((Dial::Quic, Edge::Another, false)),
        ),
        (
            "lost after registering: same edge",
            Start::Quic,
            lost(true, false),
            Some((Dial::Quic, Edge::Same, false)),
        ),
        (
            "edge timed out: another edge",
            Start::Quic,
            lost(true, true),
            Some((Dial::Quic, Edge::Another, false)),
        ),
        (
            "duplicate: another edge",
            Start::Http2,
            Ended::Refused(RegistrationError::Duplicate),
            Some((Dial::Http2, Edge::Another, false)),
        ),
        (
            "retryable refusal: same edge",
            Start::Http2,
            Ended::Refused(retryable),
            Some((Dial::Http2, Edge::Same, false)),
        ),
        (
            "registration timed out: same edge",
            Start::Quic,
            Ended::Refused(RegistrationError::Timeout),
            Some((Dial::Quic, Edge::Same, false)),
        ),
        (
            "unauthorized is retried (propagation lag)",
            Start::Quic,
            Ended::Refused(unauthorized),
            Some((Dial::Quic, Edge::Same, false)),
        ),
        (
            "auto: QUIC timed out, so HTTP/2 at once",
            Start::Auto,
            lost(true, true),
            Some((Dial::Http2, Edge::Fresh, true)),
        ),
        (
            "auto: UDP refused by the system",
            Start::Auto,
            Ended::DialFailed {
                socket_refused: true,
            },
            Some((Dial::Http2, Edge::Fresh, true)),
        ),
        (
            "auto: one dial failure is not enough",
            Start::Auto,
            DIAL_FAILED,
            Some((Dial::Quic, Edge::Another, false)),
        ),
    ];
    for (why, start, ended, expected) in cases {
        let next = Reconnect::new(start, BACKOFF, 1).after(ended);
        match expected {
            None => assert_eq!(next, Next::Stop, "{why}"),
            Some(expected) => assert_eq!(retry_of(&next), expected, "{why}"),
        }
    }
    let next = Reconnect::new(Start::Quic, BACKOFF, 1).after(Ended::Refused(permanent.clone()));
    assert_eq!(next, Next::GiveUp(permanent));
}

#[test]
fn auto_falls_back_after_the_retries_fail_to_register_and_stays() {
    let mut reconnect = Reconnect::new(Start::Auto, BACKOFF, 7);
    assert_eq!(reconnect.dial(), Dial::Quic);
    // Unregistered losses and dial failures count alike; the third (the exponent
    // cap) gives QUIC up, with the backoff started over.
    assert_eq!(
        retry_of(&reconnect.after(DIAL_FAILED)),
        (Dial::Quic, Edge::Another, false)
    );
    assert_eq!(
        retry_of(&reconnect.after(lost(false, false))),
        (Dial::Quic, Edge::Same, false)
    );
    assert_eq!(reconnect.attempts(), 2);
    assert_eq!(
        retry_of(&reconnect.after(DIAL_FAILED)),
        (Dial::Http2, Edge::Fresh, true)
    );
    assert_eq!(
        reconnect.attempts(),
        1,
        "the fallback starts a fresh backoff"
    );
    // HTTP/2 from now on, whatever happens.
    for ended in [DIAL_FAILED, lost(true, true), DIAL_FAILED, DIAL_FAILED] {
        assert_eq!(retry_of(&reconnect.after(ended)).0, Dial::Http2);
    }
    assert_eq!(reconnect.dial(), Dial::Http2);
}

#[test]
fn a_registered_connection_starts_the_count_and_the_backoff_over() {
    let mut reconnect = Reconnect::new(Start::Auto, BACKOFF, 3);
    reconnect.after(DIAL_FAILED);
    reconnect.after(DIAL_FAILED);
    assert_eq!(reconnect.attempts(), 2);
    // Registered, then lost: QUIC works here after all.
    assert_eq!(
        retry_of(&reconnect.after(lost(true, false))),
        (Dial::Quic, Edge::Same, false)
    );
    assert_eq!(reconnect.attempts(), 1);
    reconnect.after(DIAL_FAILED);
    assert_eq!(retry_of(&reconnect.after(DIAL_FAILED)).0, Dial::Quic);
    assert_eq!(retry_of(&reconnect.after(DIAL_FAILED)).0, Dial::Http2);
}

#[test]
fn quic_and_http2_alone_never_change_transport() {
    for (start, dial) in [(Start::Quic, Dial::Quic), (Start::Http2, Dial::Http2)] {
        let mut reconnect = Reconnect::new(start, BACKOFF, 5);
        for _ in 0..10 {
            let next = reconnect.after(Ended::DialFailed {
                socket_refused: true,
            });
            assert_eq!(retry_of(&next).0, dial);
        }
    }
}

#[test]
fn delays_grow_within_the_backoff_windows() {
    let mut reconnect = Reconnect::new(Start::Quic, BACKOFF, 11);
    for window_ms in [100, 200, 400, 800, 800] {
        let Next::Retry { delay, .. } = reconnect.after(DIAL_FAILED) else {
            panic!("no retry");
        };
        assert!(delay < Duration::from_millis(window_ms), "{delay:?}");
    }
}
