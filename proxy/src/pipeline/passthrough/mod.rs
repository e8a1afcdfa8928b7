//! Where a TLS connection goes, decided from its ClientHello before any TLS is done
//! with it: on an address that has `TLS` passthrough listeners, the server name the
//! client asked for picks the listener (exact name, then the longest wildcard, then
//! the listener without a hostname), and the listener picks what happens:
//!
//! - an `HTTPS` listener: TLS is terminated here and HTTP served, as on an address
//!   without passthrough (Gateway API `TLSRouteModeMixed`: both share port 443);
//! - a `TLS` listener: its TLSRoute for the name chooses a weighted backend and one
//!   of its endpoints, and the connection's bytes (the ClientHello first) are spliced
//!   to it untouched;
//! - no listener or no route: the connection is refused (reset). A client that sent
//!   no name is routed as the empty name, which only a listener and a route without
//!   hostnames match.

use std::net::{IpAddr, SocketAddr};

use culvert_router::config::ListenerProtocol;
use culvert_router::{RouteId, RouteTable};

use super::attempts::pick_endpoint;
use super::failure::BackendFailure;

/// What to do with a TLS connection whose ClientHello has been read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TlsPlan {
    /// An `HTTPS` listener owns the name: terminate TLS and serve HTTP.
    Terminate,
    /// A TLSRoute owns the name: splice the connection to a backend endpoint.
    Splice(Splice),
    /// Nothing here serves the name.
    Refuse(TlsRefusal),
}

/// A passthrough connection's route and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Splice {
    /// The TLSRoute that matched.
    pub(crate) route: RouteId,
    /// The chosen endpoint, or why the route's backend offers none.
    pub(crate) endpoint: Result<SocketAddr, BackendFailure>,
}

/// Why a TLS connection is refused before any byte reaches a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TlsRefusal {
    /// No listener on this address owns the name.
    NoListener,
    /// A `TLS` listener owns the name but none of its routes does.
    NoRoute,
}

/// Plans a TLS connection that arrived on `local` (through a socket bound to
/// `bound`) asking for `server_name`; `random` picks the backend and endpoint.
pub(crate) fn plan_tls(
    table: &RouteTable,
    local: SocketAddr,
    bound: SocketAddr,
    server_name: Option<&str>,
    random: u64,
) -> TlsPlan {
    let name = server_name.unwrap_or("");
    let local_ip: Option<IpAddr> = (!bound.ip().is_unspecified()).then_some(local.ip());
    let Some(listener) = table.listener(local.port(), local_ip, name) else {
        return TlsPlan::Refuse(TlsRefusal::NoListener);
    };
    match table.listener_info(listener).map(|info| info.protocol) {
        Some(ListenerProtocol::Https) => return TlsPlan::Terminate,
        Some(ListenerProtocol::Tls) => {}
        Some(ListenerProtocol::Http) | None => return TlsPlan::Refuse(TlsRefusal::NoListener),
    }
    let Some(found) = table.route_tls(local.port(), local_ip, name) else {
        return TlsPlan::Refuse(TlsRefusal::NoRoute);
    };
    let endpoint = match found.backends.pick(random) {
        // The high half of `random` for the endpoint, so the two picks are not tied.
        Some(backend) => pick_endpoint(backend, random.rotate_left(32)),
        None => Err(BackendFailure::InvalidBackend),
    };
    TlsPlan::Splice(Splice {
        route: found.route,
        endpoint,
    })
}

#[cfg(test)]
mod tests;
