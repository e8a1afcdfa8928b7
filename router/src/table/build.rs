//! [`RouteTableBuilder`]: validates a [`DataPlaneConfig`] and compiles it into a
//! [`RouteTable`]. All the cost of routing is paid here, once per config: hostnames
//! intersected and indexed, paths normalized and indexed, regular expressions
//! compiled under limits, and candidates sorted into Gateway API precedence.

use super::conditions::{Conditions, ValueMatch};
use super::host_rules::{Candidate, HostRules, RegexGroup, Span};
use super::{
    Entrypoint, ListenerInfo, ListenerTable, RouteId, RouteInfo, RouteKind, RouteTable, RuleSlot,
    TlsTarget,
};
use crate::config::{
    DataPlaneConfig, GrpcMatchConfig, HeaderMatchConfig, HttpMatchConfig, ListenerProtocol,
    PathMatchType, QueryParamMatchConfig, RouteMeta, StringMatchType,
};
use crate::error::{Error, Origin};
use crate::host::{HostIndex, HostPattern};
use crate::path::normalize_config_path;
use crate::regex::{RegexCompiler, RegexLimits};
use crate::rule::{
    FilterScope, Rule, compile_backends, compile_filters, compile_retry, compile_timeouts,
};
use crate::timestamp::parse_rfc3339;
use foldhash::{HashMap, HashMapExt};
use http::{HeaderName, Method};
use std::cmp::Reverse;
use std::net::IpAddr;

/// Compiles configs into route tables. Reusable; holds only settings.
#[derive(Debug, Clone, Default)]
pub struct RouteTableBuilder {
    regex_limits: RegexLimits,
}

/// Where a candidate's path is indexed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PathKey {
    Exact(String),
    /// Normalized, trailing slash removed (`/` stays `/`).
    Prefix(String),
    Regex(String),
}

/// Sort key of a candidate within its path key: Gateway API precedence after the
/// path. Lower sorts first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Precedence {
    no_method: bool,
    headers: Reverse<usize>,
    query: Reverse<usize>,
    /// Rank of the route by (creation time, namespace, name).
    route_rank: u32,
    rule_index: u32,
    match_index: u16,
}

struct Pending {
    key: PathKey,
    precedence: Precedence,
    rule: u32,
    match_index: u16,
    conditions: Option<Box<Conditions>>,
}

/// One compiled match of a rule, before it is copied to each host it serves.
struct CompiledMatch {
    key: PathKey,
    precedence: Precedence,
    conditions: Option<Conditions>,
}

struct Builder<'c> {
    regex: RegexCompiler,
    table: RouteTable,
    listener_ids: HashMap<&'c str, u32>,
    listener_hosts: Vec<Option<HostPattern>>,
    /// Per host bucket (index = value stored in a listener's `http` index).
    pending: Vec<Vec<Pending>>,
    /// Route ranks by position in `table.routes`.
    ranks: Vec<u32>,
}

impl RouteTableBuilder {
    /// A builder with default regular-expression limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the regular-expression limits.
    pub fn regex_limits(mut self, limits: RegexLimits) -> Self {
        self.regex_limits = limits;
        self
    }

    /// Validates `config` and compiles it. Nothing is shared with a previous table, so
    /// a refused config leaves whatever table is serving untouched.
    pub fn build(&self, config: &DataPlaneConfig) -> Result<RouteTable, Error> {
        let mut builder = Builder {
            regex: RegexCompiler::new(self.regex_limits),
            table: RouteTable {
                version: config.version,
                ports: HashMap::new(),
                listeners: Vec::new(),
                listener_info: Vec::new(),
                routes: Vec::new(),
                rules: Vec::new(),
                hosts: Vec::new(),
                candidates: Vec::new(),
            },
            listener_ids: HashMap::new(),
            listener_hosts: Vec::new(),
            pending: Vec::new(),
            ranks: Vec::new(),
        };
        builder.add_listeners(config)?;
        builder.rank_routes(config)?;
        // Route ids follow `rank_routes`: HTTP routes, then gRPC, then TLS.
        let mut position = 0;
        for route in &config.http_routes {
            builder.add_http_route(route, position)?;
            position += 1;
        }
        for route in &config.grpc_routes {
            builder.add_grpc_route(route, position)?;
            position += 1;
        }
        for route in &config.tls_routes {
            builder.add_tls_route(route, position)?;
            position += 1;
        }
        builder.finish()
    }
}

