//! Trust anchors: certificates from PEM text, and the system's store through
//! `rustls-native-certs`. Which of them a client trusts, and whether an empty store is
//! an error, is the caller's policy.

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::Error;

/// Adds every certificate in `pem` to `roots`; refused when the text is not PEM, holds
/// no certificate, or holds one rustls does not take as an anchor. Returns how many
/// were added.
pub fn add_pem_roots(roots: &mut RootCertStore, pem: &[u8]) -> Result<usize, Error> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::Pem)?;
    if certificates.is_empty() {
        return Err(Error::NoCertificate);
    }
    let count = certificates.len();
    for certificate in certificates {
        roots.add(certificate).map_err(Error::Anchor)?;
    }
    Ok(count)
}

/// A store of the certificates in `pem` alone (see [`add_pem_roots`]).
pub fn pem_roots(pem: &[u8]) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    add_pem_roots(&mut roots, pem)?;
    Ok(roots)
}

/// What reading the system's roots found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct SystemRoots {
    /// How many certificates were added.
    pub added: usize,
    /// How many were found but not usable as anchors.
    pub ignored: usize,
    /// Why some could not be read (a missing bundle, an unreadable file).
    pub errors: Vec<rustls_native_certs::Error>,
}

impl SystemRoots {
    /// The read errors on one line, `; `-separated.
    pub fn errors_text(&self) -> String {
        let errors: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        errors.join("; ")
    }
}

/// Adds the platform's trusted roots (`SSL_CERT_FILE`/`SSL_CERT_DIR`, else the
/// system bundle) to `roots`, skipping those rustls cannot use.
pub fn add_system_roots(roots: &mut RootCertStore) -> SystemRoots {
    let found = rustls_native_certs::load_native_certs();
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    SystemRoots {
        added,
        ignored,
        errors: found.errors,
    }
}

#[cfg(test)]
mod tests;
