//! Certificate choice during a handshake: SNI → the listener that owns that name on
//! this address (most specific hostname wins, as for `Host`) → the first of that
//! listener's certificates that covers the name, else its first certificate.

use std::net::SocketAddr;
use std::sync::Arc;

use culvert_router::RouteTable;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, DnsName, ServerName};

/// Picks a certificate by SNI for connections accepted on one address.
#[derive(Debug)]
pub(super) struct SniResolver {
    table: Arc<RouteTable>,
    bound: SocketAddr,
    /// Certificates by listener index.
    per_listener: Arc<[Vec<Arc<CertifiedKey>>]>,
}

impl SniResolver {
    pub(super) fn new(
        table: Arc<RouteTable>,
        bound: SocketAddr,
        per_listener: Arc<[Vec<Arc<CertifiedKey>>]>,
    ) -> Self {
        Self {
            table,
            bound,
            per_listener,
        }
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let sni = hello.server_name().unwrap_or("");
        let listener = super::listener_for(&self.table, self.bound, sni)?;
        let candidates = self.per_listener.get(listener.0 as usize)?;
        if candidates.len() > 1 {
            if let Some(covering) = candidates.iter().find(|key| covers(key, sni)) {
                return Some(Arc::clone(covering));
            }
        }
        candidates.first().cloned()
    }
}

/// Whether the leaf certificate of `key` is valid for the DNS name `sni`.
fn covers(key: &CertifiedKey, sni: &str) -> bool {
    let Some(leaf) = key.cert.first() else {
        return false;
    };
    let Ok(name) = DnsName::try_from(sni) else {
        return false;
    };
    let leaf = CertificateDer::from(leaf.as_ref());
    let Ok(cert) = webpki::EndEntityCert::try_from(&leaf) else {
        return false;
    };
    cert.verify_is_valid_for_subject_name(&ServerName::DnsName(name.to_owned()))
        .is_ok()
}
