//! Route rules to router rules: matches, filters, backends, timeouts and retries.
//! Anything Culvert cannot honour is reported (`UnsupportedValue`) rather than
//! dropped; unusable backend references are reported (`ResolvedRefs`) and kept as
//! unavailable backends so their traffic share fails closed.

use crate::model::{
    BackendObjectReference, BackendRef, GrpcRoute, HttpRoute, HttpRouteMatch, HttpRouteRule,
    RouteFilter, StringMatch, TlsRoute, Unknown,
};
use crate::store::{NamespacedName, Store};
use crate::translate::backends::{Referrer, resolve};
use crate::translate::conditions::{Verdict, reason};
use culvert_router::config::{
    BackendConfig, GrpcMatchConfig, GrpcMethodMatchConfig, GrpcRuleConfig, HeaderMatchConfig,
    HttpFilterConfig, HttpMatchConfig, HttpRuleConfig, PathMatchConfig, PathMatchType,
    QueryParamMatchConfig, RequestMirrorConfig, RetryConfig, StringMatchType, TimeoutsConfig,
};
use serde::Deserialize;
use std::collections::BTreeSet;

/// What a route's rules became, and the verdicts they earned.
pub(crate) struct Translated<T> {
    pub(crate) rules: T,
    /// `Some(message)`: the route asks for something Culvert cannot honour.
    pub(crate) unsupported: Option<String>,
    pub(crate) resolved_refs: Verdict,
    /// The Services its backends resolved to (for BackendTLSPolicy status).
    pub(crate) services: BTreeSet<NamespacedName>,
}

impl<T> Translated<T> {
    /// The same verdicts with the rules converted.
    pub(crate) fn map<U>(self, convert: impl FnOnce(T) -> U) -> Translated<U> {
        Translated {
            rules: convert(self.rules),
            unsupported: self.unsupported,
            resolved_refs: self.resolved_refs,
            services: self.services,
        }
    }
}

/// Collects problems while translating one route.
struct Collector<'s> {
    store: &'s Store,
    referrer: Referrer<'s>,
    unsupported: Option<String>,
    resolved_refs: Verdict,
    services: BTreeSet<NamespacedName>,
}

impl<'s> Collector<'s> {
    fn new(store: &'s Store, kind: &'s str, namespace: &'s str) -> Self {
        Self {
            store,
            referrer: Referrer { kind, namespace },
            unsupported: None,
            resolved_refs: Verdict::yes(reason::RESOLVED_REFS),
            services: BTreeSet::new(),
        }
    }

    fn unsupported(&mut self, message: String) {
        self.unsupported.get_or_insert(message);
    }

    fn check_unknown(&mut self, unknown: &Unknown, at: &str) {
        if let Some(field) = unknown.keys().next() {
            self.unsupported(format!("{at}.{field} is not supported"));
        }
    }

    fn backend(
        &mut self,
        reference: &BackendObjectReference,
        weight: Option<i64>,
        at: &str,
    ) -> BackendConfig {
        let weight = match weight.map(u32::try_from) {
            None => 1,
            Some(Ok(weight)) if weight <= 1_000_000 => weight,
            Some(_) => {
                self.unsupported(format!("{at}.weight must be between 0 and 1000000"));
                0
            }
        };
        let resolved = resolve(self.store, &self.referrer, reference, weight);
        self.services.extend(resolved.service);
        if let Some(problem) = resolved.problem {
            if self.resolved_refs.status {
                self.resolved_refs = problem;
            }
        }
        resolved.backend
    }

    fn backend_ref(&mut self, reference: &BackendRef, at: &str) -> BackendConfig {
        let mut backend = self.backend(&reference.object, reference.weight, at);
        backend.filters = self.filters(&reference.filters, &format!("{at}.filters"));
        backend
    }

