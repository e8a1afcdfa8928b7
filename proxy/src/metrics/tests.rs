use std::time::Duration;

use http::StatusCode;

use super::*;
use crate::pipeline::BackendFailure;

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// Merges the snapshots of `workers` the way the config API thread will.
fn merged(workers: &[&WorkerStats]) -> StatsSnapshot {
    let mut total = StatsSnapshot::new();
    for worker in workers {
        total.merge(&worker.snapshot());
    }
    total
}

/// Asserts that `line` is one whole line of `text`.
#[track_caller]
fn assert_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "missing line {line:?} in:\n{text}"
    );
}

/// Asserts that no line of `text` contains `fragment`.
#[track_caller]
fn assert_no_line_with(text: &str, fragment: &str) {
    assert!(
        !text.lines().any(|l| l.contains(fragment)),
        "unexpected {fragment:?} in:\n{text}"
    );
}

#[test]
fn two_workers_merge_into_one_exposition() {
    let a = WorkerStats::new();
    let b = WorkerStats::new();
    a.refused(Refusal::Malformed);
    b.refused(Refusal::Malformed);
    b.refused(Refusal::Http2Abuse);

    let web = a.route(Some("default/web"));
    web.record_response(StatusCode::OK, ms(3));
    web.record_response(StatusCode::OK, ms(40));
    web.add_request_bytes(100);
    web.add_response_bytes(2048);
    a.route(None)
        .record_response(StatusCode::NOT_FOUND, Duration::from_micros(200));
    let a_listener = a.listener("0.0.0.0:8080");
    let kept_a = a_listener.connection_opened();
    drop(a_listener.connection_opened());

    let web = b.route(Some("default/web"));
    web.record_backend_failure(BackendFailure::NoEndpoints);
    web.record_response(BackendFailure::NoEndpoints.status(), ms(2000));
    web.record_response(StatusCode::OK, ms(40));
    web.add_request_bytes(50);
    b.route(Some("default/api"))
        .record_response(StatusCode::OK, Duration::from_secs(45));
    let kept_b = b.listener("0.0.0.0:8080").connection_opened();
    drop(b.listener("tunnel").connection_opened());

    let control = ConfigApiStats::new();
    control.config_swapped(3);
    control.config_swapped(4);
    control.config_rejected();
    control.set_workers(2);

    let text = encode(&control, &merged(&[&a, &b]), &[]);
    let expected = "\
# HELP culvert_requests_in_flight Requests being served, summed over the workers
# TYPE culvert_requests_in_flight gauge
culvert_requests_in_flight 0
# HELP culvert_requests_total Requests answered, by route and status class
# TYPE culvert_requests_total counter
culvert_requests_total{route=\"default/api\",status_class=\"2xx\"} 1
culvert_requests_total{route=\"default/web\",status_class=\"2xx\"} 3
culvert_requests_total{route=\"default/web\",status_class=\"5xx\"} 1
culvert_requests_total{route=\"none\",status_class=\"4xx\"} 1
# HELP culvert_request_duration_seconds Time from request start until the answer, by route
# TYPE culvert_request_duration_seconds histogram
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.0005\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.001\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.0025\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.005\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.01\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.025\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.05\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.1\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.25\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"0.5\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"1\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"2.5\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"5\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"10\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"30\"} 0
culvert_request_duration_seconds_bucket{route=\"default/api\",le=\"+Inf\"} 1
culvert_request_duration_seconds_sum{route=\"default/api\"} 45.0
culvert_request_duration_seconds_count{route=\"default/api\"} 1
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.0005\"} 0
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.001\"} 0
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.0025\"} 0
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.005\"} 1
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.01\"} 1
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.025\"} 1
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.05\"} 3
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.1\"} 3
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.25\"} 3
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"0.5\"} 3
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"1\"} 3
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"2.5\"} 4
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"5\"} 4
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"10\"} 4
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"30\"} 4
culvert_request_duration_seconds_bucket{route=\"default/web\",le=\"+Inf\"} 4
culvert_request_duration_seconds_sum{route=\"default/web\"} 2.083
culvert_request_duration_seconds_count{route=\"default/web\"} 4
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.0005\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.001\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.0025\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.005\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.01\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.025\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.05\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.1\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.25\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"0.5\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"1\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"2.5\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"5\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"10\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"30\"} 1
culvert_request_duration_seconds_bucket{route=\"none\",le=\"+Inf\"} 1
culvert_request_duration_seconds_sum{route=\"none\"} 0.0002
culvert_request_duration_seconds_count{route=\"none\"} 1
# HELP culvert_backend_errors_total Requests that got no usable upstream response, by route and reason
# TYPE culvert_backend_errors_total counter
culvert_backend_errors_total{route=\"default/web\",reason=\"no_endpoints\"} 1
# HELP culvert_tls_route_connections_total TLSRoute connections (passed through or terminated here), by route and how they ended
# TYPE culvert_tls_route_connections_total counter
# HELP culvert_request_bytes_total Request body bytes read from clients (every byte of a TLSRoute connection's stream), by route
# TYPE culvert_request_bytes_total counter
culvert_request_bytes_total{route=\"default/api\"} 0
culvert_request_bytes_total{route=\"default/web\"} 150
culvert_request_bytes_total{route=\"none\"} 0
# HELP culvert_response_bytes_total Response body bytes written to clients (every byte of a TLSRoute connection's stream), by route
# TYPE culvert_response_bytes_total counter
culvert_response_bytes_total{route=\"default/api\"} 0
culvert_response_bytes_total{route=\"default/web\"} 2048
culvert_response_bytes_total{route=\"none\"} 0
# HELP culvert_open_connections Client connections open, by listener, summed over the workers
# TYPE culvert_open_connections gauge
culvert_open_connections{listener=\"0.0.0.0:8080\"} 2
culvert_open_connections{listener=\"tunnel\"} 0
# HELP culvert_connections_total Client connections accepted, by listener
# TYPE culvert_connections_total counter
culvert_connections_total{listener=\"0.0.0.0:8080\"} 3
culvert_connections_total{listener=\"tunnel\"} 1
# HELP culvert_refused_total Clients refused or cut off by a limit or a protocol rule, by reason
# TYPE culvert_refused_total counter
culvert_refused_total{reason=\"malformed\"} 2
culvert_refused_total{reason=\"unsupported\"} 0
culvert_refused_total{reason=\"too_large\"} 0
culvert_refused_total{reason=\"header_timeout\"} 0
culvert_refused_total{reason=\"body\"} 0
culvert_refused_total{reason=\"body_timeout\"} 0
culvert_refused_total{reason=\"upgraded_idle\"} 0
culvert_refused_total{reason=\"connection_limit\"} 0
culvert_refused_total{reason=\"http2_abuse\"} 1
culvert_refused_total{reason=\"http2_protocol\"} 0
culvert_refused_total{reason=\"tls_malformed\"} 0
culvert_refused_total{reason=\"tls_hello_timeout\"} 0
culvert_refused_total{reason=\"tls_unrouted\"} 0
# HELP culvert_config_version Version of the config being served, 0 before the first one
# TYPE culvert_config_version gauge
culvert_config_version 4
# HELP culvert_config_swaps_total Configs swapped in
# TYPE culvert_config_swaps_total counter
culvert_config_swaps_total 2
# HELP culvert_config_rejected_total Configs refused, leaving the serving one in place
# TYPE culvert_config_rejected_total counter
culvert_config_rejected_total 1
# HELP culvert_workers Worker threads running
# TYPE culvert_workers gauge
culvert_workers 2
";
    // The panic counter is the process's (another test of this binary may panic on
    // purpose), so only its shape is fixed.
    let (text, panics) = text.split_at(text.find("# HELP culvert_panics_total").unwrap());
    assert_eq!(text, expected);
    let mut lines = panics.lines();
    assert_eq!(
        lines.next(),
        Some(
            "# HELP culvert_panics_total Panics anywhere in the process (each one a bug; see the error log)"
        )
    );
    assert_eq!(lines.next(), Some("# TYPE culvert_panics_total counter"));
    let count = lines
        .next()
        .unwrap()
        .strip_prefix("culvert_panics_total ")
        .unwrap();
    assert!(count.parse::<u64>().is_ok(), "{count}");
    assert_eq!(lines.next(), None);
    drop((kept_a, kept_b));
}

#[test]
fn tls_route_connections_are_counted_by_route_and_end() {
    let a = WorkerStats::new();
    let b = WorkerStats::new();
    a.route(Some("ns/db")).record_tls_route(TlsRouteEnd::Closed);
    b.route(Some("ns/db")).record_tls_route(TlsRouteEnd::Closed);
    b.route(Some("ns/db")).record_tls_route(TlsRouteEnd::Idle);
    a.route(Some("ns/down"))
        .record_tls_route(TlsRouteEnd::BackendFailed);

    let text = encode(&ConfigApiStats::new(), &merged(&[&a, &b]), &[]);
    for line in [
        "culvert_tls_route_connections_total{route=\"ns/db\",end=\"closed\"} 2",
        "culvert_tls_route_connections_total{route=\"ns/db\",end=\"idle\"} 1",
        "culvert_tls_route_connections_total{route=\"ns/down\",end=\"backend_failed\"} 1",
    ] {
        assert_line(&text, line);
    }
    // Ends that never happened are left out, and no request was counted.
    assert_no_line_with(&text, "route=\"ns/down\",end=\"closed\"");
    assert_no_line_with(&text, "culvert_requests_total{route=\"ns/db\"");
}

#[test]
fn merge_is_order_independent_and_keeps_one_sided_series() {
    let a = WorkerStats::new();
    let b = WorkerStats::new();
    a.route(Some("ns/only-a"))
        .record_response(StatusCode::OK, ms(1));
    b.route(Some("ns/only-b"))
        .record_response(StatusCode::BAD_GATEWAY, ms(1));
    a.route(Some("ns/both")).add_response_bytes(7);
    b.route(Some("ns/both")).add_response_bytes(5);

    let ab = merged(&[&a, &b]);
    let ba = merged(&[&b, &a]);
    assert_eq!(ab, ba);
    // Merging into an empty snapshot is the identity.
    assert_eq!(merged(&[&a]), a.snapshot());

    let text = encode(&ConfigApiStats::new(), &ab, &[]);
    assert_line(
        &text,
        "culvert_requests_total{route=\"ns/only-a\",status_class=\"2xx\"} 1",
    );
    assert_line(
        &text,
        "culvert_requests_total{route=\"ns/only-b\",status_class=\"5xx\"} 1",
    );
    assert_line(&text, "culvert_response_bytes_total{route=\"ns/both\"} 12");
}

#[test]
fn in_flight_and_open_connections_return_to_zero_after_guards_drop() {
    let a = WorkerStats::new();
    let b = WorkerStats::new();
    let control = ConfigApiStats::new();

    let first = a.request_started();
    let second = a.request_started();
    let third = b.request_started();
    let listener = a.listener("127.0.0.1:80");
    let connection = listener.connection_opened();
    let other = b.listener("127.0.0.1:80").connection_opened();

    let busy = merged(&[&a, &b]);
    assert_eq!(busy.in_flight(), 3);
    let text = encode(&control, &busy, &[]);
    assert_line(&text, "culvert_requests_in_flight 3");
    assert_line(
        &text,
        "culvert_open_connections{listener=\"127.0.0.1:80\"} 2",
    );

    drop(second);
    assert_eq!(merged(&[&a, &b]).in_flight(), 2);
    drop((first, third, connection, other));

    let idle = merged(&[&a, &b]);
    assert_eq!(idle.in_flight(), 0);
    let text = encode(&control, &idle, &[]);
    assert_line(&text, "culvert_requests_in_flight 0");
    assert_line(
        &text,
        "culvert_open_connections{listener=\"127.0.0.1:80\"} 0",
    );
    // The accepted-connections counter never goes back.
    assert_line(
        &text,
        "culvert_connections_total{listener=\"127.0.0.1:80\"} 2",
    );
}

#[test]
fn guards_outlive_a_moved_or_dropped_handle() {
    let stats = WorkerStats::new();
    // A guard owns its counter, so it can move into a response body or a task.
    let guard = stats.request_started();
    let connection = stats.listener("l").connection_opened();
    let moved = move || drop((guard, connection));
    assert_eq!(stats.snapshot().in_flight(), 1);
    moved();
    assert_eq!(stats.snapshot().in_flight(), 0);
    assert_line(
        &encode(&ConfigApiStats::new(), &stats.snapshot(), &[]),
        "culvert_open_connections{listener=\"l\"} 0",
    );
}

#[test]
fn routes_past_the_cap_are_counted_under_overflow() {
    let stats = WorkerStats::with_limits(2, 8);
    for name in ["ns/a", "ns/b", "ns/c", "ns/d"] {
        stats
            .route(Some(name))
            .record_response(StatusCode::OK, ms(1));
    }
    // Reserved labels do not count against the cap and keep their own series.
    stats
        .route(None)
        .record_response(StatusCode::NOT_FOUND, ms(1));
    // A name seen before the cap was reached keeps its own series.
    stats
        .route(Some("ns/a"))
        .record_response(StatusCode::OK, ms(1));
    assert_eq!(stats.route(Some("ns/e")).label(), OVERFLOW);
    assert_eq!(stats.route(Some("ns/b")).label(), "ns/b");

    let text = encode(&ConfigApiStats::new(), &stats.snapshot(), &[]);
    assert_line(
        &text,
        "culvert_requests_total{route=\"ns/a\",status_class=\"2xx\"} 2",
    );
    assert_line(
        &text,
        "culvert_requests_total{route=\"ns/b\",status_class=\"2xx\"} 1",
    );
    assert_line(
        &text,
        "culvert_requests_total{route=\"overflow\",status_class=\"2xx\"} 2",
    );
    assert_line(
        &text,
        "culvert_requests_total{route=\"none\",status_class=\"4xx\"} 1",
    );
    assert_line(
        &text,
        "culvert_request_duration_seconds_count{route=\"overflow\"} 2",
    );
    assert_no_line_with(&text, "ns/c");
    assert_no_line_with(&text, "ns/d");
    assert_no_line_with(&text, "ns/e");
}

#[test]
fn default_route_cap_is_max_route_keys() {
    let stats = WorkerStats::new();
    for i in 0..MAX_ROUTE_KEYS {
        let name = format!("ns/r{i}");
        assert_eq!(stats.route(Some(&name)).label(), name);
    }
    assert_eq!(stats.route(Some("ns/one-too-many")).label(), OVERFLOW);
    assert_eq!(stats.route(None).label(), NO_ROUTE);
    assert_eq!(stats.route(Some("ns/r0")).label(), "ns/r0");
    // Every distinct name plus `overflow` and `none`, nothing more.
    let snapshot = stats.snapshot();
    let mut total = StatsSnapshot::new();
    total.merge(&snapshot);
    let text = encode(&ConfigApiStats::new(), &total, &[]);
    let series = text
        .lines()
        .filter(|l| l.starts_with("culvert_request_bytes_total{"))
        .count();
    assert_eq!(series, MAX_ROUTE_KEYS + 2);
}

#[test]
fn listeners_past_the_cap_are_counted_under_overflow() {
    let stats = WorkerStats::with_limits(8, 1);
    let _first = stats.listener("0.0.0.0:80").connection_opened();
    let _second = stats.listener("0.0.0.0:81").connection_opened();
    let _third = stats.listener("0.0.0.0:82").connection_opened();
    let text = encode(&ConfigApiStats::new(), &stats.snapshot(), &[]);
    assert_line(&text, "culvert_open_connections{listener=\"0.0.0.0:80\"} 1");
    assert_line(&text, "culvert_open_connections{listener=\"overflow\"} 2");
    assert_line(&text, "culvert_connections_total{listener=\"overflow\"} 2");
    assert_no_line_with(&text, "0.0.0.0:81");
}

#[test]
fn duration_buckets_are_upper_inclusive() {
    let stats = WorkerStats::new();
    let route = stats.route(Some("ns/t"));
    route.record_response(StatusCode::OK, Duration::from_micros(500));
    route.record_response(StatusCode::OK, Duration::from_nanos(500_001));
    route.record_response(StatusCode::OK, Duration::from_secs(30));
    route.record_response(StatusCode::OK, Duration::from_secs(31));
    route.record_response(StatusCode::OK, Duration::ZERO);
    let text = encode(&ConfigApiStats::new(), &stats.snapshot(), &[]);
    let bucket = |le: &str, n: u64| {
        format!("culvert_request_duration_seconds_bucket{{route=\"ns/t\",le=\"{le}\"}} {n}")
    };
    assert_line(&text, &bucket("0.0005", 2));
    assert_line(&text, &bucket("0.001", 3));
    assert_line(&text, &bucket("10", 3));
    assert_line(&text, &bucket("30", 4));
    assert_line(&text, &bucket("+Inf", 5));
    assert_line(
        &text,
        "culvert_request_duration_seconds_count{route=\"ns/t\"} 5",
    );
    assert_line(
        &text,
        "culvert_request_duration_seconds_sum{route=\"ns/t\"} 61.001000001",
    );
}

#[test]
fn status_codes_map_to_their_class() {
    let stats = WorkerStats::new();
    let route = stats.route(Some("ns/s"));
    for code in [100, 101, 204, 301, 308, 404, 499, 500, 599, 999] {
        let status = StatusCode::from_u16(code).expect("valid status code");
        route.record_response(status, ms(1));
    }
    let text = encode(&ConfigApiStats::new(), &stats.snapshot(), &[]);
    for (class, n) in [("1xx", 2), ("2xx", 1), ("3xx", 2), ("4xx", 2), ("5xx", 3)] {
        assert_line(
            &text,
            &format!("culvert_requests_total{{route=\"ns/s\",status_class=\"{class}\"}} {n}"),
        );
    }
}

#[test]
fn backend_failures_have_their_label_and_status() {
    let expected = [
        (BackendFailure::InvalidBackend, "invalid_backend", 500),
        (BackendFailure::NoEndpoints, "no_endpoints", 503),
        (BackendFailure::Connect, "connect", 502),
        (BackendFailure::Protocol, "protocol", 502),
        (BackendFailure::Timeout, "timeout", 504),
    ];
    assert_eq!(BackendFailure::ALL.len(), expected.len());
    let stats = WorkerStats::new();
    let route = stats.route(Some("ns/b"));
    for (i, (reason, label, status)) in expected.into_iter().enumerate() {
        assert_eq!(BackendFailure::ALL[i], reason);
        assert_eq!(reason.as_str(), label);
        assert_eq!(reason.status().as_u16(), status);
        for _ in 0..=i {
            route.record_backend_failure(reason);
        }
    }
    let text = encode(&ConfigApiStats::new(), &stats.snapshot(), &[]);
    for (i, (_, label, _)) in expected.into_iter().enumerate() {
        assert_line(
            &text,
            &format!(
                "culvert_backend_errors_total{{route=\"ns/b\",reason=\"{label}\"}} {}",
                i + 1
            ),
        );
    }
}

#[test]
fn label_values_are_escaped() {
    let stats = WorkerStats::new();
    stats
        .route(Some("ns/a\"b\\c"))
        .record_response(StatusCode::OK, ms(1));
    let text = encode(&ConfigApiStats::new(), &stats.snapshot(), &[]);
    assert_line(
        &text,
        "culvert_requests_total{route=\"ns/a\\\"b\\\\c\",status_class=\"2xx\"} 1",
    );
}

#[test]
fn snapshot_crosses_threads() {
    fn assert_send_clone<T: Send + Sync + Clone + 'static>() {}
    assert_send_clone::<StatsSnapshot>();

    let stats = WorkerStats::new();
    stats.route(Some("ns/x")).add_request_bytes(9);
    let snapshot = stats.snapshot();
    let from_thread = std::thread::spawn(move || {
        let mut total = StatsSnapshot::new();
        total.merge(&snapshot);
        encode(&ConfigApiStats::new(), &total, &[])
    })
    .join()
    .expect("encoding thread");
    assert_line(
        &from_thread,
        "culvert_request_bytes_total{route=\"ns/x\"} 9",
    );
}

#[test]
fn empty_stats_still_describe_every_family() {
    let text = encode(&ConfigApiStats::new(), &StatsSnapshot::new(), &[]);
    for family in [
        "culvert_requests_in_flight gauge",
        "culvert_requests_total counter",
        "culvert_request_duration_seconds histogram",
        "culvert_backend_errors_total counter",
        "culvert_request_bytes_total counter",
        "culvert_response_bytes_total counter",
        "culvert_open_connections gauge",
        "culvert_connections_total counter",
        "culvert_config_version gauge",
        "culvert_config_swaps_total counter",
        "culvert_config_rejected_total counter",
        "culvert_workers gauge",
    ] {
        assert_line(&text, &format!("# TYPE {family}"));
    }
    assert_line(&text, "culvert_requests_in_flight 0");
    assert_line(&text, "culvert_config_version 0");
    assert!(!text.contains("# EOF"));
    assert_eq!(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
}
