//! What translation reads and cannot use: a connector token, a TLS Secret, a
//! GatewayConfig `tokenRef`, an annotation. Each variant names the object at fault
//! and never any secret value; its message is the text the Gateway API condition
//! that reports it carries, so conditions read the same whether or not the error
//! travelled as a value. (Manifests that do not load are [`load::Error`](crate::load::Error),
//! reported per document with the file and field path.)

use crate::model::{HTTPS_REDIRECT_ANNOTATION, TUNNEL_TOKEN_LABEL};

/// Why an object translation reads cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Secret meant to hold a connector token does not exist.
    #[error(
        "Secret {namespace}/{name} with the tunnel token not found (in a cluster it \
         needs the label {TUNNEL_TOKEN_LABEL})"
    )]
    TokenSecretNotFound {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
    },
    /// The token Secret has no such key.
    #[error("Secret {namespace}/{name} has no key {key:?}")]
    TokenKeyMissing {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
        /// The key asked for.
        key: String,
    },
    /// The token Secret's `data` holds the key, but not as standard base64.
    #[error("key {key:?} of Secret {namespace}/{name} is not base64")]
    TokenNotBase64 {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
        /// The key.
        key: String,
    },
    /// The token is not UTF-8 text.
    #[error("key {key:?} of Secret {namespace}/{name} is not text")]
    TokenNotText {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
        /// The key.
        key: String,
    },
    /// The text is not a connector token. The parser's message names the layer or
    /// field at fault, never a value of the secret.
    #[error("key {key:?} of Secret {namespace}/{name} is not a connector token: {source}")]
    TokenUnparsable {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
        /// The key.
        key: String,
        /// What the token parser refused (boxed: the protocol's error is large, and
        /// every translation result carries this type).
        #[source]
        source: Box<culvert_tunnel_proto::Error>,
    },
    /// The token parses, but its account tag is not a Cloudflare account ID.
    #[error(
        "the connector token in key {key:?} of Secret {namespace}/{name} names an \
         account tag that is not a Cloudflare account ID"
    )]
    TokenAccountTag {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
        /// The key.
        key: String,
    },
    /// A GatewayConfig's `tunnel.tokenRef` names something other than a core
    /// Secret.
    #[error("tunnel.tokenRef must name a core Secret, not {group}/{kind}")]
    TokenRefKind {
        /// The group named.
        group: String,
        /// The kind named.
        kind: String,
    },
    /// A GatewayConfig's `tunnel.tokenRef` names a Secret of another namespace: a
    /// tenant can only point at its own credentials.
    #[error(
        "tunnel.tokenRef must name a Secret in the Gateway's namespace {gateway_namespace}, \
         not in {namespace}"
    )]
    TokenRefNamespace {
        /// The Gateway's namespace.
        gateway_namespace: String,
        /// The namespace named.
        namespace: String,
    },
    /// A Gateway whose status advertises a tunnel no longer has a GatewayConfig.
    #[error("the GatewayConfig does not resolve")]
    GatewayConfigUnresolved,
    /// A listener certificate Secret is not of type `kubernetes.io/tls`.
    #[error("secret type is {kind:?}, not kubernetes.io/tls")]
    SecretType {
        /// The type it has.
        kind: String,
    },
    /// A TLS Secret lacks `tls.crt` or `tls.key`.
    #[error("secret has no {key}")]
    SecretKeyMissing {
        /// The key.
        key: &'static str,
    },
    /// A TLS Secret's `data` holds the key, but not as standard base64.
    #[error("{key} is not base64")]
    SecretNotBase64 {
        /// The key.
        key: &'static str,
    },
    /// `tls.crt` is not PEM.
    #[error("tls.crt is not PEM: {source}")]
    CertificateNotPem {
        /// What the PEM reader refused.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// `tls.crt` is PEM, without a certificate in it.
    #[error("tls.crt holds no PEM certificate")]
    NoCertificate,
    /// `tls.key` holds no PEM private key.
    #[error("tls.key holds no PEM private key: {source}")]
    KeyNotPem {
        /// What the PEM reader refused.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// A TLS Secret's value is not UTF-8 text.
    #[error("{key} is not UTF-8 text")]
    SecretNotText {
        /// The key.
        key: &'static str,
    },
    /// The HTTPS redirect annotation has a value other than `"301"` or `"308"`.
    #[error("annotation {HTTPS_REDIRECT_ANNOTATION}: {value:?} is not \"301\" or \"308\"")]
    RedirectCode {
        /// The value it has.
        value: String,
    },
    /// The HTTPS redirect annotation on a Gateway whose plane dials a tunnel, whose
    /// requests arrive on the first HTTP listener already terminated at the edge
    /// and would be redirected forever.
    #[error(
        "annotation {HTTPS_REDIRECT_ANNOTATION} cannot be used with a GatewayConfig \
         tunnel: tunnel requests reach the HTTP listener already terminated at the edge"
    )]
    RedirectWithTunnel,
}