    /// Gateway API filters have the router's shape, except that a mirror names a
    /// `backendRef` the router needs resolved.
    fn filters(&mut self, filters: &[RouteFilter], at: &str) -> Vec<HttpFilterConfig> {
        let mut out = Vec::with_capacity(filters.len());
        for (index, filter) in filters.iter().enumerate() {
            let at = format!("{at}[{index}]");
            if filter.kind == "RequestMirror" {
                match filter
                    .bodies
                    .get("requestMirror")
                    .map(MirrorBody::deserialize)
                {
                    Some(Ok(body)) => {
                        let backend = self.backend(
                            &body.backend_ref,
                            None,
                            &format!("{at}.requestMirror.backendRef"),
                        );
                        out.push(HttpFilterConfig::RequestMirror {
                            request_mirror: RequestMirrorConfig {
                                backend,
                                percent: body.percent,
                                fraction: body.fraction,
                            },
                        });
                    }
                    Some(Err(error)) => self.unsupported(format!("{at}.requestMirror: {error}")),
                    None => {
                        self.unsupported(format!("{at}: RequestMirror filter has no requestMirror"))
                    }
                }
                continue;
            }
            let mut raw = serde_json::Map::new();
            raw.insert(
                "type".to_owned(),
                serde_json::Value::String(filter.kind.clone()),
            );
            raw.extend(filter.bodies.iter().map(|(k, v)| (k.clone(), v.clone())));
            match serde_json::from_value::<HttpFilterConfig>(serde_json::Value::Object(raw)) {
                Ok(config) => out.push(config),
                Err(error) => self.unsupported(format!(
                    "{at}: filter {} is not supported: {error}",
                    filter.kind
                )),
            }
        }
        out
    }

