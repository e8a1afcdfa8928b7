//! TLS termination for `HTTPS` listeners and `TLS` listeners in mode `Terminate`: key
//! pairs loaded from the config (inline PEM or files), and rustls `ServerConfig`s per
//! listening address (one offering ALPN for HTTP, one without for TLS streams) whose
//! certificate resolver picks the listener by SNI, then that listener's certificate.
//!
//! Everything here is built when a snapshot is compiled, off the request path; a
//! handshake only reads it. Files named by the config are stamped (modification time
//! and length) so the config API thread can notice a renewed certificate and recompile
//! (see [`CertificateStore::files_changed`]). Never touches a socket.
//!
//! Start at [`TlsSettings::build`].

mod certificate;
mod resolver;
mod resumption;

pub use certificate::CertificateStore;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use culvert_router::config::{DataPlaneConfig, ListenerProtocol};
use culvert_router::{ListenerId, RouteTable};
use rustls::ServerConfig;
use rustls::sign::CertifiedKey;

use crate::{Error, TlsError};
use resolver::SniResolver;

/// ALPN protocols offered by `HTTPS` listeners, most preferred first.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The TLS side of a snapshot: a server config for each address that terminates TLS.
#[derive(Debug, Default)]
pub struct TlsSettings {
    /// For `HTTPS` listeners: ALPN `h2` and `http/1.1`.
    by_address: BTreeMap<SocketAddr, Arc<ServerConfig>>,
    /// For `TLS` listeners in mode `Terminate`: no ALPN (the stream is not HTTP).
    streams: BTreeMap<SocketAddr, Arc<ServerConfig>>,
    store: CertificateStore,
}

/// Which kinds of terminating listeners an address has.
#[derive(Debug, Default, Clone, Copy)]
struct Terminates {
    http: bool,
    stream: bool,
}

impl TlsSettings {
    /// Loads the config's certificates and builds the server configs of every
    /// address with a listener that terminates TLS (`HTTPS`, or `TLS` in mode
    /// `Terminate`). Refuses such a listener without certificates or naming a
    /// certificate the config does not define.
    pub fn build(config: &DataPlaneConfig, table: &Arc<RouteTable>) -> Result<Self, Error> {
        let store = CertificateStore::load(&config.certificates)?;
        let mut per_listener: Vec<Vec<Arc<CertifiedKey>>> =
            vec![Vec::new(); config.listeners.len()];
        let mut addresses = BTreeMap::<SocketAddr, Terminates>::new();
        for (index, listener) in config.listeners.iter().enumerate() {
            if !listener.terminates_tls() {
                continue;
            }
            let refs = listener
                .tls
                .as_ref()
                .map(|tls| tls.certificate_refs.as_slice())
                .unwrap_or_default();
            if refs.is_empty() {
                return Err(Error::Tls(TlsError::NoCertificate {
                    listener: listener.name.clone(),
                }));
            }
            for reference in refs {
                let key = store
                    .get(&reference.namespace, &reference.name)
                    .ok_or_else(|| {
                        Error::Tls(TlsError::UnknownCertificate {
                            listener: listener.name.clone(),
                            namespace: reference.namespace.clone(),
                            name: reference.name.clone(),
                        })
                    })?;
                per_listener[index].push(key);
            }
            let terminates = addresses
                .entry(listen_addr(listener.address, listener.port))
                .or_default();
            match listener.protocol {
                ListenerProtocol::Https => terminates.http = true,
                _ => terminates.stream = true,
            }
        }
        let per_listener: Arc<[Vec<Arc<CertifiedKey>>]> = per_listener.into();
        let mut by_address = BTreeMap::new();
        let mut streams = BTreeMap::new();
        for (addr, terminates) in addresses {
            let resolver = Arc::new(SniResolver::new(
                Arc::clone(table),
                addr,
                Arc::clone(&per_listener),
            ));
            if terminates.http {
                by_address.insert(addr, server_config(&resolver, &ALPN)?);
            }
            if terminates.stream {
                streams.insert(addr, server_config(&resolver, &[])?);
            }
        }
        Ok(Self {
            by_address,
            streams,
            store,
        })
    }

    /// The server config for HTTP connections accepted on `bound`, if it has
    /// `HTTPS` listeners.
    pub fn server_config(&self, bound: SocketAddr) -> Option<&Arc<ServerConfig>> {
        self.by_address.get(&bound)
    }

    /// The server config for connections accepted on `bound` to a `TLS` listener
    /// that terminates, if it has any.
    pub fn stream_config(&self, bound: SocketAddr) -> Option<&Arc<ServerConfig>> {
        self.streams.get(&bound)
    }

    /// The certificates loaded, for noticing renewed files.
    pub fn store(&self) -> &CertificateStore {
        &self.store
    }
}

/// A server config whose certificates `resolver` picks, offering `alpn`, with the
/// process-wide session resumption.
fn server_config(resolver: &Arc<SniResolver>, alpn: &[&[u8]]) -> Result<Arc<ServerConfig>, Error> {
    let mut server = ServerConfig::builder_with_provider(crate::crypto_provider())
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::Tls(TlsError::Rustls(err)))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::clone(resolver) as Arc<dyn rustls::server::ResolvesServerCert>);
    server.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    resumption::enable(&mut server)?;
    Ok(Arc::new(server))
}

/// The socket address a listener binds: its address, or every IPv4 address.
pub(crate) fn listen_addr(address: Option<std::net::IpAddr>, port: u16) -> SocketAddr {
    let ip = address.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into());
    SocketAddr::new(ip, port)
}

/// The listener that owns `hostname` on the address a connection was accepted on.
pub(crate) fn listener_for(
    table: &RouteTable,
    bound: SocketAddr,
    hostname: &str,
) -> Option<ListenerId> {
    let local_ip = (!bound.ip().is_unspecified()).then_some(bound.ip());
    table.listener(bound.port(), local_ip, hostname)
}

#[cfg(test)]
mod tests;
