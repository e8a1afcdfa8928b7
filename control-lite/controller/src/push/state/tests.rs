//! Tables over the push state machine, with fake time.

#![allow(
    clippy::disallowed_methods,
    reason = "tests give the state machine real instants"
)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{Action, PlaneState, Reported, Request, Timing};
use crate::push::Failure;

const DESIRED: &str = "00000000000000d1";
const OTHER: &str = "00000000000000aa";

fn pod(n: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, n], 8081))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn plane(pods: &[SocketAddr], now: Instant) -> PlaneState {
    let mut state = PlaneState::new(DESIRED, Timing::default(), 7);
    state.set_pods(pods.iter().copied(), now);
    state
}

/// Every request due at `now`, in pod order.
fn due(state: &mut PlaneState, now: Instant) -> Vec<Request> {
    std::iter::from_fn(|| state.poll_request(now)).collect()
}

fn get(n: u8) -> Request {
    Request {
        pod: pod(n),
        action: Action::Get,
    }
}

fn put(n: u8, version: u64) -> Request {
    Request {
        pod: pod(n),
        action: Action::Put { version },
    }
}

/// Brings every pod to serving the desired content at `version` (GET, then PUT).
fn make_current(state: &mut PlaneState, version: u64, now: Instant) {
    let pods: Vec<_> = state.pods().collect();
    let gets: Vec<_> = pods
        .iter()
        .map(|&pod| Request {
            pod,
            action: Action::Get,
        })
        .collect();
    assert_eq!(due(state, now), gets);
    for &pod in &pods {
        state.handle_response(pod, Ok(Reported::empty()), now);
    }
    let puts: Vec<_> = pods
        .iter()
        .map(|&pod| Request {
            pod,
            action: Action::Put { version },
        })
        .collect();
    assert_eq!(due(state, now), puts);
    for &pod in &pods {
        state.handle_response(pod, Ok(Reported::serving(version, DESIRED)), now);
    }
}

#[test]
fn a_new_pod_is_asked_then_pushed() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1)], t0);
    assert_eq!(state.next_action(pod(1), t0), Some(Action::Get));
    assert_eq!(due(&mut state, t0), vec![get(1)]);
    // Out: nothing more until it answers.
    assert_eq!(due(&mut state, t0), vec![]);
    assert_eq!(state.poll_timeout(t0), None);
    state.handle_response(pod(1), Ok(Reported::empty()), t0);
    assert_eq!(due(&mut state, t0), vec![put(1, 1)]);
    state.handle_response(pod(1), Ok(Reported::serving(1, DESIRED)), t0);
    assert_eq!(due(&mut state, t0), vec![]);
    let summary = state.summary(t0);
    assert_eq!((summary.pods, summary.current, summary.version), (1, 1, 1));
    assert!(summary.all_current() && summary.failing.is_empty() && !summary.sustained);
}

#[test]
fn a_pod_reporting_the_desired_hash_is_never_pushed() {
    // Whatever version it serves the desired content under.
    for version in [1, 4, 90] {
        let t0 = Instant::now();
        let mut state = plane(&[pod(1)], t0);
        assert_eq!(due(&mut state, t0), vec![get(1)]);
        state.handle_response(pod(1), Ok(Reported::serving(version, DESIRED)), t0);
        assert_eq!(due(&mut state, t0), vec![], "version {version}");
        assert_eq!(state.summary(t0).current, 1);
        // Only re-checked, every `recheck`.
        let recheck = Timing::default().recheck;
        assert_eq!(state.poll_timeout(t0), Some(t0 + recheck));
        assert_eq!(due(&mut state, t0 + recheck - ms(1)), vec![]);
        assert_eq!(due(&mut state, t0 + recheck), vec![get(1)]);
        state.handle_response(
            pod(1),
            Ok(Reported::serving(version, DESIRED)),
            t0 + recheck,
        );
        assert_eq!(due(&mut state, t0 + recheck), vec![]);
    }
}

