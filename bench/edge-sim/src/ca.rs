//! The simulator's private CA and its edge certificate (PROTOCOL.md §2.2).
//!
//! A CA is generated once (or loaded from PEM, so a restarted simulator keeps the CA
//! connectors were told to trust) and issues a leaf for `quic.cftunnel.com`,
//! `h2.cftunnel.com` and `probe.cftunnel.com` (cloudflared's connectivity
//! pre-checks). The CA parameters are fixed, so a leaf issued after a reload chains
//! to the same CA certificate. Only the TLS server side lives here: the
//! QUIC configuration (TLS 1.3, ALPN `argotunnel`) and the HTTP/2 one (TLS 1.2 or
//! 1.3, no ALPN).

use std::sync::Arc;

use quinn::crypto::rustls::QuicServerConfig;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use culvert_connector::io::{
    ALPN, H2_SERVER_NAME, QUIC_SERVER_NAME, crypto_provider, pem_certificates, transport,
};

use crate::error::Error;

/// The name cloudflared's connectivity pre-checks dial (2026.8.2 and later).
const PROBE_SERVER_NAME: &str = "probe.cftunnel.com";

/// How many streams a connector may open on one connection (it opens only the
/// control stream).
const CONNECTOR_STREAMS: u32 = 16;

/// A CA certificate and its key, both PEM.
#[derive(Clone)]
pub struct SimCa {
    /// The CA certificate; hand it to connectors (`--cacert`).
    pub cert_pem: String,
    /// The CA's private key (PKCS#8 PEM).
    pub key_pem: String,
}

impl std::fmt::Debug for SimCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCa").finish_non_exhaustive()
    }
}

fn tls_error(what: &'static str) -> impl Fn(rcgen::Error) -> Error {
    move |source| Error::Certificate { what, source }
}

/// The fixed CA parameters (a reloaded key reissues under the same name).
fn ca_params() -> Result<CertificateParams, Error> {
    let mut params =
        CertificateParams::new(Vec::<String>::new()).map_err(tls_error("ca parameters"))?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "culvert-edge-sim CA");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "Culvert");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(params)
}

impl SimCa {
    /// A fresh CA (ECDSA P-256).
    pub fn generate() -> Result<Self, Error> {
        let key = KeyPair::generate().map_err(tls_error("ca key"))?;
        let cert = ca_params()?
            .self_signed(&key)
            .map_err(tls_error("ca certificate"))?;
        Ok(Self {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A leaf for the edge names, as rustls wants it.
    fn leaf(
        &self,
    ) -> Result<
        (
            Vec<rustls_pki_types::CertificateDer<'static>>,
            PrivateKeyDer<'static>,
        ),
        Error,
    > {
        let ca_key = KeyPair::from_pem(&self.key_pem).map_err(tls_error("ca key pem"))?;
        let issuer = Issuer::new(ca_params()?, ca_key);
        let mut params = CertificateParams::new(vec![
            QUIC_SERVER_NAME.to_owned(),
            H2_SERVER_NAME.to_owned(),
            PROBE_SERVER_NAME.to_owned(),
        ])
        .map_err(tls_error("leaf parameters"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, QUIC_SERVER_NAME);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(tls_error("leaf key"))?;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(tls_error("leaf certificate"))?;
        let ca = pem_certificates(self.cert_pem.as_bytes(), "ca certificate")?;
        let mut chain = vec![cert.der().clone()];
        chain.extend(ca);
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((chain, key))
    }

    /// The TLS configuration of the HTTP/2 listeners: TLS 1.2 or 1.3 (cloudflared's
    /// Go stack accepts both), the same leaf, no ALPN (cloudflared sends none).
    pub(crate) fn h2_server_config(&self) -> Result<Arc<rustls::ServerConfig>, Error> {
        let (chain, key) = self.leaf()?;
        let tls = rustls::ServerConfig::builder_with_provider(crypto_provider())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        Ok(Arc::new(tls))
    }

    /// The quinn server configuration: TLS 1.3, ALPN `argotunnel`, the leaf, and the
    /// shared transport settings (keep-alive 1 s, idle 5 s, datagrams on).
    pub(crate) fn server_config(&self) -> Result<quinn::ServerConfig, Error> {
        let (chain, key) = self.leaf()?;
        let mut tls = rustls::ServerConfig::builder_with_provider(crypto_provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        tls.alpn_protocols = vec![ALPN.to_vec()];
        let quic = QuicServerConfig::try_from(Arc::new(tls))?;
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(quic));
        config.transport_config(Arc::new(transport(CONNECTOR_STREAMS)));
        Ok(config)
    }
}
