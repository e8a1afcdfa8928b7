//! The compiled route table and its lookup.
//!
//! A [`RouteTable`] is immutable once built. A lookup walks, in order: the entrypoint
//! (local address and port), the listener (most specific listener hostname), the host
//! (exact name, then longest wildcard, then catch-all, via [`HostIndex`]), and then the
//! host's rules in Gateway API precedence: exact paths from a hash map, prefixes from a
//! segment trie longest first, then regular expressions from one multi-pattern
//! automaton. Within each path key, candidates are pre-sorted by method, header count,
//! query count, route age, route name and rule order, so the first candidate whose
//! remaining conditions hold is the answer.

mod build;
mod conditions;
mod host_rules;

pub use build::{DEFAULT_MAX_ENTRIES, RouteTableBuilder};

use crate::config::ListenerProtocol;
use crate::host::{HostIndex, normalize_request_host};
use crate::path::split_query;
use crate::rule::{Backends, Rule};
use host_rules::{Candidate, HostRules};
use http::HeaderMap;
use std::net::IpAddr;

/// Index of a listener in the table's config order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListenerId(pub u32);

/// Index of a route in the table (HTTP routes, then gRPC routes, then TLS routes, each
/// in config order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteId(pub u32);

/// A rule in the table: what [`RouteTable::rule`] takes, for holding on to a matched
/// rule without holding a borrow of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(u32);

/// The kind of route object a [`RouteId`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteKind {
    /// `HTTPRoute`.
    Http,
    /// `GRPCRoute`.
    Grpc,
    /// `TLSRoute`.
    Tls,
}

impl RouteKind {
    /// The Gateway API kind name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "HTTPRoute",
            Self::Grpc => "GRPCRoute",
            Self::Tls => "TLSRoute",
        }
    }
}

/// What the table knows about a route: enough to name it in logs and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    /// Route kind.
    pub kind: RouteKind,
    /// Namespace.
    pub namespace: Box<str>,
    /// Name.
    pub name: Box<str>,
}

/// What the table knows about a listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerInfo {
    /// Configured name.
    pub name: Box<str>,
    /// Local address, `None` for every address.
    pub address: Option<IpAddr>,
    /// Port.
    pub port: u16,
    /// Protocol.
    pub protocol: ListenerProtocol,
    /// Whether TLS is terminated here (`HTTPS`, or `TLS` in mode `Terminate`).
    pub terminates_tls: bool,
}

/// The parts of a request that routing reads. Build one per request; it borrows.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    /// Local port the request arrived on.
    pub port: u16,
    /// Local address the request arrived on; `None` matches only listeners bound to
    /// every address.
    pub local_ip: Option<IpAddr>,
    /// `Host` header or `:authority`, as sent (port and case are handled here).
    pub host: &'a str,
    /// Request target: normalized path plus optional `?query` (see
    /// [`crate::path::normalize_path`]).
    pub path: &'a str,
    /// Method, such as `GET`.
    pub method: &'a str,
    /// Request headers.
    pub headers: &'a HeaderMap,
}

/// A successful lookup: the rule that handles the request and why.
#[derive(Debug, Clone, Copy)]
pub struct RouteMatch<'t> {
    /// The listener that owns the request's hostname.
    pub listener: ListenerId,
    /// The route the rule belongs to.
    pub route: RouteId,
    /// The rule.
    pub rule: &'t Rule,
    /// The same rule, as a handle into the table.
    pub rule_id: RuleId,
    /// Index of the rule within its route.
    pub rule_index: usize,
    /// Index of the match within the rule (0 for a rule without matches).
    pub match_index: usize,
    /// For a `PathPrefix` match, how many bytes of the path the prefix covered (0
    /// for `/`); what `ReplacePrefixMatch` replaces.
    pub matched_prefix_len: Option<usize>,
}

/// Why no rule handles a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoMatch {
    /// No listener on this address and port owns the request's hostname.
    #[error("no listener for this address, port and hostname")]
    NoListener,
    /// A listener owns the hostname but no rule matches the request.
    #[error("no route matches")]
    NoRoute,
}

/// A successful TLS passthrough lookup.
#[derive(Debug, Clone, Copy)]
pub struct TlsMatch<'t> {
    /// The `TLS` listener that owns the SNI hostname.
    pub listener: ListenerId,
    /// The TLS route.
    pub route: RouteId,
    /// Its backends.
    pub backends: &'t Backends,
}

/// A compiled, immutable route table. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct RouteTable {
    version: u64,
    /// Per port, sorted by port: the entrypoints on it, address-specific ones first.
    /// A data plane has few ports, so a scan beats hashing.
    ports: Vec<(u16, Vec<Entrypoint>)>,
    listeners: Vec<ListenerTable>,
    listener_info: Vec<ListenerInfo>,
    routes: Vec<RouteInfo>,
    rules: Vec<RuleSlot>,
    candidates: Vec<Candidate>,
}

