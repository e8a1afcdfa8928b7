//! [`RouteTableBuilder`]: validates a [`DataPlaneConfig`] and compiles it into a
//! [`RouteTable`]. All the cost of routing is paid here, once per config: hostnames
//! intersected and indexed, paths normalized and indexed, regular expressions
//! compiled under limits, and candidates sorted into Gateway API precedence.
//!
//! `mod.rs` walks listeners and routes; `matches.rs` compiles one match into a path
//! key, a precedence and conditions; `layout.rs` sorts each host's candidates and lays
//! out its indexes.

mod layout;
mod matches;

use layout::Pending;
use matches::{CompiledMatch, PathKey};

use super::{
    Entrypoint, ListenerInfo, ListenerTable, RouteId, RouteInfo, RouteKind, RouteTable, RuleSlot,
    TlsTarget,
};
use crate::config::{DataPlaneConfig, ListenerProtocol, RouteMeta};
use crate::error::{Error, Origin};
use crate::host::{HostIndex, HostPattern};
use crate::regex::{RegexCompiler, RegexLimits};
use crate::rule::{
    FilterScope, Policy, Rule, compile_backends, compile_filters, compile_retry, compile_timeouts,
};
use culvert_time::parse_rfc3339;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::net::IpAddr;

/// Compiles configs into route tables. Reusable; holds only settings.
#[derive(Debug, Clone)]
pub struct RouteTableBuilder {
    regex_limits: RegexLimits,
    max_entries: usize,
}

impl Default for RouteTableBuilder {
    fn default() -> Self {
        Self {
            regex_limits: RegexLimits::default(),
            max_entries: DEFAULT_MAX_ENTRIES,
        }
    }
}

/// Most (route match × listener hostname) entries one table may hold: 20 times what
/// 100,000 two-rule routes need, and about 200 MB while building.
pub const DEFAULT_MAX_ENTRIES: usize = 4_000_000;

