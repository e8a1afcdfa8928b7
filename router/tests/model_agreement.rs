//! Property test: on generated configs and requests, the compiled [`RouteTable`]
//! picks exactly the rule the reference model in `model/mod.rs` picks.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

mod model;

use culvert_router::config::{
    DataPlaneConfig, HeaderMatchConfig, HttpMatchConfig, HttpRouteConfig, HttpRuleConfig,
    ListenerConfig, ListenerProtocol, PathMatchConfig, PathMatchType, QueryParamMatchConfig,
    StringMatchType,
};
use culvert_router::{RequestView, RouteTable, RouteTableBuilder};
use proptest::prelude::*;

const SEGMENTS: &[&str] = &["a", "ab"];
const ROUTE_HOSTS: &[&str] = &[
    "a.com",
    "b.a.com",
    "*.a.com",
    "*.b.a.com",
    "x.b.a.com",
    "c.org",
];
const REQUEST_HOSTS: &[&str] = &[
    "a.com",
    "b.a.com",
    "x.b.a.com",
    "y.a.com",
    "z.y.b.a.com",
    "c.org",
    "B.A.com:80",
    "d.net",
];
const LISTENER_HOSTS: &[Option<&str>] = &[None, Some("*.a.com"), Some("b.a.com")];
const PATH_REGEXES: &[&str] = &["/a.*", "/[ab]+", "/a/ab", "/(a|ab)/.*", "/ab?/?", ".*"];
const VALUE_REGEXES: &[&str] = &["[0-9]", "1|2", ".*"];

fn path_of(segments: Vec<usize>, trailing: bool) -> String {
    let mut path = String::new();
    for s in segments {
        path.push('/');
        path.push_str(SEGMENTS[s]);
    }
    if trailing || path.is_empty() {
        path.push('/');
    }
    path
}

fn path_strategy() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(0..SEGMENTS.len(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(s, t)| path_of(s, t))
}

fn prefix_strategy() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(0..SEGMENTS.len(), 1..3),
        any::<bool>(),
    )
        .prop_map(|(s, t)| path_of(s, t))
}

fn value_match(kind: bool) -> impl Strategy<Value = (StringMatchType, String)> {
    prop_oneof![
        (1..3u8).prop_map(|v| (StringMatchType::Exact, v.to_string())),
        (0..VALUE_REGEXES.len()).prop_map(move |i| if kind {
            (
                StringMatchType::RegularExpression,
                VALUE_REGEXES[i].to_owned(),
            )
        } else {
            (StringMatchType::Exact, "1".to_owned())
        }),
    ]
}

fn match_strategy() -> impl Strategy<Value = HttpMatchConfig> {
    let path = prop_oneof![
        1 => Just(None),
        3 => path_strategy().prop_map(|value| Some(PathMatchConfig { kind: PathMatchType::Exact, value })),
        3 => prefix_strategy().prop_map(|value| Some(PathMatchConfig { kind: PathMatchType::PathPrefix, value })),
        3 => (0..PATH_REGEXES.len())
            .prop_map(|i| Some(PathMatchConfig { kind: PathMatchType::RegularExpression, value: PATH_REGEXES[i].to_owned() })),
    ];
    let header = (prop_oneof![Just("h1"), Just("H2")], value_match(true)).prop_map(
        |(name, (kind, value))| HeaderMatchConfig {
            kind,
            name: name.to_owned(),
            value,
        },
    );
    let query =
        (prop_oneof![Just("q"), Just("r")], value_match(true)).prop_map(|(name, (kind, value))| {
            QueryParamMatchConfig {
                kind,
                name: name.to_owned(),
                value,
            }
        });
    (
        path,
        prop::collection::vec(header, 0..3),
        prop::collection::vec(query, 0..3),
        prop_oneof![
            Just(None),
            Just(Some("GET".to_owned())),
            Just(Some("POST".to_owned()))
        ],
    )
        .prop_map(|(path, headers, query_params, method)| HttpMatchConfig {
            path,
            headers,
            query_params,
            method,
        })
}

fn route_strategy() -> impl Strategy<
    Value = (
        Vec<usize>,
        Vec<usize>,
        usize,
        usize,
        Vec<Vec<HttpMatchConfig>>,
    ),
> {
    (
        prop::collection::vec(0..ROUTE_HOSTS.len(), 0..3),
        prop::collection::vec(0..LISTENER_HOSTS.len(), 1..3),
        0..3usize,
        0..2usize,
        prop::collection::vec(prop::collection::vec(match_strategy(), 0..3), 1..4),
    )
}

