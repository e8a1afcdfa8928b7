//! TLS for load runs and test clients on loopback, where the server's certificate is
//! made up on the spot and nothing needs to be trusted.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::Error;
use crate::echo::EchoTls;

/// A client config with `provider` that takes any server certificate (see
/// [`AcceptAnyCertificate`]) and offers `alpn`.
pub fn trusting_client_config(
    provider: Arc<CryptoProvider>,
    alpn: &[&[u8]],
) -> Result<Arc<ClientConfig>, rustls::Error> {
    let mut config = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate::new(provider)))
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// Accepts any server certificate but still checks handshake signatures, so the
/// server must hold the key of the certificate it sent.
#[derive(Debug)]
pub struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl AcceptAnyCertificate {
    /// Checks signatures with `provider`'s algorithms.
    pub fn new(provider: Arc<CryptoProvider>) -> Self {
        Self(provider)
    }
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A server config with the certificate `chain` and `key` (PEM); with `client_ca`
/// (PEM), a client may show a certificate, and one it shows must be signed by one
/// of those CAs.
pub(crate) fn server_config(
    chain: &str,
    key: &str,
    client_ca: Option<&str>,
) -> Result<Arc<ServerConfig>, Error> {
    let unusable = |error: &dyn std::fmt::Display| Error::Certificate(error.to_string());
    let chain = CertificateDer::pem_slice_iter(chain.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| unusable(&error))?;
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|error| unusable(&error))?;
    let provider = culvert_tls::crypto_provider();
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|error| unusable(&error))?;
    let builder = match client_ca {
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let certificate = certificate.map_err(|error| unusable(&error))?;
                roots.add(certificate).map_err(|error| unusable(&error))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|error| unusable(&error))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|error| unusable(&error))?;
    Ok(Arc::new(config))
}

/// The server config of a TLS [`EchoBackend`](crate::EchoBackend): its certificate,
/// its client CAs, ALPN `h2` and `http/1.1`.
pub(crate) fn echo_server_config(tls: &EchoTls) -> Result<Arc<ServerConfig>, Error> {
    let config = server_config(
        &tls.certificate_pem,
        &tls.private_key_pem,
        tls.client_ca_pem.as_deref(),
    )?;
    let mut config = Arc::unwrap_or_clone(config);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