/// Compiles one match of a rule: config, route, rule index, match index, origin.
type MatchCompiler<'c, M> =
    fn(&mut Builder<'c>, &M, RouteId, usize, usize, &Origin) -> Result<CompiledMatch, Error>;

struct Builder<'c> {
    regex: RegexCompiler,
    table: RouteTable,
    listener_ids: HashMap<&'c str, u32>,
    listener_hosts: Vec<Option<HostPattern>>,
    /// Per listener, its HTTP hosts' bucket numbers (indexes into `pending`).
    http_hosts: Vec<HostIndex<u32>>,
    /// Per host bucket, the candidates waiting to be laid out.
    pending: Vec<Vec<Pending>>,
    /// Route ranks by position in `table.routes`.
    ranks: Vec<u32>,
    /// Table entries the config may still add (see `RouteTableBuilder::max_entries`).
    candidates_left: usize,
}
impl RouteTableBuilder {
    /// A builder with default regular-expression limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the most (route match × listener hostname) entries a table may hold; a
    /// config over it is refused with the route that crossed it.
    pub fn max_entries(mut self, limit: usize) -> Self {
        self.max_entries = limit;
        self
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
                ports: Vec::new(),
                listeners: Vec::new(),
                listener_info: Vec::new(),
                routes: Vec::new(),
                rules: Vec::new(),
                candidates: Vec::new(),
            },
            listener_ids: HashMap::new(),
            listener_hosts: Vec::new(),
            http_hosts: Vec::new(),
            pending: Vec::new(),
            ranks: Vec::new(),
            candidates_left: self.max_entries,
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
        let mut ports: HashMap<u16, Vec<Entrypoint>> = HashMap::new();
        let mut socket_kind: HashMap<(Option<IpAddr>, u16), (bool, u32)> = HashMap::new();
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
            if let Some(reason) = listener.acme_refusal() {
                return Err(fail(reason));
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
                .map_err(|why| fail(why.to_string()))?;
            let socket = (listener.address, listener.port);
            let entry_index = *by_socket.entry(socket).or_insert_with(|| {
                let entries = ports.entry(listener.port).or_default();
                entries.push(Entrypoint {
                    address: listener.address,
                    listeners: HostIndex::default(),
                });
                entries.len() - 1
            });
            let entries = ports.entry(listener.port).or_default();
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
            // First listener on each socket decides whether it is clear text or TLS.
            let first_on_socket = *socket_kind.entry(socket).or_insert((is_http, id));
            if first_on_socket.0 != is_http {
                let other = &self.table.listener_info[first_on_socket.1 as usize].name;
                return Err(fail(format!(
                    "clear-text HTTP and TLS cannot share a port, but listener {other:?} uses it"
                )));
            }
            self.table.listener_info.push(ListenerInfo {
                name: listener.name.as_str().into(),
                address: listener.address,
                port: listener.port,
                protocol: listener.protocol,
                terminates_tls: listener.terminates_tls(),
            });
            self.table.listeners.push(ListenerTable::default());
            self.http_hosts.push(HostIndex::default());
            self.listener_hosts.push(hostname);
        }
        // Address-specific entrypoints are tried before the wildcard one.
        for entries in ports.values_mut() {
            entries.sort_by_key(|entry| entry.address.is_none());
        }
        self.table.ports = ports.into_iter().collect();
        self.table.ports.sort_by_key(|(port, _)| *port);
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
                    Origin::route(kind.as_str(), meta.namespace(), meta.name())
                        .error(why.to_string())
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
            .map(|h| HostPattern::parse(h).map_err(|why| at.error(why.to_string())))
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
        let mut seen: HashSet<HostPattern> = HashSet::with_capacity(route_hosts.len());
        for host in route_hosts {
            let effective = match listener_host {
                None => Some(host.clone()),
                Some(listener_host) => listener_host.intersect(host),
            };
            if let Some(effective) = effective {
                if seen.insert(effective.clone()) {
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
        let http = [ListenerProtocol::Http, ListenerProtocol::Https];
        let (id, listeners, hostnames) = self.attach(route, &at, position, &http)?;
        let compile_rule =
            |config: &crate::config::HttpRuleConfig, at: &Origin| -> Result<Rule, Error> {
                Ok(Rule {
                    name: config.name.as_deref().map(Into::into),
                    backends: compile_backends(&config.backends, at)?,
                    policy: Policy::boxed(
                        compile_timeouts(config.timeouts.as_ref(), at)?,
                        compile_retry(config.retry.as_ref(), at)?,
                    ),
                    filters: compile_filters(&config.filters, FilterScope::HttpRule, at)?,
                })
            };
        let compiled = self.compile_rules(
            &at,
            id,
            &route.rules,
            compile_rule,
            |r| &r.matches,
            Self::compile_http_match,
        )?;
        self.index_matches(&at, &listeners, &hostnames, compiled)
    }

    fn add_grpc_route(
        &mut self,
        route: &crate::config::GrpcRouteConfig,
        position: usize,
    ) -> Result<(), Error> {
        let at = Origin::route("GRPCRoute", &route.namespace, &route.name);
        let http = [ListenerProtocol::Http, ListenerProtocol::Https];
        let (id, listeners, hostnames) = self.attach(route, &at, position, &http)?;
        let compile_rule =
            |config: &crate::config::GrpcRuleConfig, at: &Origin| -> Result<Rule, Error> {
                Ok(Rule {
                    name: config.name.as_deref().map(Into::into),
                    backends: compile_backends(&config.backends, at)?,
                    policy: None,
                    filters: compile_filters(&config.filters, FilterScope::GrpcRule, at)?,
                })
            };
        let compiled = self.compile_rules(
            &at,
            id,
            &route.rules,
            compile_rule,
            |r| &r.matches,
            Self::compile_grpc_match,
        )?;
        self.index_matches(&at, &listeners, &hostnames, compiled)
    }

    /// Compiles every rule of a route and each of its matches (a rule without
    /// matches gets one default match).
    fn compile_rules<R, M: Default>(
        &mut self,
        at: &Origin,
        id: RouteId,
        rules: &[R],
        compile_rule: impl Fn(&R, &Origin) -> Result<Rule, Error>,
        matches_of: fn(&R) -> &Vec<M>,
        compile_match: MatchCompiler<'c, M>,
    ) -> Result<Vec<(u32, CompiledMatch)>, Error> {
        let mut compiled = Vec::new();
        for (rule_index, config) in rules.iter().enumerate() {
            let at = at.with_rule(rule_index);
            let rule = compile_rule(config, &at)?;
            let replaces_prefix = rule.filters().replaces_prefix();
            let default_match = [M::default()];
            let matches = matches_of(config);
            let matches = if matches.is_empty() {
                &default_match[..]
            } else {
                &matches[..]
            };
            let rule_id = self.push_rule(rule, id, rule_index, &at)?;
            for (match_index, match_config) in matches.iter().enumerate() {
                let at = at.with_match(match_index);
                let one = compile_match(self, match_config, id, rule_index, match_index, &at)?;
                if replaces_prefix && !matches!(one.key, PathKey::Prefix(_)) {
                    return Err(at.error("ReplacePrefixMatch needs a PathPrefix match"));
                }
                compiled.push((rule_id, one));
            }
        }
        Ok(compiled)
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
            // Candidates store the index as u16; a route never has that many rules.
            index: u16::try_from(index)
                .map(u32::from)
                .map_err(|_| at.error("too many rules in one route"))?,
        });
        Ok(id)
    }

    /// Copies each compiled match to every host bucket the route serves.
    fn index_matches(
        &mut self,
        at: &Origin,
        listeners: &[u32],
        hostnames: &[HostPattern],
        compiled: Vec<(u32, CompiledMatch)>,
    ) -> Result<(), Error> {
        let mut compiled: Vec<(u32, CompiledMatch)> = compiled;
        let targets: Vec<(u32, Option<HostPattern>)> = listeners
            .iter()
            .flat_map(|&listener| {
                self.effective_hosts(listener, hostnames)
                    .into_iter()
                    .map(move |host| (listener, host))
            })
            .collect();
        // Every match is copied to every (listener, hostname) it serves: a small
        // config can ask for a huge product. Refuse it before allocating anything.
        let copies = compiled.len().saturating_mul(targets.len());
        if copies > self.candidates_left {
            return Err(at.error(format!(
                "{} matches on {} listener hostnames need {copies} table entries, over the table's remaining budget of {}",
                compiled.len(),
                targets.len(),
                self.candidates_left
            )));
        }
        self.candidates_left -= copies;
        let buckets: Vec<u32> = targets
            .into_iter()
            .map(|(listener, host)| {
                let next = u32::try_from(self.pending.len()).unwrap_or(u32::MAX);
                let bucket = *self.http_hosts[listener as usize].entry(host.as_ref(), || next);
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
        Ok(())
    }
}
