//! The crate's failures: [`Error`] for misuse of the fake itself (a bad CRD document,
//! TLS material that cannot be made, a kubeconfig kube-rs refuses), and [`Status`],
//! the `meta.k8s.io/v1` failure body every API answer carries when it is not a
//! success. A `Status` is what a client sees, so its fields mirror the wire shape.

use serde_json::{Value, json};

/// Misuse of the fake or of its harness.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CRD file or directory could not be read.
    #[error("reading {path}")]
    Io {
        /// The file or directory.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A document of the CRD YAML is not YAML.
    #[error("CRD YAML is malformed")]
    Yaml(#[source] serde_yaml_ng::Error),
    /// A CustomResourceDefinition lacks a field the fake needs.
    #[error("CustomResourceDefinition {name:?}: {what}")]
    Crd {
        /// `metadata.name` of the CRD, if it has one.
        name: String,
        /// What is missing or wrong.
        what: String,
    },
    /// A CRD could not be stored (already served under another shape, ...).
    #[error("CustomResourceDefinition could not be stored")]
    Store(#[source] Status),
    /// The self-signed CA or server certificate could not be made.
    #[error("TLS material could not be generated")]
    Certificate(#[source] rcgen::Error),
    /// rustls refused the server certificate.
    #[error("TLS server configuration")]
    Tls(#[source] rustls::Error),
    /// kube-rs refused the kubeconfig this server wrote.
    #[error("kubeconfig refused by kube-rs")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    /// kube-rs could not build a client.
    #[error("kube client could not be built")]
    Client(#[source] kube::Error),
}

/// A `Status` failure as the API server sends it (`kind: Status`, `status: Failure`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct Status {
    /// HTTP status code, repeated in the body.
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `Conflict`, `Expired`, ...).
    pub reason: String,
    /// Human-readable message, worded as the real server words it.
    pub message: String,
    /// `details` (name, group, kind = plural, causes), if any.
    pub details: Option<Value>,
    /// `metadata.continue` (only on an expired `continue` token).
    pub continue_token: Option<String>,
    /// `Retry-After` seconds to send with the answer, if any.
    pub retry_after: Option<u64>,
}

impl Status {
    /// A failure with no details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
            message: message.into(),
            details: None,
            continue_token: None,
            retry_after: None,
        }
    }

    /// The same failure with `details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The wire body.
    pub fn to_json(&self) -> Value {
        let mut metadata = json!({});
        if let Some(token) = &self.continue_token {
            metadata["continue"] = json!(token);
        }
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": metadata,
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            body["details"] = details.clone();
        }
        body
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 Invalid for `qualified "name"`.
    pub(crate) fn invalid(qualified: &str, name: &str, message: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {message}"),
        )
    }
}