impl<'c> Builder<'c> {
    fn add_listeners(&mut self, config: &'c DataPlaneConfig) -> Result<(), Error> {
        let mut by_socket: HashMap<(Option<IpAddr>, u16), usize> = HashMap::new();
        for listener in &config.listeners {
            let fail = |reason: String| Error::Listener {
                listener: listener.name.clone(),
                reason,
            };
            if listener.name.is_empty() {
                return Err(fail("name is empty".to_owned()));
            }
            if listener.port == 0 {
                return Err(fail("port must not be 0".to_owned()));
            }
            let id = u32::try_from(self.table.listener_info.len())
                .map_err(|_| fail("too many listeners".to_owned()))?;
            if self.listener_ids.insert(&listener.name, id).is_some() {
                return Err(fail("name is used by another listener".to_owned()));
            }
            let hostname = listener
                .hostname
                .as_deref()
                .map(HostPattern::parse)
                .transpose()
                .map_err(fail)?;
            let socket = (listener.address, listener.port);
            let entry_index = *by_socket.entry(socket).or_insert_with(|| {
                let entries = self.table.ports.entry(listener.port).or_default();
                entries.push(Entrypoint {
                    address: listener.address,
                    listeners: HostIndex::default(),
                });
                entries.len() - 1
            });
            let entries = self.table.ports.entry(listener.port).or_default();
            let entrypoint = &mut entries[entry_index];
            let mut clash = None;
            let slot = entrypoint.listeners.entry(hostname.as_ref(), || u32::MAX);
            if *slot != u32::MAX {
                clash = Some(*slot);
            } else {
                *slot = id;
            }
            if let Some(other) = clash {
                let other = &self.table.listener_info[other as usize].name;
                return Err(fail(format!(
                    "same address, port and hostname as listener {other:?}"
                )));
            }
            let is_http = listener.protocol == ListenerProtocol::Http;
            let mixed = self
                .table
                .listener_info
                .iter()
                .filter(|other| other.address == listener.address && other.port == listener.port)
                .find(|other| (other.protocol == ListenerProtocol::Http) != is_http);
            if let Some(other) = mixed {
                return Err(fail(format!(
                    "clear-text HTTP and TLS cannot share a port, but listener {:?} uses it",
                    other.name
                )));
            }
            self.table.listener_info.push(ListenerInfo {
                name: listener.name.as_str().into(),
                address: listener.address,
                port: listener.port,
                protocol: listener.protocol,
            });
            self.table.listeners.push(ListenerTable::default());
            self.listener_hosts.push(hostname);
        }
        // Address-specific entrypoints are tried before the wildcard one.
        for entries in self.table.ports.values_mut() {
            entries.sort_by_key(|entry| entry.address.is_none());
        }
        Ok(())
    }

    /// Ranks every route by (creation time, namespace, name): Gateway API's tie-break
    /// between routes. A route without a timestamp ranks as the newest.
    fn rank_routes(&mut self, config: &DataPlaneConfig) -> Result<(), Error> {
        let mut keys = Vec::new();
        let metas = config
            .http_routes
            .iter()
            .map(|r| (RouteKind::Http, r as &dyn RouteMeta))
            .chain(
                config
                    .grpc_routes
                    .iter()
                    .map(|r| (RouteKind::Grpc, r as &dyn RouteMeta)),
            )
            .chain(
                config
                    .tls_routes
                    .iter()
                    .map(|r| (RouteKind::Tls, r as &dyn RouteMeta)),
            );
        for (position, (kind, meta)) in metas.enumerate() {
            let created = match meta.creation_timestamp() {
                Some(text) => parse_rfc3339(text).map_err(|why| {
                    Origin::route(kind.as_str(), meta.namespace(), meta.name()).error(why)
                })?,
                None => i64::MAX,
            };
            keys.push((created, meta.namespace(), meta.name(), position));
            self.table.routes.push(RouteInfo {
                kind,
                namespace: meta.namespace().into(),
                name: meta.name().into(),
            });
        }
        keys.sort();
        self.ranks = vec![0; keys.len()];
        for (rank, key) in keys.iter().enumerate() {
            self.ranks[key.3] = u32::try_from(rank).unwrap_or(u32::MAX);
        }
        Ok(())
    }