#[test]
fn a_pod_restarted_empty_is_pushed_again_at_the_recheck() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1)], t0);
    make_current(&mut state, 1, t0);
    let recheck = t0 + Timing::default().recheck;
    assert_eq!(due(&mut state, recheck), vec![get(1)]);
    state.handle_response(pod(1), Ok(Reported::empty()), recheck);
    assert_eq!(state.summary(recheck).current, 0);
    // Replayed under the same version: the content did not change.
    assert_eq!(due(&mut state, recheck), vec![put(1, 1)]);
}

#[test]
fn the_version_continues_above_what_pods_report() {
    // What the pods report after a controller restart → the version pushed.
    let cases: &[(&[Reported], u64)] = &[
        (&[Reported::empty()], 1),
        (&[Reported::serving(7, OTHER)], 8),
        (&[Reported::serving(7, DESIRED)], 7),
        (
            &[Reported::serving(3, OTHER), Reported::serving(9, OTHER)],
            10,
        ),
        (
            &[Reported::serving(9, DESIRED), Reported::serving(4, OTHER)],
            9,
        ),
        (
            &[Reported::serving(9, OTHER), Reported::serving(9, DESIRED)],
            10,
        ),
        (&[Reported::serving(u64::MAX, OTHER)], u64::MAX),
    ];
    for (reports, expected) in cases {
        let t0 = Instant::now();
        let pods: Vec<_> = (1..=reports.len() as u8).map(pod).collect();
        let mut state = plane(&pods, t0);
        assert_eq!(due(&mut state, t0).len(), reports.len());
        for (addr, reported) in pods.iter().zip(reports.iter()) {
            state.handle_response(*addr, Ok(reported.clone()), t0);
        }
        assert_eq!(state.version(), *expected, "{reports:?}");
        // Every pod not serving the desired content gets that version.
        for request in due(&mut state, t0) {
            assert_eq!(request.action, Action::Put { version: *expected });
        }
    }
}

#[test]
fn a_conflict_raises_the_version_and_retries_at_once() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1)], t0);
    assert_eq!(due(&mut state, t0), vec![get(1)]);
    state.handle_response(pod(1), Ok(Reported::serving(2, OTHER)), t0);
    assert_eq!(due(&mut state, t0), vec![put(1, 3)]);
    // Someone pushed version 5 meanwhile.
    let conflict = Failure::Conflict {
        current_version: Some(5),
    };
    state.handle_response(pod(1), Err(conflict.clone()), t0);
    assert_eq!(state.version(), 6);
    assert_eq!(due(&mut state, t0), vec![put(1, 6)]);
    assert!(state.summary(t0).failing.is_empty());
    // A second 409 in a row backs off (a pod cannot drive a tight loop).
    state.handle_response(
        pod(1),
        Err(Failure::Conflict {
            current_version: Some(6),
        }),
        t0,
    );
    assert_eq!(state.version(), 7);
    assert_eq!(due(&mut state, t0), vec![]);
    let summary = state.summary(t0);
    assert_eq!(summary.failing.len(), 1);
    assert!(matches!(summary.failing[0].error, Failure::Conflict { .. }));
    let retry = state.poll_timeout(t0).unwrap();
    assert_eq!(due(&mut state, retry), vec![put(1, 7)]);
    state.handle_response(pod(1), Ok(Reported::serving(7, DESIRED)), retry);
    assert!(state.summary(retry).all_current());
}

#[test]
fn a_conflict_without_a_version_backs_off() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1)], t0);
    assert_eq!(due(&mut state, t0), vec![get(1)]);
    state.handle_response(pod(1), Ok(Reported::empty()), t0);
    assert_eq!(due(&mut state, t0), vec![put(1, 1)]);
    state.handle_response(
        pod(1),
        Err(Failure::Conflict {
            current_version: None,
        }),
        t0,
    );
    assert_eq!(state.version(), 1);
    assert_eq!(due(&mut state, t0), vec![]);
    assert_eq!(state.summary(t0).failing.len(), 1);
}

