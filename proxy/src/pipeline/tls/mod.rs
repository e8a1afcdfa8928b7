//! Where a TLS connection goes, decided from its ClientHello before any TLS is done
//! with it: on an address that has `TLS` passthrough listeners, the server name the
//! client asked for picks the listener (exact name, then the longest wildcard, then
//! the listener without a hostname), and the listener picks what happens:
//!
//! - an `HTTPS` listener: TLS is terminated here and HTTP served, as on an address
//!   without passthrough;
//! - a `TLS` listener: its TLSRoute for the name chooses a weighted backend and one
//!   of its endpoints; in mode `Passthrough` the connection's bytes (the ClientHello
//!   first) are spliced to it untouched, in mode `Terminate` TLS is terminated here
//!   and the decrypted stream spliced (Gateway API `TLSRouteModeMixed`: all of
//!   them may share one port);
//! - no listener or no route: the connection is refused (reset). A client that sent
//!   no name is routed as the empty name, which only a listener and a route without
//!   hostnames match.

use std::net::SocketAddr;

use culvert_router::config::ListenerProtocol;
use culvert_router::{RouteId, RouteTable};

use super::attempts::pick_endpoint;
use super::connection::ConnectionInfo;
use super::failure::BackendFailure;

/// What to do with a TLS connection whose ClientHello has been read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TlsPlan {
    /// An `HTTPS` listener owns the name: terminate TLS and serve HTTP.
    Http,
    /// A TLSRoute owns the name: splice the connection's stream to a backend
    /// endpoint.
    Forward(TlsForward),
    /// Nothing here serves the name.
    Refuse(TlsRefusal),
}

/// A TLSRoute connection's route and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsForward {
    /// The TLSRoute that matched.
    pub(crate) route: RouteId,
    /// The chosen endpoint, or why the route's backend offers none.
    pub(crate) endpoint: Result<SocketAddr, BackendFailure>,
    /// TLS is terminated here first (a `TLS` listener in mode `Terminate`); else
    /// the TLS bytes pass through.
    pub(crate) terminate: bool,
}

/// Why a TLS connection is refused before any byte reaches a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TlsRefusal {
    /// No listener on this address owns the name.
    NoListener,
    /// A `TLS` listener owns the name but none of its routes does.
    NoRoute,
}

/// Plans a TLS connection that arrived on `connection` asking for `server_name`;
/// `random` picks the backend and endpoint.
pub(crate) fn plan_tls(
    table: &RouteTable,
    connection: &ConnectionInfo,
    server_name: Option<&str>,
    random: u64,
) -> TlsPlan {
    let name = server_name.unwrap_or("");
    let (port, local_ip) = (connection.local.port(), connection.local_ip());
    let Some(listener) = table.listener(port, local_ip, name) else {
        return TlsPlan::Refuse(TlsRefusal::NoListener);
    };
    let Some(info) = table.listener_info(listener) else {
        return TlsPlan::Refuse(TlsRefusal::NoListener);
    };
    match info.protocol {
        ListenerProtocol::Https => return TlsPlan::Http,
        ListenerProtocol::Tls => {}
        ListenerProtocol::Http => return TlsPlan::Refuse(TlsRefusal::NoListener),
    }
    let Some(found) = table.route_tls(port, local_ip, name) else {
        return TlsPlan::Refuse(TlsRefusal::NoRoute);
    };
    let endpoint = match found.backends.pick(random) {
        // The high half of `random` for the endpoint, so the two picks are not tied.
        Some(backend) => pick_endpoint(backend, random.rotate_left(32)),
        None => Err(BackendFailure::InvalidBackend),
    };
    TlsPlan::Forward(TlsForward {
        route: found.route,
        endpoint,
        terminate: info.terminates_tls,
    })
}

#[cfg(test)]
mod tests;