    /// The route's id, its listeners (deduplicated, checked to exist and to have one
    /// of `protocols`), and its validated hostnames.
    fn attach(
        &self,
        meta: &dyn RouteMeta,
        at: &Origin,
        position: usize,
        protocols: &[ListenerProtocol],
    ) -> Result<(RouteId, Vec<u32>, Vec<HostPattern>), Error> {
        let id = RouteId(u32::try_from(position).map_err(|_| at.error("too many routes"))?);
        let mut listeners = Vec::new();
        for name in meta.listeners() {
            let &listener = self
                .listener_ids
                .get(name.as_str())
                .ok_or_else(|| at.error(format!("listener {name:?} does not exist")))?;
            let protocol = self.table.listener_info[listener as usize].protocol;
            if !protocols.contains(&protocol) {
                return Err(at.error(format!(
                    "listener {name:?} speaks {protocol:?}, which does not carry {}",
                    at.kind
                )));
            }
            if !listeners.contains(&listener) {
                listeners.push(listener);
            }
        }
        let hostnames = meta
            .hostnames()
            .iter()
            .map(|h| HostPattern::parse(h).map_err(|why| at.error(why)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((id, listeners, hostnames))
    }

    /// The host patterns a route serves on a listener: the intersection of the
    /// route's hostnames with the listener's (`None` = any hostname).
    fn effective_hosts(
        &self,
        listener: u32,
        route_hosts: &[HostPattern],
    ) -> Vec<Option<HostPattern>> {
        let listener_host = &self.listener_hosts[listener as usize];
        if route_hosts.is_empty() {
            return vec![listener_host.clone()];
        }
        let mut out: Vec<Option<HostPattern>> = Vec::new();
        for host in route_hosts {
            let effective = match listener_host {
                None => Some(host.clone()),
                Some(listener_host) => listener_host.intersect(host),
            };
            if let Some(effective) = effective {
                if !out.iter().any(|seen| seen.as_ref() == Some(&effective)) {
                    out.push(Some(effective));
                }
            }
        }
        out
    }

    fn add_http_route(
        &mut self,
        route: &crate::config::HttpRouteConfig,
        position: usize,
    ) -> Result<(), Error> {
        let at = Origin::route("HTTPRoute", &route.namespace, &route.name);
        let (id, listeners, hostnames) = self.attach(
            route,
            &at,
            position,
            &[ListenerProtocol::Http, ListenerProtocol::Https],
        )?;
        let mut compiled = Vec::new();
        for (rule_index, rule_config) in route.rules.iter().enumerate() {
            let at = at.with_rule(rule_index);
            let filters = compile_filters(&rule_config.filters, FilterScope::HttpRule, &at)?;
            let rule = Rule {
                name: rule_config.name.as_deref().map(Into::into),
                backends: compile_backends(&rule_config.backends, &at)?,
                timeouts: compile_timeouts(rule_config.timeouts.as_ref(), &at)?,
                retry: compile_retry(rule_config.retry.as_ref(), &at)?,
                filters,
            };
            let replaces_prefix = rule.filters().replaces_prefix();
            let default_match = [HttpMatchConfig::default()];
            let matches = if rule_config.matches.is_empty() {
                &default_match[..]
            } else {
                &rule_config.matches[..]
            };
            let rule_id = self.push_rule(rule, id, rule_index, &at)?;
            for (match_index, match_config) in matches.iter().enumerate() {
                let at = at.with_match(match_index);
                let one =
                    self.compile_http_match(match_config, id, rule_index, match_index, &at)?;
                if replaces_prefix && !matches!(one.key, PathKey::Prefix(_)) {
                    return Err(at.error("ReplacePrefixMatch needs a PathPrefix match"));
                }
                compiled.push((rule_id, one));
            }
        }
        self.index_matches(&listeners, &hostnames, compiled);
        Ok(())
    }

    fn add_grpc_route(
        &mut self,
        route: &crate::config::GrpcRouteConfig,
        position: usize,
    ) -> Result<(), Error> {
        let at = Origin::route("GRPCRoute", &route.namespace, &route.name);
        let (id, listeners, hostnames) = self.attach(
            route,
            &at,
            position,
            &[ListenerProtocol::Http, ListenerProtocol::Https],
        )?;
        let mut compiled = Vec::new();
        for (rule_index, rule_config) in route.rules.iter().enumerate() {
            let at = at.with_rule(rule_index);
            let rule = Rule {
                name: rule_config.name.as_deref().map(Into::into),
                backends: compile_backends(&rule_config.backends, &at)?,
                timeouts: Default::default(),
                retry: None,
                filters: compile_filters(&rule_config.filters, FilterScope::GrpcRule, &at)?,
            };
            let default_match = [GrpcMatchConfig::default()];
            let matches = if rule_config.matches.is_empty() {
                &default_match[..]
            } else {
                &rule_config.matches[..]
            };
            let rule_id = self.push_rule(rule, id, rule_index, &at)?;
            for (match_index, match_config) in matches.iter().enumerate() {
                let at = at.with_match(match_index);
                let one =
                    self.compile_grpc_match(match_config, id, rule_index, match_index, &at)?;
                compiled.push((rule_id, one));
            }
        }
        self.index_matches(&listeners, &hostnames, compiled);
        Ok(())
    }

    fn add_tls_route(
        &mut self,
        route: &crate::config::TlsRouteConfig,
        position: usize,
    ) -> Result<(), Error> {
        let at = Origin::route("TLSRoute", &route.namespace, &route.name);
        let (id, listeners, hostnames) =
            self.attach(route, &at, position, &[ListenerProtocol::Tls])?;
        let backends = compile_backends(&route.backends, &at)?;
        let rank = self.ranks[position];
        for listener in listeners {
            for host in self.effective_hosts(listener, &hostnames) {
                let index = &mut self.table.listeners[listener as usize].tls;
                let target = index.entry(host.as_ref(), || TlsTarget {
                    route: id,
                    backends: backends.clone(),
                });
                // Of two routes claiming one SNI name, the older (lower rank) wins.
                if self.ranks[target.route.0 as usize] > rank {
                    *target = TlsTarget {
                        route: id,
                        backends: backends.clone(),
                    };
                }
            }
        }
        Ok(())
    }

    fn push_rule(
        &mut self,
        rule: Rule,
        route: RouteId,
        index: usize,
        at: &Origin,
    ) -> Result<u32, Error> {
        let id = u32::try_from(self.table.rules.len()).map_err(|_| at.error("too many rules"))?;
        self.table.rules.push(RuleSlot {
            rule,
            route,
            index: u32::try_from(index).map_err(|_| at.error("too many rules"))?,
        });
        Ok(id)
    }

    /// Copies each compiled match to every host bucket the route serves.
    fn index_matches(
        &mut self,
        listeners: &[u32],
        hostnames: &[HostPattern],
        compiled: Vec<(u32, CompiledMatch)>,
    ) {
        let mut compiled: Vec<(u32, CompiledMatch)> = compiled;
        let buckets: Vec<u32> = listeners
            .iter()
            .flat_map(|&listener| {
                self.effective_hosts(listener, hostnames)
                    .into_iter()
                    .map(move |host| (listener, host))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|(listener, host)| {
                let next = u32::try_from(self.pending.len()).unwrap_or(u32::MAX);
                let bucket = *self.table.listeners[listener as usize]
                    .http
                    .entry(host.as_ref(), || next);
                if bucket == next {
                    self.pending.push(Vec::new());
                }
                bucket
            })
            .collect();
        let last = buckets.len().saturating_sub(1);
        for (position, bucket) in buckets.iter().enumerate() {
            let list = &mut self.pending[*bucket as usize];
            if position == last {
                for (rule, one) in compiled.drain(..) {
                    list.push(Pending {
                        key: one.key,
                        precedence: one.precedence,
                        rule,
                        match_index: one.precedence.match_index,
                        conditions: one.conditions.map(Box::new),
                    });
                }
            } else {
                for (rule, one) in &compiled {
                    list.push(Pending {
                        key: one.key.clone(),
                        precedence: one.precedence,
                        rule: *rule,
                        match_index: one.precedence.match_index,
                        conditions: one.conditions.clone().map(Box::new),
                    });
                }
            }
        }
    }
}

impl Builder<'_> {
    fn precedence(
        &self,
        route: RouteId,
        rule_index: usize,
        match_index: usize,
        conditions: &Conditions,
        at: &Origin,
    ) -> Result<Precedence, Error> {
        Ok(Precedence {
            no_method: conditions.method.is_none(),
            headers: Reverse(conditions.headers.len()),
            query: Reverse(conditions.query.len()),
            route_rank: self.ranks[route.0 as usize],
            rule_index: u32::try_from(rule_index).map_err(|_| at.error("too many rules"))?,
            match_index: u16::try_from(match_index).map_err(|_| at.error("too many matches"))?,
        })
    }

    fn compile_http_match(
        &mut self,
        config: &HttpMatchConfig,
        route: RouteId,
        rule_index: usize,
        match_index: usize,
        at: &Origin,
    ) -> Result<CompiledMatch, Error> {
        let key = match &config.path {
            None => PathKey::Prefix("/".to_owned()),
            Some(path) => match path.kind {
                PathMatchType::Exact => {
                    PathKey::Exact(normalize_config_path(&path.value).map_err(|why| at.error(why))?)
                }
                PathMatchType::PathPrefix => {
                    let normal = normalize_config_path(&path.value).map_err(|why| at.error(why))?;
                    let trimmed = match normal.strip_suffix('/') {
                        Some(rest) if !rest.is_empty() => rest.to_owned(),
                        _ => normal,
                    };
                    PathKey::Prefix(trimmed)
                }
                PathMatchType::RegularExpression => {
                    check_syntax(&path.value, at)?;
                    PathKey::Regex(path.value.clone())
                }
            },
        };
        let mut conditions = Conditions {
            method: config
                .method
                .as_deref()
                .map(|m| {
                    Method::from_bytes(m.as_bytes())
                        .map_err(|_| at.error(format!("method {m:?} is not a token")))
                })
                .transpose()?,
            headers: self.header_conditions(&config.headers, at)?,
            query: Vec::new(),
            grpc: false,
        };
        conditions.query = self.query_conditions(&config.query_params, at)?;
        let precedence = self.precedence(route, rule_index, match_index, &conditions, at)?;
        Ok(CompiledMatch {
            key,
            precedence,
            conditions: (!conditions.is_empty()).then_some(conditions),
        })
    }

    fn compile_grpc_match(
        &mut self,
        config: &GrpcMatchConfig,
        route: RouteId,
        rule_index: usize,
        match_index: usize,
        at: &Origin,
    ) -> Result<CompiledMatch, Error> {
        let key = match &config.method {
            None => PathKey::Prefix("/".to_owned()),
            Some(method) => {
                let service = method.service.as_deref();
                let name = method.method.as_deref();
                match method.kind {
                    StringMatchType::Exact => {
                        if let Some(service) = service {
                            check_grpc_name(service, true, at)?;
                        }
                        if let Some(name) = name {
                            check_grpc_name(name, false, at)?;
                        }
                        match (service, name) {
                            (Some(service), Some(name)) => {
                                PathKey::Exact(format!("/{service}/{name}"))
                            }
                            (Some(service), None) => PathKey::Prefix(format!("/{service}")),
                            // Method names are `[A-Za-z0-9_]`, so they need no escaping.
                            (None, Some(name)) => PathKey::Regex(format!("/[^/]+/{name}")),
                            (None, None) => {
                                return Err(
                                    at.error("gRPC method match needs a service or a method")
                                );
                            }
                        }
                    }
                    StringMatchType::RegularExpression => {
                        if service.is_none() && name.is_none() {
                            return Err(at.error("gRPC method match needs a service or a method"));
                        }
                        for part in [service, name].into_iter().flatten() {
                            check_syntax(part, at)?;
                        }
                        PathKey::Regex(format!(
                            "/(?:{})/(?:{})",
                            service.unwrap_or("[^/]+"),
                            name.unwrap_or("[^/]+")
                        ))
                    }
                }
            }
        };
        let conditions = Conditions {
            method: None,
            headers: self.header_conditions(&config.headers, at)?,
            query: Vec::new(),
            grpc: true,
        };
        let precedence = self.precedence(route, rule_index, match_index, &conditions, at)?;
        Ok(CompiledMatch {
            key,
            precedence,
            conditions: Some(conditions),
        })
    }

    /// Header conditions; of several with the same name only the first counts, as
    /// Gateway API specifies.
    fn header_conditions(
        &mut self,
        configs: &[HeaderMatchConfig],
        at: &Origin,
    ) -> Result<Vec<(HeaderName, ValueMatch)>, Error> {
        let mut out: Vec<(HeaderName, ValueMatch)> = Vec::with_capacity(configs.len());
        for config in configs {
            let name = HeaderName::from_bytes(config.name.as_bytes())
                .map_err(|_| at.error(format!("invalid header name {:?}", config.name)))?;
            if out.iter().any(|(seen, _)| *seen == name) {
                continue;
            }
            let value = self.value_match(config.kind, &config.value, at)?;
            out.push((name, value));
        }
        Ok(out)
    }

    /// Query conditions; names are case-sensitive and only the first of a name counts.
    fn query_conditions(
        &mut self,
        configs: &[QueryParamMatchConfig],
        at: &Origin,
    ) -> Result<Vec<(Box<str>, ValueMatch)>, Error> {
        let mut out: Vec<(Box<str>, ValueMatch)> = Vec::with_capacity(configs.len());
        for config in configs {
            if config.name.is_empty() || config.name.contains(['&', '=', '#']) {
                return Err(at.error(format!("invalid query parameter name {:?}", config.name)));
            }
            if out.iter().any(|(seen, _)| **seen == *config.name) {
                continue;
            }
            let value = self.value_match(config.kind, &config.value, at)?;
            out.push((config.name.as_str().into(), value));
        }
        Ok(out)
    }

    fn value_match(
        &mut self,
        kind: StringMatchType,
        value: &str,
        at: &Origin,
    ) -> Result<ValueMatch, Error> {
        Ok(match kind {
            StringMatchType::Exact => ValueMatch::Exact(value.as_bytes().into()),
            StringMatchType::RegularExpression => {
                ValueMatch::Regex(self.regex.compile(&[value.to_owned()]).map_err(|reason| {
                    Error::Regex {
                        at: Box::new(at.clone()),
                        pattern: value.to_owned(),
                        reason,
                    }
                })?)
            }
        })
    }

    /// The origin of the route a rule belongs to, for errors found late.
    fn origin_of_rule(&self, rule: u32) -> Origin {
        let slot = &self.table.rules[rule as usize];
        let info = &self.table.routes[slot.route.0 as usize];
        Origin::route(info.kind.as_str(), &info.namespace, &info.name)
            .with_rule(slot.index as usize)
    }

    /// Sorts every host's candidates into precedence order and lays out the indexes.
    fn finish(mut self) -> Result<RouteTable, Error> {
        let pending = std::mem::take(&mut self.pending);
        let mut hosts = Vec::with_capacity(pending.len());
        for bucket in pending {
            hosts.push(self.lay_out_host(bucket)?);
        }
        self.table.hosts = hosts;
        self.table.candidates.shrink_to_fit();
        Ok(self.table)
    }

    fn lay_out_host(&mut self, bucket: Vec<Pending>) -> Result<HostRules, Error> {
        let (mut regex, mut indexed): (Vec<Pending>, Vec<Pending>) = bucket
            .into_iter()
            .partition(|p| matches!(p.key, PathKey::Regex(_)));
        indexed.sort_by(|a, b| (&a.key, a.precedence).cmp(&(&b.key, b.precedence)));
        regex.sort_by_key(|p| p.precedence);
        let mut rules = HostRules::default();
        let mut indexed = indexed.into_iter().peekable();
        while let Some(first) = indexed.next() {
            let key = first.key.clone();
            let mut group = vec![(first, 0)];
            while let Some(next) = indexed.next_if(|p| p.key == key) {
                group.push((next, 0));
            }
            let span = self.push_candidates(group);
            match key {
                PathKey::Exact(path) => {
                    rules.exact.insert(path.into(), span);
                }
                PathKey::Prefix(prefix) => *rules.prefix.entry(&prefix, || span) = span,
                PathKey::Regex(_) => {}
            }
        }
        if !regex.is_empty() {
            let mut patterns: Vec<String> = Vec::new();
            let mut with_ids = Vec::with_capacity(regex.len());
            for pending in regex {
                let PathKey::Regex(pattern) = &pending.key else {
                    continue;
                };
                let id = match patterns.iter().position(|seen| seen == pattern) {
                    Some(id) => id,
                    None => {
                        patterns.push(pattern.clone());
                        patterns.len() - 1
                    }
                };
                with_ids.push((pending, u32::try_from(id).unwrap_or(u32::MAX)));
            }
            let matcher = match self.regex.compile(&patterns) {
                Ok(matcher) => matcher,
                Err(group_reason) => {
                    return Err(self.regex_culprit(&with_ids, &patterns, group_reason));
                }
            };
            let span = self.push_candidates(with_ids);
            rules.regex = Some(Box::new(RegexGroup { matcher, span }));
        }
        Ok(rules)
    }

    /// Names the route whose pattern broke a host's automaton: the first pattern that
    /// fails alone, or else the first route of the host (the patterns only fail
    /// together).
    fn regex_culprit(
        &mut self,
        with_ids: &[(Pending, u32)],
        patterns: &[String],
        group_reason: String,
    ) -> Error {
        for (pending, id) in with_ids {
            let pattern = &patterns[*id as usize];
            if let Err(reason) = self.regex.check(pattern) {
                return Error::Regex {
                    at: Box::new(self.origin_of_rule(pending.rule)),
                    pattern: pattern.clone(),
                    reason,
                };
            }
        }
        let (first, id) = &with_ids[0];
        Error::Regex {
            at: Box::new(self.origin_of_rule(first.rule)),
            pattern: patterns[*id as usize].clone(),
            reason: format!(
                "the {} patterns of this host together: {group_reason}",
                patterns.len()
            ),
        }
    }

    fn push_candidates(&mut self, pending: Vec<(Pending, u32)>) -> Span {
        let start = u32::try_from(self.table.candidates.len()).unwrap_or(u32::MAX);
        let len = u32::try_from(pending.len()).unwrap_or(u32::MAX);
        self.table
            .candidates
            .extend(pending.into_iter().map(|(p, pattern)| Candidate {
                rule: p.rule,
                pattern,
                match_index: p.match_index,
                conditions: p.conditions,
            }));
        Span { start, len }
    }
}

fn check_syntax(pattern: &str, at: &Origin) -> Result<(), Error> {
    regex_automata::util::syntax::parse(pattern)
        .map(|_| ())
        .map_err(|error| Error::Regex {
            at: Box::new(at.clone()),
            pattern: pattern.to_owned(),
            reason: error.to_string(),
        })
}

/// gRPC service names are dotted identifiers; method names are identifiers.
fn check_grpc_name(name: &str, dotted: bool, at: &Origin) -> Result<(), Error> {
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || (dotted && b == b'.'));
    if valid {
        Ok(())
    } else {
        Err(at.error(format!("gRPC name {name:?} is not a valid identifier")))
    }
}
