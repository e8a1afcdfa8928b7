//! The certificate an ACME listener serves before its first certificate is issued: a
//! self-signed one for its name, made in memory, so the listener (and TLS-ALPN-01
//! through it) works from the start and the config is not refused.

use std::sync::Arc;

use rustls::sign::CertifiedKey;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// A fresh self-signed P-256 certificate for `name`, or why rcgen or rustls refused.
pub(super) fn self_signed(name: &str) -> Result<Arc<CertifiedKey>, String> {
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()])
        .map_err(|err| format!("placeholder certificate for {name:?}: {err}"))?;
    // Says what it is to anyone who looks at it before the issued one arrives.
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("{name} (culvert: awaiting ACME)"),
    );
    let key = rcgen::KeyPair::generate().map_err(|err| format!("placeholder key: {err}"))?;
    let certificate = params
        .self_signed(&key)
        .map_err(|err| format!("placeholder certificate for {name:?}: {err}"))?;
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let signing_key = crate::crypto_provider()
        .key_provider
        .load_private_key(private)
        .map_err(|err| format!("placeholder key refused: {err}"))?;
    Ok(Arc::new(CertifiedKey::new(
        vec![certificate.der().clone()],
        signing_key,
    )))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use rustls_pki_types::{CertificateDer, DnsName, ServerName};

    #[test]
    fn is_for_the_name_it_was_made_for() {
        let key = super::self_signed("www.example.test").unwrap();
        let leaf = CertificateDer::from(key.cert[0].as_ref());
        let cert = webpki::EndEntityCert::try_from(&leaf).unwrap();
        let name = |n: &str| ServerName::DnsName(DnsName::try_from(n).unwrap().to_owned());
        assert!(
            cert.verify_is_valid_for_subject_name(&name("www.example.test"))
                .is_ok()
        );
        assert!(
            cert.verify_is_valid_for_subject_name(&name("other.example.test"))
                .is_err()
        );
    }
}