/// Every listener sharing one local address and port.
#[derive(Debug)]
struct Entrypoint {
    address: Option<IpAddr>,
    listeners: HostIndex<u32>,
}

/// One listener's hosts: the rules of each HTTP host (held in the index itself, one
/// memory access fewer per lookup), and the winning passthrough route of each TLS host.
#[derive(Debug, Default)]
struct ListenerTable {
    http: HostIndex<HostRules>,
    tls: HostIndex<TlsTarget>,
}

#[derive(Debug)]
struct TlsTarget {
    route: RouteId,
    backends: Backends,
}

#[derive(Debug)]
struct RuleSlot {
    rule: Rule,
    route: RouteId,
    index: u32,
}

impl RouteTable {
    /// The config version this table was built from.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Every listener, in config order (indexed by [`ListenerId`]).
    pub fn listeners(&self) -> &[ListenerInfo] {
        &self.listener_info
    }

    /// A listener's details.
    pub fn listener_info(&self, id: ListenerId) -> Option<&ListenerInfo> {
        self.listener_info.get(id.0 as usize)
    }

    /// A route's kind, namespace and name.
    pub fn route_info(&self, id: RouteId) -> Option<&RouteInfo> {
        self.routes.get(id.0 as usize)
    }

    /// The rule `id` names (`None` for an id from another table).
    pub fn rule(&self, id: RuleId) -> Option<&Rule> {
        self.rules.get(id.0 as usize).map(|slot| &slot.rule)
    }

    /// The listener on `port` (and `local_ip`) that owns `hostname` (a `Host` value or
    /// an SNI name): used to pick a certificate and to detect misdirected requests.
    pub fn listener(
        &self,
        port: u16,
        local_ip: Option<IpAddr>,
        hostname: &str,
    ) -> Option<ListenerId> {
        let entrypoint = self.entrypoint(port, local_ip)?;
        let host = normalize_request_host(hostname);
        entrypoint.listeners.lookup(&host).map(|&id| ListenerId(id))
    }

    fn entrypoint(&self, port: u16, local_ip: Option<IpAddr>) -> Option<&Entrypoint> {
        let candidates = if self.ports.len() <= 8 {
            &self.ports.iter().find(|(p, _)| *p == port)?.1
        } else {
            let index = self.ports.binary_search_by_key(&port, |(p, _)| *p).ok()?;
            &self.ports[index].1
        };
        candidates
            .iter()
            .find(|entry| entry.address.is_some() && entry.address == local_ip)
            .or_else(|| candidates.iter().find(|entry| entry.address.is_none()))
    }

    /// The rule that handles an HTTP or gRPC request, by Gateway API precedence.
    pub fn route(&self, request: &RequestView<'_>) -> Result<RouteMatch<'_>, NoMatch> {
        let entrypoint = self
            .entrypoint(request.port, request.local_ip)
            .ok_or(NoMatch::NoListener)?;
        let host = normalize_request_host(request.host);
        let &listener = entrypoint
            .listeners
            .lookup(&host)
            .ok_or(NoMatch::NoListener)?;
        let host_rules = self.listeners[listener as usize]
            .http
            .lookup(&host)
            .ok_or(NoMatch::NoRoute)?;
        let (path, query) = split_query(request.path);
        let found = host_rules
            .find(path, &self.candidates, |candidate| {
                candidate.accepts(request.method, request.headers, query)
            })
            .ok_or(NoMatch::NoRoute)?;
        let hit = found.hit;
        Ok(RouteMatch {
            listener: ListenerId(listener),
            route: RouteId(hit.route),
            rule: &self.rules[hit.rule as usize].rule,
            rule_id: RuleId(hit.rule),
            rule_index: usize::from(hit.rule_index),
            match_index: usize::from(hit.match_index),
            matched_prefix_len: found.prefix_len,
        })
    }

    /// The TLS passthrough route for an SNI hostname on `port`.
    pub fn route_tls(
        &self,
        port: u16,
        local_ip: Option<IpAddr>,
        sni: &str,
    ) -> Option<TlsMatch<'_>> {
        let entrypoint = self.entrypoint(port, local_ip)?;
        let host = normalize_request_host(sni);
        let &listener = entrypoint.listeners.lookup(&host)?;
        let target = self.listeners[listener as usize].tls.lookup(&host)?;
        Some(TlsMatch {
            listener: ListenerId(listener),
            route: target.route,
            backends: &target.backends,
        })
    }
}

#[cfg(test)]
mod tests;
