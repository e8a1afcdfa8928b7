//! Raw certificate types: the key pairs `HTTPS` listeners serve, inline or by file.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One certificate chain and private key, named the way listeners refer to it
/// (`namespace`/`name`, like a `kubernetes.io/tls` Secret).
///
/// Each part is given either inline (PEM text) or as a file path; a file is re-read
/// when it changes, so a renewed certificate is served without a new config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificateConfig {
    /// Namespace listeners name in `certificateRefs`.
    pub namespace: String,
    /// Name listeners name in `certificateRefs`.
    pub name: String,
    /// PEM certificate chain, leaf first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_pem: Option<String>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_pem: Option<String>,
    /// File holding the PEM certificate chain, instead of `certificatePem`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_file: Option<PathBuf>,
    /// File holding the PEM private key, instead of `privateKeyPem`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<PathBuf>,
}