/// The retry delays after failures in a row, from `poll_timeout`.
fn delays(
    state: &mut PlaneState,
    failure: &Failure,
    count: usize,
    start: Instant,
) -> Vec<Duration> {
    let mut now = start;
    let mut delays = Vec::new();
    for _ in 0..count {
        let requests = due(state, now);
        assert_eq!(requests.len(), 1, "one request due");
        state.handle_response(requests[0].pod, Err(failure.clone()), now);
        let next = state.poll_timeout(now).unwrap();
        delays.push(next - now);
        now = next;
    }
    delays
}

#[test]
fn backoff_grows_to_the_cap_with_jitter_and_resets_on_success() {
    let t0 = Instant::now();
    // No sustained-failure wake-ups among the retries.
    let timing = Timing {
        sustained_after: Duration::from_secs(3600),
        ..Timing::default()
    };
    let mut state = PlaneState::new(DESIRED, timing, 7);
    state.set_pods([pod(1)], t0);
    let failure = Failure::Connect("connection refused".to_owned());
    let observed = delays(&mut state, &failure, 10, t0);
    // 500 ms doubled per failure up to 30 s, each shortened by at most a quarter.
    let full = [
        500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000,
    ];
    for (delay, full) in observed.iter().zip(full) {
        assert!(
            *delay <= ms(full) && *delay >= ms(full) * 3 / 4,
            "{delay:?} vs {full} ms"
        );
    }
    for pair in observed[..6].windows(2) {
        assert!(pair[1] > pair[0], "{observed:?}");
    }
    assert!(
        observed[6..].iter().any(|d| *d != observed[6]),
        "jittered: {observed:?}"
    );
    let summary = state.summary(t0);
    assert_eq!(summary.failing[0].attempts, 10);
    assert_eq!(summary.failing[0].since, t0);

    // Success: the pod reports the desired hash. The next failure starts over.
    let now = t0 + Duration::from_secs(600);
    assert_eq!(due(&mut state, now), vec![get(1)]);
    state.handle_response(pod(1), Ok(Reported::serving(1, DESIRED)), now);
    assert!(state.summary(now).failing.is_empty());
    let recheck = now + Timing::default().recheck;
    let again = delays(&mut state, &failure, 1, recheck);
    assert!(again[0] <= ms(500) && again[0] >= ms(375), "{again:?}");
    assert_eq!(state.summary(recheck).failing[0].since, recheck);
}

#[test]
fn jitter_comes_from_the_seed() {
    let failure = Failure::Timeout(Duration::from_secs(5));
    let run = |seed| {
        let t0 = Instant::now();
        let timing = Timing {
            sustained_after: Duration::from_secs(3600),
            ..Timing::default()
        };
        let mut state = PlaneState::new(DESIRED, timing, seed);
        state.set_pods([pod(1)], t0);
        delays(&mut state, &failure, 8, t0)
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn only_answered_failures_keep_what_the_pod_serves() {
    // Failure → the next request (after the backoff).
    let cases = [
        (Failure::Connect("refused".to_owned()), Action::Get),
        (Failure::Tls("unknown issuer".to_owned()), Action::Get),
        (Failure::Timeout(Duration::from_secs(5)), Action::Get),
        (Failure::Response("garbage".to_owned()), Action::Get),
        (Failure::Unauthorized, Action::Put { version: 1 }),
        (
            Failure::Refused {
                status: 400,
                reason: "bad".to_owned(),
            },
            Action::Put { version: 1 },
        ),
        (
            Failure::Server {
                status: 503,
                reason: "busy".to_owned(),
            },
            Action::Put { version: 1 },
        ),
    ];
    for (failure, next) in cases {
        let t0 = Instant::now();
        let mut state = plane(&[pod(1)], t0);
        assert_eq!(due(&mut state, t0), vec![get(1)]);
        state.handle_response(pod(1), Ok(Reported::empty()), t0);
        assert_eq!(due(&mut state, t0), vec![put(1, 1)]);
        state.handle_response(pod(1), Err(failure.clone()), t0);
        assert_eq!(due(&mut state, t0), vec![], "{failure}: backing off");
        let retry = state.poll_timeout(t0).unwrap();
        assert_eq!(state.next_action(pod(1), retry), Some(next), "{failure}");
        let summary = state.summary(t0);
        assert_eq!(summary.failing[0].error, failure);
        assert_eq!(summary.current, 0);
    }
}

#[test]
fn a_hash_mismatch_after_a_push_is_a_failure() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1)], t0);
    assert_eq!(due(&mut state, t0), vec![get(1)]);
    state.handle_response(pod(1), Ok(Reported::empty()), t0);
    assert_eq!(due(&mut state, t0), vec![put(1, 1)]);
    state.handle_response(pod(1), Ok(Reported::serving(1, OTHER)), t0);
    assert_eq!(due(&mut state, t0), vec![], "no tight loop of pushes");
    let summary = state.summary(t0);
    assert_eq!(
        summary.failing[0].error,
        Failure::HashMismatch {
            sent: DESIRED.to_owned(),
            reported: OTHER.to_owned(),
        }
    );
}

