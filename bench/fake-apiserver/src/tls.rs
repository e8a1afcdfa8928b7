//! TLS material and client configuration: a self-signed CA (rcgen, aws-lc-rs), a
//! server certificate for `127.0.0.1`, `::1` and `localhost` signed by it, the
//! rustls server configuration, and the kubeconfig text a client needs (server URL,
//! CA data, bearer token). Made once per fake, so a server brought back on the same
//! port presents the same CA to clients that kept their kubeconfig.

use std::sync::Arc;

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::Error;

/// The CA and the server's rustls configuration.
#[derive(Debug, Clone)]
pub(crate) struct Material {
    /// The CA certificate, PEM.
    pub(crate) ca_pem: String,
    /// rustls configuration with the server certificate (HTTP/1.1 by ALPN).
    pub(crate) server: Arc<ServerConfig>,
}

impl Material {
    /// A fresh CA and server certificate.
    pub(crate) fn generate() -> Result<Self, Error> {
        let ca_key = KeyPair::generate().map_err(Error::Certificate)?;
        let mut ca_params = CertificateParams::new(Vec::new()).map_err(Error::Certificate)?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "culvert-fake-apiserver-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(Error::Certificate)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().map_err(Error::Certificate)?;
        let mut params = CertificateParams::new(vec![
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            "localhost".to_owned(),
        ])
        .map_err(Error::Certificate)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let server_cert = params
            .signed_by(&server_key, &issuer)
            .map_err(Error::Certificate)?;

        let provider = culvert_tls::crypto_provider();
        let mut server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(Error::Tls)?
            .with_no_client_auth()
            .with_single_cert(
                vec![server_cert.der().clone(), ca_cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
            )
            .map_err(Error::Tls)?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            ca_pem: ca_cert.pem(),
            server: Arc::new(server),
        })
    }
}

/// A kubeconfig for `server` (an `https://` URL) trusting `ca_pem`, authenticating
/// with `token`, with a current context in namespace `default`.
pub(crate) fn kubeconfig(server: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: {server}
    certificate-authority-data: {ca}
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
    namespace: default
current-context: fake
users:
- name: fake
  user:
    token: {token}
"
    )
}
