//! TLS-ALPN-01 answers (RFC 8737): for a name being validated, a self-signed
//! certificate for that name alone carrying the critical `id-pe-acmeIdentifier`
//! extension (1.3.6.1.5.5.7.1.31) with the SHA-256 digest of the key authorization.
//! It is shown only to a client that offers ALPN `acme-tls/1`; the listener must also
//! list `acme-tls/1` in its ALPN protocols so the handshake can choose it, and close the
//! connection after the handshake.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::{Entry, Published, next_publication};
use crate::Error;

/// The ALPN protocol name of TLS-ALPN-01.
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Name to challenge certificate, shared by clones. As a [`ResolvesServerCert`] it
/// answers only handshakes that offer [`ACME_TLS_ALPN`].
#[derive(Debug, Clone, Default)]
pub struct TlsAlpnChallenges {
    names: Arc<RwLock<HashMap<String, Entry<Arc<CertifiedKey>>>>>,
}

impl TlsAlpnChallenges {
    /// The challenge certificate for `server_name` (the SNI, any case), if that name is
    /// being validated. Serve it only when the client offered [`ACME_TLS_ALPN`].
    pub fn certificate_for(&self, server_name: &str) -> Option<Arc<CertifiedKey>> {
        let names = self.names.read().unwrap_or_else(PoisonError::into_inner);
        names
            .get(&server_name.to_ascii_lowercase())
            .map(|(_, key)| Arc::clone(key))
    }

    /// Whether a ClientHello's ALPN list (as rustls gives it) offers `acme-tls/1`.
    pub fn offers_acme_tls<'a>(alpn: Option<impl Iterator<Item = &'a [u8]>>) -> bool {
        alpn.is_some_and(|mut protocols| protocols.any(|protocol| protocol == ACME_TLS_ALPN))
    }

    /// Whether no challenge is being validated.
    pub fn is_empty(&self) -> bool {
        let names = self.names.read().unwrap_or_else(PoisonError::into_inner);
        names.is_empty()
    }

    /// Publishes the challenge certificate for `name` (lower case) and the SHA-256
    /// digest of its key authorization.
    pub(crate) fn publish(&self, name: &str, digest: &[u8]) -> Result<Published, Error> {
        let key = Arc::new(challenge_certificate(name, digest)?);
        let id = next_publication();
        let mut names = self.names.write().unwrap_or_else(PoisonError::into_inner);
        names.insert(name.to_owned(), (id, key));
        drop(names);
        let store = Arc::clone(&self.names);
        let name = name.to_owned();
        Ok(Published::new(move || {
            let mut names = store.write().unwrap_or_else(PoisonError::into_inner);
            if names.get(&name).is_some_and(|(owner, _)| *owner == id) {
                names.remove(&name);
            }
        }))
    }
}

impl ResolvesServerCert for TlsAlpnChallenges {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if !Self::offers_acme_tls(client_hello.alpn()) {
            return None;
        }
        self.certificate_for(client_hello.server_name()?)
    }
}

/// The RFC 8737 §3 certificate: self-signed, a fresh P-256 key, one dNSName, the
/// critical acmeIdentifier extension.
fn challenge_certificate(name: &str, digest: &[u8]) -> Result<CertifiedKey, Error> {
    if digest.len() != 32 {
        return Err(Error::Task(format!(
            "key authorization digest has {} bytes, not 32",
            digest.len()
        )));
    }
    let generate = |what| move |source| Error::Generate { what, source };
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()])
        .map_err(generate("challenge certificate"))?;
    params
        .custom_extensions
        .push(rcgen::CustomExtension::new_acme_identifier(digest));
    let key = rcgen::KeyPair::generate().map_err(generate("challenge key"))?;
    let certificate = params
        .self_signed(&key)
        .map_err(generate("challenge certificate"))?;
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    // Not `CertifiedKey::from_der`: its key check parses the certificate with webpki,
    // which refuses the critical extension it does not know.
    let signing_key =
        rustls::crypto::aws_lc_rs::sign::any_ecdsa_type(&private).map_err(Error::ChallengeKey)?;
    Ok(CertifiedKey::new(
        vec![certificate.der().clone()],
        signing_key,
    ))
}
