//! TLS termination for `HTTPS` listeners: key pairs loaded from the config (inline PEM
//! or files), and one rustls `ServerConfig` per listening address whose certificate
//! resolver picks the listener by SNI, then that listener's certificate.
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
    by_address: BTreeMap<SocketAddr, Arc<ServerConfig>>,
    store: CertificateStore,
}

impl TlsSettings {
    /// Loads the config's certificates and builds a server config for every address
    /// with an `HTTPS` listener. Refuses a listener that names a certificate the
    /// config does not define, or an `HTTPS` listener without certificates.
    pub fn build(config: &DataPlaneConfig, table: &Arc<RouteTable>) -> Result<Self, Error> {
        let store = CertificateStore::load(&config.certificates)?;
        let mut per_listener: Vec<Vec<Arc<CertifiedKey>>> =
            vec![Vec::new(); config.listeners.len()];
        let mut addresses = BTreeMap::<SocketAddr, ()>::new();
        for (index, listener) in config.listeners.iter().enumerate() {
            if listener.protocol != ListenerProtocol::Https {
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
            addresses.insert(listen_addr(listener.address, listener.port), ());
        }
        let per_listener: Arc<[Vec<Arc<CertifiedKey>>]> = per_listener.into();
        let mut by_address = BTreeMap::new();
        for addr in addresses.into_keys() {
            let resolver = SniResolver::new(Arc::clone(table), addr, Arc::clone(&per_listener));
            let mut server = ServerConfig::builder_with_provider(crate::crypto_provider())
                .with_safe_default_protocol_versions()
                .map_err(|err| Error::Tls(TlsError::Rustls(err)))?
                .with_no_client_auth()
                .with_cert_resolver(Arc::new(resolver));
            server.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
            resumption::enable(&mut server)?;
            by_address.insert(addr, Arc::new(server));
        }
        Ok(Self { by_address, store })
    }

    /// The server config for connections accepted on `bound`, if it terminates TLS.
    pub fn server_config(&self, bound: SocketAddr) -> Option<&Arc<ServerConfig>> {
        self.by_address.get(&bound)
    }

    /// The certificates loaded, for noticing renewed files.
    pub fn store(&self) -> &CertificateStore {
        &self.store
    }
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