fn config_strategy() -> impl Strategy<Value = DataPlaneConfig> {
    (
        prop::sample::subsequence(vec![0, 1, 2], 1..=3),
        prop::collection::vec(route_strategy(), 1..6),
    )
        .prop_map(|(listener_indexes, routes)| {
            let listeners: Vec<ListenerConfig> = listener_indexes
                .iter()
                .map(|&i| ListenerConfig {
                    name: format!("l{i}"),
                    address: None,
                    port: 80,
                    protocol: ListenerProtocol::Http,
                    hostname: LISTENER_HOSTS[i].map(str::to_owned),
                    tls: None,
                })
                .collect();
            let http_routes = routes
                .into_iter()
                .enumerate()
                .map(
                    |(index, (hosts, attach, created, namespace, rules))| HttpRouteConfig {
                        namespace: format!("n{namespace}"),
                        name: format!("r{index}"),
                        creation_timestamp: Some(format!("2024-01-0{}T00:00:00Z", created + 1)),
                        listeners: attach
                            .into_iter()
                            .filter(|i| listener_indexes.contains(i))
                            .map(|i| format!("l{i}"))
                            .collect(),
                        hostnames: hosts
                            .into_iter()
                            .map(|h| ROUTE_HOSTS[h].to_owned())
                            .collect(),
                        rules: rules
                            .into_iter()
                            .map(|matches| HttpRuleConfig {
                                matches,
                                ..Default::default()
                            })
                            .collect(),
                    },
                )
                .collect();
            DataPlaneConfig {
                version: 1,
                listeners,
                http_routes,
                ..Default::default()
            }
        })
}

fn request_strategy() -> impl Strategy<Value = model::Request> {
    (
        0..REQUEST_HOSTS.len(),
        path_strategy(),
        prop_oneof![
            Just(None),
            Just(Some("q=1")),
            Just(Some("q=2&r=1")),
            Just(Some("r=2&q=1&q=2"))
        ],
        prop_oneof![Just("GET"), Just("POST"), Just("PUT")],
        prop::collection::vec(
            (prop_oneof![Just("h1"), Just("h2"), Just("H1")], 1..3u8),
            0..3,
        ),
    )
        .prop_map(|(host, path, query, method, headers)| model::Request {
            host: REQUEST_HOSTS[host].to_owned(),
            path,
            query: query.map(str::to_owned),
            method: method.to_owned(),
            headers: headers
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v.to_string()))
                .collect(),
        })
}

fn table_route(table: &RouteTable, request: &model::Request) -> String {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &request.headers {
        headers.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    let target = match &request.query {
        Some(query) => format!("{}?{query}", request.path),
        None => request.path.clone(),
    };
    let view = RequestView {
        port: 80,
        local_ip: None,
        host: &request.host,
        path: &target,
        method: &request.method,
        headers: &headers,
    };
    match table.route(&view) {
        Ok(found) => format!(
            "{}#{}.{}",
            table.route_info(found.route).unwrap().name,
            found.rule_index,
            found.match_index
        ),
        Err(miss) => format!("{miss:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn compiled_table_agrees_with_the_reference(
        config in config_strategy(),
        requests in prop::collection::vec(request_strategy(), 1..24),
    ) {
        let table = RouteTableBuilder::new().build(&config).unwrap();
        for request in &requests {
            prop_assert_eq!(table_route(&table, request), model::route(&config, request), "request {:?}", request);
        }
    }
}

/// Guards the property above against passing vacuously: on a fixed sample of the same
/// generators, most requests must match something, and every path kind must win
/// somewhere.
#[test]
fn generated_cases_exercise_every_path_kind() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let (mut matched, mut total) = (0, 0);
    let mut kinds = [0usize; 3];
    for _ in 0..300 {
        let config = config_strategy().new_tree(&mut runner).unwrap().current();
        let request = request_strategy().new_tree(&mut runner).unwrap().current();
        let table = RouteTableBuilder::new().build(&config).unwrap();
        let outcome = table_route(&table, &request);
        total += 1;
        let Some((name, rest)) = outcome.split_once('#') else {
            continue;
        };
        matched += 1;
        let route = config.http_routes.iter().find(|r| r.name == name).unwrap();
        let (rule, index) = rest.split_once('.').unwrap();
        let rule = &route.rules[rule.parse::<usize>().unwrap()];
        let kind = rule
            .matches
            .get(index.parse::<usize>().unwrap())
            .and_then(|m| m.path.as_ref())
            .map_or(1, |p| match p.kind {
                PathMatchType::Exact => 0,
                PathMatchType::PathPrefix => 1,
                PathMatchType::RegularExpression => 2,
            });
        kinds[kind] += 1;
    }
    assert!(
        matched * 5 >= total,
        "only {matched} of {total} requests matched"
    );
    assert!(
        kinds.iter().all(|&n| n > 0),
        "path kinds that won: {kinds:?}"
    );
}
