//! Table-driven tests of the pipeline's decisions: one route table, requests as
//! they would arrive, and the plan each gets.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use culvert_router::config::DataPlaneConfig;
use culvert_router::rule::{Backend, Retry};
use culvert_router::{RouteTable, RouteTableBuilder};
use http::header::HeaderMap;
use http::{Request, StatusCode, Version};

use super::fields::Forwarding;
use super::{
    AttemptEnd, Attempts, BackendFailure, ConnectionInfo, Forward, LocalAnswer, Plan, Transport,
    attempt_limit, pick_endpoint, plan,
};

/// Listeners on port 80 (any host) and 443 (`a.example` and `b.example`, each its
/// own), and routes that exercise every local answer and rewrite.
fn table() -> RouteTable {
    let config: DataPlaneConfig = serde_json::from_value(serde_json::json!({
        "version": 1,
        "listeners": [
            {"name": "http", "port": 80, "protocol": "HTTP"},
            {"name": "https-a", "port": 443, "protocol": "HTTPS", "hostname": "a.example",
             "tls": {"certificateRefs": [{"namespace": "ns", "name": "a"}]}},
            {"name": "https-b", "port": 443, "protocol": "HTTPS", "hostname": "b.example",
             "tls": {"certificateRefs": [{"namespace": "ns", "name": "b"}]}}
        ],
        "httpRoutes": [
            {"namespace": "ns", "name": "app", "listeners": ["http"],
             "hostnames": ["app.example"],
             "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                 "filters": [{"type": "URLRewrite", "urlRewrite": {
                     "hostname": "internal.example",
                     "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/v2"}}}],
                 "backends": [{"name": "api", "endpoints": ["10.0.0.1:8080"]}]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/old"}}],
                 "filters": [{"type": "RequestRedirect", "requestRedirect": {
                     "scheme": "https", "statusCode": 301}}]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/cors"}}],
                 "filters": [{"type": "CORS", "cors": {
                     "allowOrigins": ["https://site.example"], "allowMethods": ["PUT"]}}],
                 "backends": [{"name": "web", "endpoints": ["10.0.0.2:8080"]}]},
                {"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
                     "set": [{"name": "x-added", "value": "yes"}]}}],
                 "backends": [{"name": "web", "endpoints": ["10.0.0.2:8080"]}]}
             ]},
            {"namespace": "ns", "name": "a", "listeners": ["https-a"],
             "rules": [{"backends": [{"name": "a", "endpoints": ["10.0.0.3:8080"]}]}]},
            {"namespace": "ns", "name": "b", "listeners": ["https-b"],
             "rules": [{"backends": [{"name": "b", "endpoints": ["10.0.0.4:8080"]}]}]}
        ],
        "grpcRoutes": [
            {"namespace": "ns", "name": "rpc", "listeners": ["http"],
             "hostnames": ["rpc.example"],
             "rules": [{"backends": [{"name": "rpc", "endpoints": ["10.0.0.5:9000"]}]}]}
        ]
    }))
    .unwrap();
    RouteTableBuilder::new().build(&config).unwrap()
}

/// A clear-text connection from 192.0.2.7 to port 80.
fn plain() -> ConnectionInfo {
    let local = SocketAddr::from(([127, 0, 0, 1], 80));
    ConnectionInfo::new(
        "192.0.2.7:5000".parse().unwrap(),
        local,
        SocketAddr::from(([0, 0, 0, 0], 80)),
    )
}

/// A TLS connection to port 443 whose client sent `sni`.
fn tls(sni: &str) -> ConnectionInfo {
    let local = SocketAddr::from(([127, 0, 0, 1], 443));
    ConnectionInfo {
        transport: Transport::Tls {
            sni: Some(Arc::from(sni)),
            client: super::ClientCertificate::default(),
        },
        ..ConnectionInfo::new(
            "192.0.2.7:5000".parse().unwrap(),
            local,
            SocketAddr::from(([0, 0, 0, 0], 443)),
        )
    }
}

