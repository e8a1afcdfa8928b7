//! Validity of the Secrets listeners name as certificates: a `kubernetes.io/tls`
//! Secret whose `tls.crt` holds at least one PEM certificate and whose `tls.key`
//! holds a PEM private key. Checked pairs are copied inline into the data plane's
//! config, which is self-contained. [`secret_value`] is the one reader of a Secret's
//! values, for tunnel tokens too (`tunnel_claims`).

use crate::Error;
use crate::model::Secret;
use base64::Engine as _;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// A checked certificate chain and private key, as PEM text.
pub(crate) struct TlsPair {
    /// PEM certificate chain.
    pub(crate) chain: String,
    /// PEM private key.
    pub(crate) key: String,
}

/// Why a value cannot be read from a Secret. Neither variant carries any of the
/// value, so a message built from one never leaks a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SecretValueError {
    /// The Secret has no such key.
    Missing,
    /// `data` holds the key, but not as standard base64.
    NotBase64,
}

/// The bytes of `key` in `secret`: `stringData` as written (manifests), else `data`
/// base64-decoded (as the API server stores it).
pub(crate) fn secret_value(secret: &Secret, key: &str) -> Result<Vec<u8>, SecretValueError> {
    if let Some(text) = secret.string_data.get(key) {
        return Ok(text.as_bytes().to_vec());
    }
    let encoded = secret.data.get(key).ok_or(SecretValueError::Missing)?;
    base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| SecretValueError::NotBase64)
}

/// Why a Secret cannot serve as a listener certificate.
pub(crate) fn check_tls_secret(secret: &Secret) -> Result<(), Error> {
    tls_pair(secret).map(drop)
}

/// The certificate chain and key of a `kubernetes.io/tls` Secret, checked.
pub(crate) fn tls_pair(secret: &Secret) -> Result<TlsPair, Error> {
    if let Some(kind) = secret.kind.as_deref() {
        if kind != "kubernetes.io/tls" {
            return Err(Error::SecretType {
                kind: kind.to_owned(),
            });
        }
    }
    let field = |key: &'static str| {
        secret_value(secret, key).map_err(|error| match error {
            SecretValueError::Missing => Error::SecretKeyMissing { key },
            SecretValueError::NotBase64 => Error::SecretNotBase64 { key },
        })
    };
    let chain = field("tls.crt")?;
    let key = field("tls.key")?;
    let certificates: Vec<_> = CertificateDer::pem_slice_iter(&chain)
        .collect::<Result<_, _>>()
        .map_err(|source| Error::CertificateNotPem { source })?;
    if certificates.is_empty() {
        return Err(Error::NoCertificate);
    }
    PrivateKeyDer::from_pem_slice(&key).map_err(|source| Error::KeyNotPem { source })?;
    let text = |bytes: Vec<u8>, key: &'static str| {
        String::from_utf8(bytes).map_err(|_| Error::SecretNotText { key })
    };
    Ok(TlsPair {
        chain: text(chain, "tls.crt")?,
        key: text(key, "tls.key")?,
    })
}