#[test]
fn failures_turn_sustained_after_the_threshold() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1), pod(2)], t0);
    assert_eq!(due(&mut state, t0), vec![get(1), get(2)]);
    state.handle_response(pod(1), Ok(Reported::serving(1, DESIRED)), t0);
    state.handle_response(pod(2), Err(Failure::Unauthorized), t0);
    let threshold = Timing::default().sustained_after;
    let mut now = t0;
    // Keep failing (401) until just before the threshold.
    while now + ms(1) < t0 + threshold {
        let summary = state.summary(now);
        assert!(!summary.sustained, "{:?}", now - t0);
        assert!(!summary.failing[0].sustained);
        let next = state.poll_timeout(now).unwrap();
        assert!(next <= t0 + threshold, "the threshold is a wake-up too");
        now = next;
        for request in due(&mut state, now) {
            let result = if request.pod == pod(1) {
                Ok(Reported::serving(1, DESIRED))
            } else {
                Err(Failure::Unauthorized)
            };
            state.handle_response(request.pod, result, now);
        }
    }
    let summary = state.summary(t0 + threshold - ms(1));
    assert!(!summary.sustained);
    let summary = state.summary(t0 + threshold);
    assert!(summary.sustained);
    assert_eq!(summary.failing.len(), 1);
    assert_eq!(summary.failing[0].pod, pod(2));
    assert_eq!(summary.failing[0].since, t0);
    assert_eq!((summary.pods, summary.current), (2, 1));
}

#[test]
fn a_removed_pod_is_forgotten() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1), pod(2)], t0);
    assert_eq!(due(&mut state, t0), vec![get(1), get(2)]);
    state.handle_response(pod(2), Err(Failure::Unauthorized), t0);
    state.set_pods([pod(1)], t0);
    let summary = state.summary(t0);
    assert_eq!(summary.pods, 1);
    assert!(summary.failing.is_empty());
    // Its late answer is ignored, and so is one from a pod never seen.
    state.handle_response(pod(2), Ok(Reported::serving(40, OTHER)), t0);
    state.handle_response(pod(9), Ok(Reported::serving(50, OTHER)), t0);
    assert_eq!(state.version(), 1);
    assert_eq!(state.pods().collect::<Vec<_>>(), vec![pod(1)]);
    // Back under the same address, it is a new pod.
    state.set_pods([pod(1), pod(2)], t0);
    assert_eq!(due(&mut state, t0), vec![get(2)]);
}