/// A request line (`GET /path`) with `fields` (`name: value`), as HTTP/1.1.
fn request(line: &str, fields: &[(&str, &str)]) -> http::request::Parts {
    let (method, target) = line.split_once(' ').unwrap();
    let mut builder = Request::builder()
        .method(method)
        .uri(target)
        .version(Version::HTTP_11);
    for (name, value) in fields {
        builder = builder.header(*name, *value);
    }
    builder.body(()).unwrap().into_parts().0
}

/// What a plan is expected to be, in the terms the tests compare.
#[derive(Debug, PartialEq)]
enum Expected {
    /// Answered here with this status and `Location` (if any).
    Answer(StatusCode, Option<String>),
    /// Forwarded with this target and `Host`.
    Forward { target: String, host: String },
}

fn answer(status: StatusCode) -> Expected {
    Expected::Answer(status, None)
}

fn redirect(status: StatusCode, location: &str) -> Expected {
    Expected::Answer(status, Some(location.to_owned()))
}

fn forward(target: &str, host: &str) -> Expected {
    Expected::Forward {
        target: target.to_owned(),
        host: host.to_owned(),
    }
}

fn observed(plan: Plan) -> Expected {
    let text = |value: &http::HeaderValue| value.to_str().unwrap().to_owned();
    match plan {
        Plan::Answer(answer) => {
            let status = answer.status();
            Expected::Answer(status, answer.into_headers().get("location").map(text))
        }
        Plan::Forward(forward) => Expected::Forward {
            target: forward.head.target.as_str().to_owned(),
            host: text(&forward.head.headers["host"]),
        },
    }
}

/// Why, the connection, the request line, its fields, and the plan expected.
type PlanCase<'a> = (
    &'a str,
    ConnectionInfo,
    &'a str,
    &'a [(&'a str, &'a str)],
    Expected,
);

#[test]
fn requests_are_answered_or_forwarded_as_their_route_says() {
    let table = table();
    // (why, connection, request line, fields, plan)
    let cases: &[PlanCase<'_>] = &[
        (
            "plain request forwarded as sent",
            plain(),
            "GET /page?q=1",
            &[("host", "app.example")],
            forward("/page?q=1", "app.example"),
        ),
        (
            "dot segments normalized before routing",
            plain(),
            "GET /a/../api/x",
            &[("host", "app.example")],
            forward("/v2/x", "internal.example"),
        ),
        (
            "prefix and host rewritten, query kept",
            plain(),
            "GET /api/users?id=3",
            &[("host", "app.example")],
            forward("/v2/users?id=3", "internal.example"),
        ),
        (
            "absolute form: its authority is the host",
            plain(),
            "GET http://app.example/page",
            &[("host", "other.example")],
            forward("/page", "app.example"),
        ),
        (
            "redirect answered here",
            plain(),
            "GET /old/x?y=1",
            &[("host", "app.example")],
            redirect(
                StatusCode::MOVED_PERMANENTLY,
                "https://app.example/old/x?y=1",
            ),
        ),
        (
            "no route for the host",
            plain(),
            "GET /",
            &[("host", "nowhere.example")],
            answer(StatusCode::NOT_FOUND),
        ),
        (
            "no host on HTTP/1.1",
            plain(),
            "GET /",
            &[],
            answer(StatusCode::BAD_REQUEST),
        ),
        (
            "userinfo in Host",
            plain(),
            "GET /",
            &[("host", "user@app.example")],
            answer(StatusCode::BAD_REQUEST),
        ),
        (
            "dot segments stop at the root",
            plain(),
            "GET /../../etc",
            &[("host", "app.example")],
            forward("/etc", "app.example"),
        ),
        (
            "malformed percent-escape",
            plain(),
            "GET /a%zz",
            &[("host", "app.example")],
            answer(StatusCode::BAD_REQUEST),
        ),
        (
            "escapes of unreserved characters decoded before routing",
            plain(),
            "GET /%61pi/x",
            &[("host", "app.example")],
            forward("/v2/x", "internal.example"),
        ),
        (
            "SNI and Host on the same listener",
            tls("a.example"),
            "GET /",
            &[("host", "a.example")],
            forward("/", "a.example"),
        ),
        (
            "SNI of another listener than Host: 421",
            tls("a.example"),
            "GET /",
            &[("host", "b.example")],
            answer(StatusCode::MISDIRECTED_REQUEST),
        ),
        (
            "Host no HTTPS listener owns: 404, not 421",
            tls("a.example"),
            "GET /",
            &[("host", "c.example")],
            answer(StatusCode::NOT_FOUND),
        ),
        (
            "CORS preflight answered here",
            plain(),
            "OPTIONS /cors/x",
            &[
                ("host", "app.example"),
                ("origin", "https://site.example"),
                ("access-control-request-method", "PUT"),
            ],
            answer(StatusCode::NO_CONTENT),
        ),
        (
            "OPTIONS without a preflight's fields is forwarded",
            plain(),
            "OPTIONS /cors/x",
            &[("host", "app.example")],
            forward("/cors/x", "app.example"),
        ),
    ];
    for (name, connection, line, fields, expected) in cases {
        let planned = plan(
            request(line, fields),
            &table,
            connection,
            Forwarding::default(),
            false,
        );
        assert_eq!(&observed(planned.plan), expected, "{name}");
    }
}

