//! Certificate choice during a handshake: SNI → the listener that owns that name on
//! this address (most specific hostname wins, as for `Host`) → the first of that
//! listener's certificates that covers the name, else its first certificate. On an
//! address with ACME listeners, a handshake offering ALPN `acme-tls/1` gets the
//! TLS-ALPN-01 challenge certificate for its name, or nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use culvert_acme::TlsAlpnChallenges;
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
    /// The TLS-ALPN-01 answers, on an address with ACME listeners.
    challenges: Option<TlsAlpnChallenges>,
}

impl SniResolver {
    pub(super) fn new(
        table: Arc<RouteTable>,
        bound: SocketAddr,
        per_listener: Arc<[Vec<Arc<CertifiedKey>>]>,
        challenges: Option<TlsAlpnChallenges>,
    ) -> Self {
        Self {
            table,
            bound,
            per_listener,
            challenges,
        }
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(challenges) = &self.challenges {
            if TlsAlpnChallenges::offers_acme_tls(hello.alpn()) {
                return challenges.certificate_for(hello.server_name()?);
            }
        }
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