#[test]
fn a_content_change_bumps_the_version_once_for_all_pods() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1), pod(2), pod(3)], t0);
    make_current(&mut state, 1, t0);
    assert!(state.summary(t0).all_current());
    state.set_desired(OTHER);
    state.set_desired(OTHER);
    assert_eq!(state.version(), 2);
    assert_eq!(state.hash(), OTHER);
    assert_eq!(state.summary(t0).current, 0);
    assert_eq!(due(&mut state, t0), vec![put(1, 2), put(2, 2), put(3, 2)]);
    for n in 1..=3 {
        state.handle_response(pod(n), Ok(Reported::serving(2, OTHER)), t0);
    }
    assert!(state.summary(t0).all_current());
    // The same content again changes nothing; back to the first is new content.
    state.set_desired(OTHER);
    assert_eq!((state.version(), due(&mut state, t0)), (2, vec![]));
    state.set_desired(DESIRED);
    assert_eq!(state.version(), 3);
}

#[test]
fn a_push_overtaken_by_a_content_change_is_pushed_again() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1)], t0);
    assert_eq!(due(&mut state, t0), vec![get(1)]);
    state.handle_response(pod(1), Ok(Reported::empty()), t0);
    assert_eq!(due(&mut state, t0), vec![put(1, 1)]);
    state.set_desired(OTHER);
    // The answer to the old push: taken, not current, no failure.
    state.handle_response(pod(1), Ok(Reported::serving(1, DESIRED)), t0);
    assert!(state.summary(t0).failing.is_empty());
    assert_eq!(due(&mut state, t0), vec![put(1, 2)]);
}

#[test]
fn an_answer_without_a_request_out_is_ignored() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1)], t0);
    state.handle_response(pod(1), Ok(Reported::serving(9, OTHER)), t0);
    state.handle_response(pod(1), Err(Failure::Unauthorized), t0);
    assert_eq!(state.version(), 1);
    assert_eq!(due(&mut state, t0), vec![get(1)]);
}

#[test]
fn a_plane_without_pods_waits() {
    let t0 = Instant::now();
    let mut state = plane(&[], t0);
    assert_eq!(due(&mut state, t0), vec![]);
    assert_eq!(state.poll_timeout(t0), None);
    let summary = state.summary(t0);
    assert_eq!((summary.pods, summary.current), (0, 0));
    assert!(!summary.all_current());
}

#[test]
fn the_state_machine_has_no_runtime_and_no_clock() {
    let source = include_str!("mod.rs");
    for forbidden in [
        "tokio",
        "Instant::now",
        "SystemTime",
        "std::net::TcpStream",
        "hyper",
    ] {
        assert!(!source.contains(forbidden), "push/state uses {forbidden}");
    }
}

#[test]
fn tunnel_pods_count_as_reachable_once_a_connection_is_registered() {
    let t0 = Instant::now();
    let mut state = plane(&[pod(1), pod(2)], t0);
    make_current(&mut state, 1, t0);
    let summary = state.summary(t0);
    assert_eq!(
        (summary.tunnel_pods, summary.reachable),
        (0, 2),
        "no tunnel"
    );

    let recheck = t0 + Timing::default().recheck;
    assert_eq!(due(&mut state, recheck), vec![get(1), get(2)]);
    let serving = || Reported::serving(1, DESIRED);
    state.handle_response(pod(1), Ok(serving().with_tunnel(0)), recheck);
    state.handle_response(pod(2), Ok(serving().with_tunnel(0)), recheck);
    let summary = state.summary(recheck);
    assert_eq!(
        (summary.serving, summary.tunnel_pods, summary.reachable),
        (2, 2, 0),
        "serving, but nobody reaches them through the tunnel yet"
    );
    let later = recheck + Timing::default().recheck;
    assert_eq!(due(&mut state, later), vec![get(1), get(2)]);
    state.handle_response(pod(1), Ok(serving().with_tunnel(4)), later);
    state.handle_response(pod(2), Ok(serving().with_tunnel(0)), later);
    let summary = state.summary(later);
    assert_eq!((summary.tunnel_pods, summary.reachable), (2, 1));
    assert!(
        summary.all_current(),
        "the tunnel does not change what is pushed"
    );
}