#[test]
fn routing_is_noted_for_the_record_even_when_answered_here() {
    let table = table();
    let planned = plan(
        request("GET /old/x", &[("host", "app.example")]),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    );
    assert_eq!(&*planned.routed.host, "app.example");
    assert!(planned.routed.route.is_some());
    let planned = plan(
        request("GET /", &[("host", "nowhere.example")]),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    );
    assert_eq!(&*planned.routed.host, "nowhere.example");
    assert_eq!(planned.routed.route, None);
    let planned = plan(
        request("GET /", &[]),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    );
    assert!(matches!(planned.plan, Plan::Answer(LocalAnswer::BadHost)));
    assert_eq!(&*planned.routed.host, "");
}

/// The forwarded head's fields, forwarding fields included.
fn forwarded(forward: &Forward) -> HeaderMap {
    let mut headers = forward.head.headers.clone();
    forward.head.added.clone().insert_into(&mut headers);
    headers
}

fn forward_of(planned: super::Planned) -> Forward {
    match planned.plan {
        Plan::Forward(forward) => forward,
        Plan::Answer(answer) => panic!("answered {answer:?}"),
    }
}

#[test]
fn forwarded_heads_drop_hop_fields_and_carry_forwarding_fields() {
    let table = table();
    let fields = [
        ("host", "app.example"),
        ("connection", "keep-alive, x-private"),
        ("x-private", "secret"),
        ("keep-alive", "timeout=5"),
        ("expect", "100-continue"),
        ("x-forwarded-for", "203.0.113.9"),
        ("x-forwarded-proto", "https"),
        ("x-added", "from-client"),
    ];
    let forward = forward_of(plan(
        request("POST /form", &fields),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    ));
    let headers = forwarded(&forward);
    for gone in ["connection", "x-private", "keep-alive", "expect"] {
        assert!(!headers.contains_key(gone), "{gone} forwarded");
    }
    assert_eq!(headers["x-added"], "yes");
    assert_eq!(headers["x-forwarded-for"], "203.0.113.9, 192.0.2.7");
    // An untrusted client's proto is replaced by this hop's.
    assert_eq!(headers["x-forwarded-proto"], "http");
    assert_eq!(headers["x-forwarded-host"], "app.example");
    assert_eq!(
        headers["forwarded"],
        "for=192.0.2.7;proto=http;host=\"app.example\""
    );
    assert!(!forward.grpc);

    // Through a trusted hop its proto stands, and TLS makes this hop's https.
    let trusted = Forwarding { trusted_hops: 1 };
    let forward = forward_of(plan(
        request(
            "GET /",
            &[("host", "a.example"), ("x-forwarded-proto", "http")],
        ),
        &table,
        &tls("a.example"),
        trusted,
        false,
    ));
    let headers = forwarded(&forward);
    assert_eq!(headers["x-forwarded-proto"], "http");
    assert_eq!(
        headers["forwarded"],
        "for=192.0.2.7;proto=https;host=\"a.example\""
    );
}

