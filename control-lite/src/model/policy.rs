//! `BackendTLSPolicy` (gateway.networking.k8s.io/v1): how the data plane speaks TLS
//! to the Services it targets, and the status Culvert writes on it.

use super::meta::{Condition, ObjectMeta};
use super::route::ParentReference;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A `BackendTLSPolicy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendTlsPolicy {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: BackendTlsPolicySpec,
}

/// `BackendTLSPolicy.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendTlsPolicySpec {
    /// The Services (and ports, by name) the policy applies to.
    #[serde(default)]
    pub target_refs: Vec<PolicyTargetReference>,
    /// How the backend's certificate is checked.
    #[serde(default)]
    pub validation: BackendTlsValidation,
    /// Implementation-specific options.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// A local policy target, optionally narrowed to one port name (`sectionName`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyTargetReference {
    /// API group (`""` for a Service).
    #[serde(default)]
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Name, in the policy's namespace.
    pub name: String,
    /// The Service port name; every port when absent.
    #[serde(default)]
    pub section_name: Option<String>,
}

/// `BackendTLSPolicy.spec.validation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendTlsValidation {
    /// ConfigMaps with the CA certificates, in the policy's namespace.
    #[serde(default)]
    pub ca_certificate_refs: Vec<LocalObjectReference>,
    /// `System`: the platform's trusted roots instead of `caCertificateRefs`.
    #[serde(default, rename = "wellKnownCACertificates")]
    pub well_known_ca_certificates: Option<String>,
    /// The SNI sent, and the name the certificate must carry unless
    /// `subjectAltNames` are given.
    #[serde(default)]
    pub hostname: String,
    /// Names of which the certificate must carry one.
    #[serde(default)]
    pub subject_alt_names: Vec<SubjectAltName>,
}

/// A reference to an object in the referrer's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalObjectReference {
    /// API group.
    #[serde(default)]
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
}

/// One subject alternative name a backend certificate may carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectAltName {
    /// `Hostname` or `URI`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The DNS name, when `type` is `Hostname`.
    #[serde(default)]
    pub hostname: Option<String>,
    /// The URI, when `type` is `URI`.
    #[serde(default)]
    pub uri: Option<String>,
}

/// Status of a policy: one entry per ancestor (Gateway) it was applied for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyStatus {
    /// Ancestors.
    pub ancestors: Vec<PolicyAncestorStatus>,
}

/// The policy's conditions for one ancestor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyAncestorStatus {
    /// The Gateway.
    pub ancestor_ref: ParentReference,
    /// The controller writing this entry.
    pub controller_name: String,
    /// Conditions.
    pub conditions: Vec<Condition>,
}
