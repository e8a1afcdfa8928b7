//! Client certificates (Gateway `spec.tls.frontend`): the verifier an address's
//! server configs use, and the identity of the certificate a client presented.
//!
//! `AllowValidOnly` is rustls-webpki's client verifier as it is: a client without a
//! certificate that chains to the listener's CAs fails the handshake.
//! `AllowInsecureFallback` asks for a certificate but lets any client finish the
//! handshake; whether the certificate it showed was valid is checked again once the
//! handshake is done ([`ClientAuth::identify`]), so a certificate that did not
//! verify is never reported or forwarded as if it had.

use std::fmt::Write as _;
use std::sync::Arc;

use culvert_router::config::{ClientValidationConfig, ClientValidationMode};
use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};

use crate::{Error, TlsError};

/// How one address checks client certificates, shared by its connections.
#[derive(Debug)]
pub struct ClientAuth {
    /// The CA-checking verifier.
    webpki: Arc<dyn ClientCertVerifier>,
    /// What the server configs use: `webpki`, or `webpki` with the fallback.
    pub(super) verifier: Arc<dyn ClientCertVerifier>,
    /// Send the verified identity to backends.
    pub forward_identity: bool,
}

/// The certificate a client presented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// Lower-case hex SHA-256 of the leaf certificate's DER.
    pub hash: Arc<str>,
    /// Whether it chains to the listener's CAs (always, but under
    /// `AllowInsecureFallback`).
    pub verified: bool,
}

impl ClientAuth {
    /// The verifier `config` asks for; `listener` names it in errors.
    pub(super) fn new(config: &ClientValidationConfig, listener: &str) -> Result<Self, Error> {
        let refused = |reason: String| {
            Error::Tls(TlsError::ClientValidation {
                listener: listener.to_owned(),
                reason,
            })
        };
        let mut roots = rustls::RootCertStore::empty();
        for certificate in CertificateDer::pem_slice_iter(config.ca_certificates_pem.as_bytes()) {
            let certificate =
                certificate.map_err(|error| refused(format!("CA bundle is not PEM: {error}")))?;
            roots
                .add(certificate)
                .map_err(|error| refused(format!("CA certificate refused: {error}")))?;
        }
        if roots.is_empty() {
            return Err(refused("CA bundle holds no certificate".to_owned()));
        }
        let webpki =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), crate::crypto_provider())
                .build()
                .map_err(|error| refused(error.to_string()))?;
        let verifier: Arc<dyn ClientCertVerifier> = match config.mode {
            ClientValidationMode::AllowValidOnly => Arc::clone(&webpki),
            ClientValidationMode::AllowInsecureFallback => Arc::new(InsecureFallback {
                inner: Arc::clone(&webpki),
            }),
        };
        Ok(Self {
            webpki,
            verifier,
            forward_identity: config.forward_identity,
        })
    }

    /// The identity of the chain a client presented in a finished handshake.
    pub fn identify(&self, chain: &[CertificateDer<'_>]) -> Option<ClientIdentity> {
        let (leaf, intermediates) = chain.split_first()?;
        let verified = self
            .webpki
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .is_ok();
        Some(ClientIdentity {
            hash: sha256_hex(leaf).into(),
            verified,
        })
    }
}

fn sha256_hex(der: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, der);
    digest
        .as_ref()
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// `AllowInsecureFallback`: asks for a certificate, finishes every handshake.
#[derive(Debug)]
struct InsecureFallback {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for InsecureFallback {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Checked again after the handshake, for the record only.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // The client still proves it holds the certificate's key.
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
