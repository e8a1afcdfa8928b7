//! Config and request generators shared by the router benchmarks. Each family builds
//! `n` routes on one HTTP listener, one hostname per route, plus a request set that
//! hits routes spread over the whole table.

#![allow(
    dead_code,
    reason = "each benchmark uses part of the shared generators"
)]
use culvert_router::config::{
    BackendConfig, DataPlaneConfig, HeaderMatchConfig, HttpMatchConfig, HttpRouteConfig,
    HttpRuleConfig, ListenerConfig, ListenerProtocol, PathMatchConfig, PathMatchType,
    StringMatchType,
};

/// The route-table shapes the benchmarks measure.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Family {
    /// Exact hostnames, prefix paths.
    ExactPrefix,
    /// Wildcard hostnames, prefix paths.
    Wildcard,
    /// Exact hostnames, regular-expression paths (one distinct pattern per route).
    Regex,
    /// Exact hostnames, rules that differ by two header conditions.
    Headers,
}

impl Family {
    pub(crate) const ALL: [Family; 4] = [
        Family::ExactPrefix,
        Family::Wildcard,
        Family::Regex,
        Family::Headers,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Family::ExactPrefix => "exact_prefix",
            Family::Wildcard => "wildcard",
            Family::Regex => "regex",
            Family::Headers => "headers",
        }
    }
}

fn backend(i: usize) -> BackendConfig {
    BackendConfig {
        name: format!("ns{}/svc{i}:8080", i % 64),
        weight: 1,
        endpoints: vec![
            format!("10.{}.{}.{}:8080", (i >> 16) & 255, (i >> 8) & 255, i & 255)
                .parse()
                .expect("valid address"),
        ],
        app_protocol: Default::default(),
        filters: Vec::new(),
        unavailable: None,
        tls: None,
    }
}

fn path(kind: PathMatchType, value: String) -> Option<PathMatchConfig> {
    Some(PathMatchConfig { kind, value })
}

fn header(name: &str, value: String) -> HeaderMatchConfig {
    HeaderMatchConfig {
        kind: StringMatchType::Exact,
        name: name.to_owned(),
        value,
    }
}

/// Hostname of route `i` for a family.
pub(crate) fn route_host(family: Family, i: usize) -> String {
    match family {
        Family::Wildcard => format!("*.t{i}.example.com"),
        _ => format!("svc{i}.example.com"),
    }
}

/// A config of `n` routes of one family.
pub(crate) fn config(family: Family, n: usize) -> DataPlaneConfig {
    let routes = (0..n)
        .map(|i| {
            let rules = match family {
                Family::ExactPrefix | Family::Wildcard => vec![
                    HttpRuleConfig {
                        matches: vec![HttpMatchConfig {
                            path: path(PathMatchType::PathPrefix, "/api/v1".into()),
                            ..Default::default()
                        }],
                        backends: vec![backend(i)],
                        ..Default::default()
                    },
                    HttpRuleConfig {
                        matches: vec![HttpMatchConfig {
                            path: path(PathMatchType::PathPrefix, "/".into()),
                            ..Default::default()
                        }],
                        backends: vec![backend(i + 1)],
                        ..Default::default()
                    },
                ],
                Family::Regex => vec![HttpRuleConfig {
                    matches: vec![
                        HttpMatchConfig {
                            path: path(
                                PathMatchType::RegularExpression,
                                format!("/svc{i}/v[0-9]+/items/[0-9]+"),
                            ),
                            ..Default::default()
                        },
                        HttpMatchConfig {
                            path: path(
                                PathMatchType::RegularExpression,
                                format!("/svc{i}/(search|list)/[a-z]+"),
                            ),
                            ..Default::default()
                        },
                    ],
                    backends: vec![backend(i)],
                    ..Default::default()
                }],
                Family::Headers => vec![
                    HttpRuleConfig {
                        matches: vec![HttpMatchConfig {
                            headers: vec![
                                header("x-tenant", format!("t{i}")),
                                header("x-version", "v2".into()),
                            ],
                            ..Default::default()
                        }],
                        backends: vec![backend(i)],
                        ..Default::default()
                    },
                    HttpRuleConfig {
                        matches: vec![HttpMatchConfig {
                            headers: vec![header("x-tenant", format!("t{i}"))],
                            ..Default::default()
                        }],
                        backends: vec![backend(i + 1)],
                        ..Default::default()
                    },
                ],
            };
            HttpRouteConfig {
                namespace: format!("ns{}", i % 64),
                name: format!("route{i}"),
                creation_timestamp: Some("2026-01-01T00:00:00Z".into()),
                listeners: vec!["http".into()],
                hostnames: vec![route_host(family, i)],
                rules,
            }
        })
        .collect();
    DataPlaneConfig {
        version: 1,
        listeners: vec![ListenerConfig {
            name: "http".into(),
            address: None,
            port: 80,
            protocol: ListenerProtocol::Http,
            hostname: None,
            tls: None,
        }],
        http_routes: routes,
        ..Default::default()
    }
}

/// A request that family's route `i` handles: host, target and headers.
pub(crate) fn request(family: Family, i: usize) -> (String, String, Vec<(&'static str, String)>) {
    match family {
        Family::ExactPrefix => (
            format!("svc{i}.example.com"),
            "/api/v1/users/42".into(),
            Vec::new(),
        ),
        Family::Wildcard => (
            format!("app.t{i}.example.com"),
            "/api/v1/users/42".into(),
            Vec::new(),
        ),
        Family::Regex => (
            format!("svc{i}.example.com"),
            format!("/svc{i}/v2/items/12345"),
            Vec::new(),
        ),
        Family::Headers => (
            format!("svc{i}.example.com"),
            "/orders".into(),
            vec![("x-tenant", format!("t{i}")), ("x-version", "v2".into())],
        ),
    }
}

/// Indexes of routes to request, spread over the table by a fixed-seed LCG.
pub(crate) fn spread(n: usize, count: usize) -> Vec<usize> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as usize) % n
        })
        .collect()
}