#[test]
fn http10_without_host_is_forwarded_with_the_local_address() {
    let table = one_backend_table(serde_json::json!({"name": "b", "endpoints": ["10.0.0.1:80"]}));
    let mut parts = request("GET /page", &[]);
    parts.version = Version::HTTP_10;
    let forward = forward_of(plan(parts, &table, &plain(), Forwarding::default(), false));
    assert_eq!(forward.head.headers["host"], "127.0.0.1:80");
}

#[test]
fn upgrades_are_kept_only_where_the_client_side_can_be_handed_over() {
    let table = table();
    let fields = [
        ("host", "app.example"),
        ("connection", "upgrade"),
        ("upgrade", "websocket"),
    ];
    let handed_over = forward_of(plan(
        request("GET /ws", &fields),
        &table,
        &plain(),
        Forwarding::default(),
        true,
    ));
    assert_eq!(handed_over.upgrade.unwrap(), "websocket");
    let not = forward_of(plan(
        request("GET /ws", &fields),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    ));
    assert_eq!(not.upgrade, None);
    assert!(!forwarded(&not).contains_key("upgrade"));
}

#[test]
fn cors_and_grpc_are_marked_for_the_response() {
    let table = table();
    let forward = forward_of(plan(
        request(
            "GET /cors/x",
            &[("host", "app.example"), ("origin", "https://site.example")],
        ),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    ));
    let cors = forward.cors_headers.unwrap();
    assert_eq!(cors["access-control-allow-origin"], "https://site.example");
    // The response will be edited, so its fields are kept as a map.
    assert_eq!(forward.head.response_fields, culvert_wire::FieldsAs::Map);
    let forward = forward_of(plan(
        request(
            "POST /pkg.Service/Call",
            &[
                ("host", "rpc.example"),
                ("content-type", "application/grpc"),
            ],
        ),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    ));
    assert!(forward.grpc);
}

fn retry(attempts: u32, codes: &[u16], backoff_ms: u64) -> Retry {
    Retry {
        attempts,
        codes: codes.to_vec(),
        backoff: Duration::from_millis(backoff_ms),
    }
}

/// Why, the retry policy, whether the body is buffered, the attempt that ended,
/// how, the time left before the deadline, and the backoff expected (`None`: the
/// attempt's outcome is the answer).
type RetryCase<'a> = (
    &'a str,
    Option<&'a Retry>,
    bool,
    u32,
    AttemptEnd,
    Option<Duration>,
    Option<Duration>,
);