    fn finish<T>(self, rules: T) -> Translated<T> {
        Translated {
            rules,
            unsupported: self.unsupported,
            resolved_refs: self.resolved_refs,
            services: self.services,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MirrorBody {
    backend_ref: BackendObjectReference,
    #[serde(default)]
    percent: Option<u32>,
    #[serde(default)]
    fraction: Option<culvert_router::config::FractionConfig>,
}

fn string_kind(kind: Option<&str>) -> Option<StringMatchType> {
    match kind.unwrap_or("Exact") {
        "Exact" => Some(StringMatchType::Exact),
        "RegularExpression" => Some(StringMatchType::RegularExpression),
        _ => None,
    }
}

fn string_matches(
    collector: &mut Collector<'_>,
    matches: &[StringMatch],
    at: &str,
) -> Vec<(StringMatchType, String, String)> {
    let mut out = Vec::new();
    for m in matches {
        match string_kind(m.kind.as_deref()) {
            Some(kind) => out.push((kind, m.name.clone(), m.value.clone())),
            None => collector.unsupported(format!(
                "{at}: match type {:?} is not supported",
                m.kind.as_deref().unwrap_or("")
            )),
        }
    }
    out
}

fn http_match(collector: &mut Collector<'_>, config: &HttpRouteMatch, at: &str) -> HttpMatchConfig {
    collector.check_unknown(&config.unknown, at);
    let path = config.path.as_ref().and_then(|path| {
        let kind = match path.kind.as_deref().unwrap_or("PathPrefix") {
            "Exact" => PathMatchType::Exact,
            "PathPrefix" => PathMatchType::PathPrefix,
            "RegularExpression" => PathMatchType::RegularExpression,
            other => {
                collector.unsupported(format!("{at}.path.type {other:?} is not supported"));
                return None;
            }
        };
        Some(PathMatchConfig {
            kind,
            value: path.value.clone().unwrap_or_else(|| "/".to_owned()),
        })
    });
    let headers = string_matches(collector, &config.headers, &format!("{at}.headers"))
        .into_iter()
        .map(|(kind, name, value)| HeaderMatchConfig { kind, name, value })
        .collect();
    let query_params = string_matches(
        collector,
        &config.query_params,
        &format!("{at}.queryParams"),
    )
    .into_iter()
    .map(|(kind, name, value)| QueryParamMatchConfig { kind, name, value })
    .collect();
    HttpMatchConfig {
        path,
        headers,
        query_params,
        method: config.method.clone(),
    }
}

fn http_rule(collector: &mut Collector<'_>, rule: &HttpRouteRule, at: &str) -> HttpRuleConfig {
    collector.check_unknown(&rule.unknown, at);
    let matches = rule
        .matches
        .iter()
        .enumerate()
        .map(|(i, m)| http_match(collector, m, &format!("{at}.matches[{i}]")))
        .collect();
    let filters = collector.filters(&rule.filters, &format!("{at}.filters"));
    let backends = rule
        .backend_refs
        .iter()
        .enumerate()
        .map(|(i, b)| collector.backend_ref(b, &format!("{at}.backendRefs[{i}]")))
        .collect();
    let timeouts = rule.timeouts.as_ref().map(|t| TimeoutsConfig {
        request: t.request.clone(),
        backend_request: t.backend_request.clone(),
    });
    let retry = rule.retry.as_ref().map(|r| RetryConfig {
        attempts: u32::try_from(r.attempts.unwrap_or(0)).unwrap_or(0),
        codes: r
            .codes
            .iter()
            .filter_map(|c| u16::try_from(*c).ok())
            .collect(),
        backoff: r.backoff.clone(),
    });
    HttpRuleConfig {
        name: rule.name.clone(),
        matches,
        filters,
        backends,
        timeouts,
        retry,
    }
}

/// An HTTPRoute's rules. A route without `rules` has one rule matching everything
/// with no backend (so it answers 500).
pub(crate) fn http(store: &Store, route: &HttpRoute) -> Translated<Vec<HttpRuleConfig>> {
    let mut collector = Collector::new(store, "HTTPRoute", route.metadata.namespace());
    collector.check_unknown(&route.spec.unknown, "spec");
    let default = [HttpRouteRule::default()];
    let rules = route.spec.rules.as_deref().unwrap_or(&default);
    let rules = rules
        .iter()
        .enumerate()
        .map(|(i, rule)| http_rule(&mut collector, rule, &format!("spec.rules[{i}]")))
        .collect();
    collector.finish(rules)
}

/// A GRPCRoute's rules.
pub(crate) fn grpc(store: &Store, route: &GrpcRoute) -> Translated<Vec<GrpcRuleConfig>> {
    let mut collector = Collector::new(store, "GRPCRoute", route.metadata.namespace());
    collector.check_unknown(&route.spec.unknown, "spec");
    let mut rules = Vec::new();
    for (i, rule) in route.spec.rules.iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        collector.check_unknown(&rule.unknown, &at);
        let mut matches = Vec::new();
        for (j, m) in rule.matches.iter().enumerate() {
            let at = format!("{at}.matches[{j}]");
            collector.check_unknown(&m.unknown, &at);
            let method =
                m.method
                    .as_ref()
                    .and_then(|method| match string_kind(method.kind.as_deref()) {
                        Some(kind) => Some(GrpcMethodMatchConfig {
                            kind,
                            service: method.service.clone(),
                            method: method.method.clone(),
                        }),
                        None => {
                            collector.unsupported(format!("{at}.method.type is not supported"));
                            None
                        }
                    });
            let headers = string_matches(&mut collector, &m.headers, &format!("{at}.headers"))
                .into_iter()
                .map(|(kind, name, value)| HeaderMatchConfig { kind, name, value })
                .collect();
            matches.push(GrpcMatchConfig { method, headers });
        }
        let filters = collector.filters(&rule.filters, &format!("{at}.filters"));
        let backends = rule
            .backend_refs
            .iter()
            .enumerate()
            .map(|(j, b)| collector.backend_ref(b, &format!("{at}.backendRefs[{j}]")))
            .collect();
        rules.push(GrpcRuleConfig {
            name: rule.name.clone(),
            matches,
            filters,
            backends,
        });
    }
    collector.finish(rules)
}

/// A TLSRoute's backends (all rules together).
pub(crate) fn tls(store: &Store, route: &TlsRoute) -> Translated<Vec<BackendConfig>> {
    let mut collector = Collector::new(store, "TLSRoute", route.metadata.namespace());
    collector.check_unknown(&route.spec.unknown, "spec");
    let mut backends = Vec::new();
    for (i, rule) in route.spec.rules.iter().enumerate() {
        collector.check_unknown(&rule.unknown, &format!("spec.rules[{i}]"));
        for (j, reference) in rule.backend_refs.iter().enumerate() {
            let at = format!("spec.rules[{i}].backendRefs[{j}]");
            if !reference.filters.is_empty() {
                collector.unsupported(format!("{at}.filters are not supported on TLSRoute"));
            }
            backends.push(collector.backend(&reference.object, reference.weight, &at));
        }
    }
    collector.finish(backends)
}
