use std::net::SocketAddr;
use std::time::Duration;

use super::{Dial, Edge, Ended, Next, Reconnect, Start, Target};
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

fn addr(last: u8) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, last], 7844))
}

/// A connection that dialled `addr` once.
fn holding(start: Start, addr: SocketAddr) -> Reconnect {
    let mut reconnect = Reconnect::new(start, BACKOFF, 1);
    assert_eq!(reconnect.target(), Target::Acquire { avoid: None });
    reconnect.acquired(addr);
    reconnect
}

#[test]
fn each_ending_keeps_or_leaves_the_address_held() {
    let a = addr(1);
    // (why, configured transport, ending, the next attempt's target)
    let cases = [
        (
            "lost after registering: the held address again",
            Start::Quic,
            lost(true, false),
            Target::Held(a),
        ),
        (
            "retryable refusal: the held address again",
            Start::Http2,
            Ended::Refused(RegistrationError::Timeout),
            Target::Held(a),
        ),
        (
            "dial failed: a new address, avoiding the held one",
            Start::Quic,
            DIAL_FAILED,
            Target::Acquire { avoid: Some(a) },
        ),
        (
            "edge timed out: a new address, avoiding the held one",
            Start::Quic,
            lost(true, true),
            Target::Acquire { avoid: Some(a) },
        ),
        (
            "duplicate: a new address, avoiding the held one",
            Start::Http2,
            Ended::Refused(RegistrationError::Duplicate),
            Target::Acquire { avoid: Some(a) },
        ),
        (
            "auto falls back: a fresh address, nothing avoided",
            Start::Auto,
            lost(false, true),
            Target::Acquire { avoid: None },
        ),
    ];
    for (why, start, ended, target) in cases {
        let mut reconnect = holding(start, a);
        assert_eq!(reconnect.target(), Target::Held(a), "{why}");
        let next = reconnect.after(ended);
        assert!(matches!(next, Next::Retry { .. }), "{why}: {next:?}");
        assert_eq!(reconnect.target(), target, "{why}");
    }
}

#[test]
fn an_avoided_address_stays_avoided_until_the_transport_changes() {
    let (a, b, c) = (addr(1), addr(2), addr(3));
    let mut reconnect = holding(Start::Auto, a);
    assert_eq!(
        retry_of(&reconnect.after(DIAL_FAILED)),
        (Dial::Quic, Edge::Another, false)
    );
    assert_eq!(reconnect.target(), Target::Acquire { avoid: Some(a) });
    // The pool gave `b`; the avoided address is remembered but `b` is held.
    reconnect.acquired(b);
    assert_eq!(reconnect.target(), Target::Held(b));
    // `b` fails to register but stays (a lost, not timed-out connection).
    assert_eq!(
        retry_of(&reconnect.after(lost(false, false))),
        (Dial::Quic, Edge::Same, false)
    );
    assert_eq!(reconnect.target(), Target::Held(b));
    // The third QUIC failure falls back: HTTP/2 at a fresh address.
    assert_eq!(
        retry_of(&reconnect.after(DIAL_FAILED)),
        (Dial::Http2, Edge::Fresh, true)
    );
    assert_eq!(reconnect.target(), Target::Acquire { avoid: None });
    reconnect.acquired(c);
    assert_eq!(
        retry_of(&reconnect.after(DIAL_FAILED)),
        (Dial::Http2, Edge::Another, false)
    );
    assert_eq!(reconnect.target(), Target::Acquire { avoid: Some(c) });
}

#[test]
fn stopping_leaves_the_address_to_the_driver() {
    let a = addr(1);
    let permanent = RegistrationError::Permanent {
        cause: "tunnel deleted".to_owned(),
    };
    for ended in [Ended::Drained, Ended::Refused(permanent)] {
        let mut reconnect = holding(Start::Quic, a);
        assert!(!matches!(reconnect.after(ended), Next::Retry { .. }));
        // Nothing follows; the driver releases what it holds on the way out.
        assert_eq!(reconnect.target(), Target::Held(a));
    }
}

#[test]
fn an_exhausted_pool_is_retried_on_a_backoff_of_its_own() {
    let mut reconnect = Reconnect::new(Start::Quic, BACKOFF, 9);
    // No address: the waits grow within the backoff windows.
    for window_ms in [100, 200, 400, 800, 800] {
        let delay = reconnect.acquire_failed();
        assert!(delay < Duration::from_millis(window_ms), "{delay:?}");
        assert_eq!(reconnect.target(), Target::Acquire { avoid: None });
    }
    // The attempts sent with a registration count dials, not waits for an address.
    assert_eq!(reconnect.attempts(), 0);
    reconnect.acquired(addr(1));
    // Once an address was had, the next shortage starts from the first window.
    reconnect.after(DIAL_FAILED);
    let waits: Vec<Duration> = (0..3).map(|_| reconnect.acquire_failed()).collect();
    for (wait, window_ms) in waits.iter().zip([100, 200, 400]) {
        assert!(*wait < Duration::from_millis(window_ms), "{waits:?}");
    }
    assert_eq!(
        reconnect.attempts(),
        1,
        "address waits leave the dial backoff alone"
    );
}

#[test]
fn connections_of_one_tunnel_draw_different_jitter() {
    let delays: Vec<Duration> = (0..4)
        .map(|index| {
            let mut reconnect = Reconnect::for_connection(Start::Quic, BACKOFF, 42, index);
            reconnect.acquire_failed();
            reconnect.acquire_failed()
        })
        .collect();
    let mut distinct = delays.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{delays:?}");
    // The same tunnel seed and index give the same delays (tests pin the seed).
    let again = || {
        let mut reconnect = Reconnect::for_connection(Start::Quic, BACKOFF, 42, 2);
        reconnect.after(DIAL_FAILED)
    };
    assert_eq!(again(), again());
}