#[test]
fn retries_follow_the_policy_the_body_and_the_deadline() {
    let policy = retry(2, &[503], 100);
    let ms = Duration::from_millis;
    let answered = |code: u16| AttemptEnd::Answered(StatusCode::from_u16(code).unwrap());
    let (listed, unlisted, ok) = (answered(503), answered(500), answered(200));
    let (failed, timed_out) = (AttemptEnd::Failed, AttemptEnd::TimedOut);
    let policy = Some(&policy);
    #[rustfmt::skip]
    let cases: &[RetryCase<'_>] = &[
        ("listed status",                  policy, true,  1, listed,    None,          Some(ms(100))),
        ("unlisted status",                policy, true,  1, unlisted,  None,          None),
        ("success",                        policy, true,  1, ok,        None,          None),
        ("connection failure",             policy, true,  1, failed,    None,          Some(ms(100))),
        ("timed out: may be in progress",  policy, true,  1, timed_out, None,          None),
        ("second of three",                policy, true,  2, failed,    None,          Some(ms(100))),
        ("last attempt",                   policy, true,  3, failed,    None,          None),
        ("streamed body: once only",       policy, false, 1, failed,    None,          None),
        ("no policy",                      None,   true,  1, failed,    None,          None),
        ("backoff within the deadline",    policy, true,  1, failed,    Some(ms(101)), Some(ms(100))),
        ("backoff reaches the deadline",   policy, true,  1, failed,    Some(ms(100)), None),
    ];
    for (why, policy, replayable, attempt, end, left, expected) in cases {
        let attempts = Attempts::new(*policy, *replayable);
        assert_eq!(
            attempts.retry_after(*attempt, *end, *left),
            *expected,
            "{why}"
        );
    }
    assert_eq!(Attempts::new(policy, true).total(), 3);
    assert_eq!(Attempts::new(policy, false).total(), 1);
    assert_eq!(Attempts::new(None, true).total(), 1);
}

#[test]
fn an_attempt_gets_the_shorter_of_its_limit_and_what_is_left() {
    let s = Duration::from_secs;
    assert_eq!(attempt_limit(Some(s(5)), Some(s(2))), Some(s(2)));
    assert_eq!(attempt_limit(Some(s(1)), Some(s(2))), Some(s(1)));
    assert_eq!(attempt_limit(None, Some(s(2))), Some(s(2)));
    assert_eq!(attempt_limit(Some(s(5)), None), Some(s(5)));
    assert_eq!(attempt_limit(None, None), None);
}

/// A table routing every request on port 80 to `backend`.
fn one_backend_table(backend: serde_json::Value) -> RouteTable {
    let config: DataPlaneConfig = serde_json::from_value(serde_json::json!({
        "version": 1,
        "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        "httpRoutes": [{"name": "r", "listeners": ["http"], "rules": [{"backends": [backend]}]}]
    }))
    .unwrap();
    RouteTableBuilder::new().build(&config).unwrap()
}

/// `backend` as the table compiled it.
fn backend_of(backend: serde_json::Value) -> Backend {
    let table = one_backend_table(backend);
    let planned = plan(
        request("GET /", &[("host", "x.example")]),
        &table,
        &plain(),
        Forwarding::default(),
        false,
    );
    let rule = table.rule(forward_of(planned).rule).unwrap();
    rule.backends().pick(0).unwrap().clone()
}

#[test]
fn endpoints_are_picked_and_unusable_backends_fail_closed() {
    let two = backend_of(serde_json::json!({
        "name": "b", "endpoints": ["10.0.0.1:80", "10.0.0.2:80"]
    }));
    assert_eq!(pick_endpoint(&two, 0), Ok("10.0.0.1:80".parse().unwrap()));
    assert_eq!(pick_endpoint(&two, 3), Ok("10.0.0.2:80".parse().unwrap()));
    let none = backend_of(serde_json::json!({"name": "b", "endpoints": []}));
    assert_eq!(pick_endpoint(&none, 0), Err(BackendFailure::NoEndpoints));
    let invalid = backend_of(serde_json::json!({
        "name": "b", "endpoints": ["10.0.0.1:80"], "unavailable": "InvalidReference"
    }));
    assert_eq!(
        pick_endpoint(&invalid, 0),
        Err(BackendFailure::InvalidBackend)
    );
    let failures = [
        (BackendFailure::InvalidBackend, 500),
        (BackendFailure::NoEndpoints, 503),
        (BackendFailure::Connect, 502),
        (BackendFailure::Protocol, 502),
        (BackendFailure::Timeout, 504),
    ];
    for (failure, status) in failures {
        assert_eq!(failure.status().as_u16(), status, "{failure:?}");
    }
}
