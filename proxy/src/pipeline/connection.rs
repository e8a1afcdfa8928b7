//! What the pipeline knows about the connection a request came on: who sent it,
//! where it arrived, and whether TLS was terminated (here or at the tunnel edge).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::fields::IpText;
use crate::tls::ClientIdentity;

/// How a connection reached the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Clear text.
    Plain,
    /// TLS terminated here, with the SNI name the client sent (if it sent one) and
    /// the certificate it showed.
    Tls {
        sni: Option<Arc<str>>,
        client: ClientCertificate,
    },
}

/// The client certificate side of a TLS connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ClientCertificate {
    /// The certificate the client showed, if the listener asked for one.
    pub(crate) identity: Option<ClientIdentity>,
    /// The listener sends a verified identity to backends
    /// (`X-Forwarded-Client-Cert`), and drops that field from what clients send.
    pub(crate) forward: bool,
}

impl ClientCertificate {
    /// The identity to record: a verified certificate's hash.
    pub(crate) fn verified(&self) -> Option<&ClientIdentity> {
        self.identity.as_ref().filter(|identity| identity.verified)
    }
}

/// What a request handler knows about its connection.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionInfo {
    /// The client (or the proxy in front of us).
    pub(crate) peer: SocketAddr,
    /// `peer`'s address as text, for the forwarding fields.
    pub(crate) peer_text: IpText,
    /// The local address the connection arrived on.
    pub(crate) local: SocketAddr,
    /// The address the listening socket is bound to (may be unspecified).
    pub(crate) bound: SocketAddr,
    /// Whether TLS was terminated here, and for which name.
    pub(crate) transport: Transport,
    /// The request came over a tunnel stream (the edge terminated the client's TLS).
    pub(crate) tunnel: bool,
}

impl ConnectionInfo {
    /// A connection from `peer`, arrived on `local` through a socket bound to
    /// `bound`; not TLS, not a tunnel stream.
    pub(crate) fn new(peer: SocketAddr, local: SocketAddr, bound: SocketAddr) -> Self {
        Self {
            peer,
            peer_text: IpText::new(peer.ip()),
            local,
            bound,
            transport: Transport::Plain,
            tunnel: false,
        }
    }

    /// The local address routing goes by: the address arrived on when the listening
    /// socket is bound to one, `None` (listeners of every address) when it is
    /// bound to all of them.
    pub(crate) fn local_ip(&self) -> Option<IpAddr> {
        (!self.bound.ip().is_unspecified()).then_some(self.local.ip())
    }

    /// `https` when TLS was terminated (here or at the tunnel edge), else `http`.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.transport != Transport::Plain || self.tunnel {
            "https"
        } else {
            "http"
        }
    }
}
