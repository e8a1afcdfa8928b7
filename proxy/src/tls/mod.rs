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
mod client_auth;
mod resolver;
mod resumption;
pub(crate) mod upstream;

pub use certificate::CertificateStore;
pub use client_auth::{ClientAuth, ClientIdentity};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use culvert_router::config::{ClientValidationConfig, DataPlaneConfig, ListenerProtocol};
use culvert_router::{ListenerId, RouteTable};
use rustls::ServerConfig;
use rustls::sign::CertifiedKey;

use crate::acme::AcmeCertificates;
use crate::{Error, TlsError};
use culvert_acme::ACME_TLS_ALPN;
use resolver::SniResolver;

/// ALPN protocols offered by `HTTPS` listeners, most preferred first.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// ALPN protocols offered where an `HTTPS` listener does ACME: TLS-ALPN-01's too.
const ALPN_WITH_ACME: [&[u8]; 3] = [b"h2", b"http/1.1", ACME_TLS_ALPN];

/// The TLS side of a snapshot: a server config for each address that terminates TLS.
#[derive(Debug, Default)]
pub struct TlsSettings {
    /// For `HTTPS` listeners: ALPN `h2` and `http/1.1`.
    by_address: BTreeMap<SocketAddr, Termination>,
    /// For `TLS` listeners in mode `Terminate`: no ALPN (the stream is not HTTP).
    streams: BTreeMap<SocketAddr, Termination>,
    store: CertificateStore,
}

/// What a connection to an address that terminates TLS gets.
#[derive(Debug, Clone)]
pub struct Termination {
    /// The handshake's settings.
    pub config: Arc<ServerConfig>,
    /// How client certificates are checked, when they are asked for.
    pub client_auth: Option<Arc<ClientAuth>>,
}

/// What the terminating listeners of one address ask for.
#[derive(Debug, Default, Clone)]
struct Terminates<'c> {
    http: bool,
    stream: bool,
    /// An ACME listener is here: TLS-ALPN-01 handshakes are answered.
    acme: bool,
    /// The first listener's client validation, and that listener's name.
    validation: Option<(Option<&'c ClientValidationConfig>, &'c str)>,
}

impl TlsSettings {
    /// Loads the config's certificates and builds the server configs of every
    /// address with a listener that terminates TLS (`HTTPS`, or `TLS` in mode
    /// `Terminate`). Refuses such a listener without certificates or naming a
    /// certificate the config does not define, and an ACME listener without `acme`.
    pub fn build(
        config: &DataPlaneConfig,
        table: &Arc<RouteTable>,
        acme: Option<&AcmeCertificates>,
    ) -> Result<Self, Error> {
        let mut store = CertificateStore::load(&config.certificates)?;
        let mut per_listener: Vec<Vec<Arc<CertifiedKey>>> =
            vec![Vec::new(); config.listeners.len()];
        let mut addresses = BTreeMap::<SocketAddr, Terminates<'_>>::new();
        for (index, listener) in config.listeners.iter().enumerate() {
            if !listener.terminates_tls() {
                continue;
            }
            let refs = listener
                .tls
                .as_ref()
                .map(|tls| tls.certificate_refs.as_slice())
                .unwrap_or_default();
            let acme_name = listener.acme_name();
            if let Some(name) = acme_name {
                let acme = acme.ok_or_else(|| {
                    Error::Tls(TlsError::AcmeNotConfigured {
                        listener: listener.name.clone(),
                    })
                })?;
                let key = acme.certificate_for(name, &mut store).map_err(|reason| {
                    Error::Tls(TlsError::Acme {
                        listener: listener.name.clone(),
                        reason,
                    })
                })?;
                per_listener[index].push(key);
            } else if refs.is_empty() {
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
            let addr = listen_addr(listener.address, listener.port);
            let terminates = addresses.entry(addr).or_default();
            match listener.protocol {
                ListenerProtocol::Https => terminates.http = true,
                _ => terminates.stream = true,
            }
            terminates.acme |= acme_name.is_some();
            let validation = listener
                .tls
                .as_ref()
                .and_then(|tls| tls.client_validation.as_ref());
            match terminates.validation {
                None => terminates.validation = Some((validation, &listener.name)),
                Some((first, _)) if first == validation => {}
                Some((_, first)) => {
                    return Err(Error::Tls(TlsError::ClientValidation {
                        listener: listener.name.clone(),
                        reason: format!(
                            "listener {first:?} on {addr} asks for other client certificate validation; one address validates one way"
                        ),
                    }));
                }
            }
        }
        let per_listener: Arc<[Vec<Arc<CertifiedKey>>]> = per_listener.into();
        let mut by_address = BTreeMap::new();
        let mut streams = BTreeMap::new();
        for (addr, terminates) in addresses {
            let challenges = acme
                .filter(|_| terminates.acme)
                .map(|acme| acme.tls_alpn01().clone());
            let resolver = Arc::new(SniResolver::new(
                Arc::clone(table),
                addr,
                Arc::clone(&per_listener),
                challenges,
            ));
            let client_auth = match terminates.validation {
                Some((Some(validation), listener)) => {
                    Some(Arc::new(ClientAuth::new(validation, listener)?))
                }
                _ => None,
            };
            let termination = |alpn: &[&[u8]]| -> Result<Termination, Error> {
                Ok(Termination {
                    config: server_config(&resolver, client_auth.as_deref(), alpn)?,
                    client_auth: client_auth.clone(),
                })
            };
            if terminates.http {
                let alpn: &[&[u8]] = if terminates.acme {
                    &ALPN_WITH_ACME
                } else {
                    &ALPN
                };
                by_address.insert(addr, termination(alpn)?);
            }
            if terminates.stream {
                streams.insert(addr, termination(&[])?);
            }
        }
        Ok(Self {
            by_address,
            streams,
            store,
        })
    }

    /// The TLS termination of HTTP connections accepted on `bound`, if it has
    /// `HTTPS` listeners.
    pub fn server_config(&self, bound: SocketAddr) -> Option<&Termination> {
        self.by_address.get(&bound)
    }

    /// The TLS termination of connections accepted on `bound` to a `TLS` listener
    /// that terminates, if it has any.
    pub fn stream_config(&self, bound: SocketAddr) -> Option<&Termination> {
        self.streams.get(&bound)
    }

    /// The certificates loaded, for noticing renewed files.
    pub fn store(&self) -> &CertificateStore {
        &self.store
    }
}

/// A server config whose certificates `resolver` picks, asking clients for
/// certificates as `client_auth` says, offering `alpn`, with the process-wide
/// session resumption.
fn server_config(
    resolver: &Arc<SniResolver>,
    client_auth: Option<&ClientAuth>,
    alpn: &[&[u8]],
) -> Result<Arc<ServerConfig>, Error> {
    let builder = ServerConfig::builder_with_provider(crate::crypto_provider())
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::Tls(TlsError::Rustls(err)))?;
    let builder = match client_auth {
        Some(client_auth) => builder.with_client_cert_verifier(Arc::clone(&client_auth.verifier)),
        None => builder.with_no_client_auth(),
    };
    let mut server = builder
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
