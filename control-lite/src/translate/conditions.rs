//! Condition types and reasons of the Gateway API, and a small builder for the
//! condition lists translation writes.

use crate::model::Condition;

/// `Accepted`.
pub(crate) const ACCEPTED: &str = "Accepted";
/// `Programmed`.
pub(crate) const PROGRAMMED: &str = "Programmed";
/// `ResolvedRefs`.
pub(crate) const RESOLVED_REFS: &str = "ResolvedRefs";
/// `Conflicted`.
pub(crate) const CONFLICTED: &str = "Conflicted";
/// `SupportedVersion`.
pub(crate) const SUPPORTED_VERSION: &str = "SupportedVersion";
/// `InsecureFrontendValidationMode`: a Gateway port lets clients without a valid
/// certificate through.
pub(crate) const INSECURE_FRONTEND_VALIDATION_MODE: &str = "InsecureFrontendValidationMode";
/// `AttachedListenerSets` (Gateway).
pub(crate) const ATTACHED_LISTENER_SETS: &str = "AttachedListenerSets";
/// `TunnelShared` (route parent, Culvert's): the parent Gateway's tunnel is served
/// by other dedicated Gateways too, which see the route's configuration.
pub(crate) const TUNNEL_SHARED: &str = "TunnelShared";

/// Reasons used by translation.
pub(crate) mod reason {
    pub(crate) const ACCEPTED: &str = "Accepted";
    pub(crate) const PROGRAMMED: &str = "Programmed";
    pub(crate) const RESOLVED_REFS: &str = "ResolvedRefs";
    pub(crate) const NO_CONFLICTS: &str = "NoConflicts";
    pub(crate) const SUPPORTED_VERSION: &str = "SupportedVersion";
    pub(crate) const INVALID: &str = "Invalid";
    pub(crate) const INVALID_PARAMETERS: &str = "InvalidParameters";
    pub(crate) const LISTENERS_NOT_VALID: &str = "ListenersNotValid";
    pub(crate) const UNSUPPORTED_ADDRESS: &str = "UnsupportedAddress";
    pub(crate) const ADDRESS_NOT_USABLE: &str = "AddressNotUsable";
    pub(crate) const ADDRESS_NOT_ASSIGNED: &str = "AddressNotAssigned";
    pub(crate) const UNSUPPORTED_PROTOCOL: &str = "UnsupportedProtocol";
    pub(crate) const PROTOCOL_CONFLICT: &str = "ProtocolConflict";
    pub(crate) const HOSTNAME_CONFLICT: &str = "HostnameConflict";
    pub(crate) const UNSUPPORTED_VALUE: &str = "UnsupportedValue";
    pub(crate) const INVALID_CERTIFICATE_REF: &str = "InvalidCertificateRef";
    pub(crate) const INVALID_CA_CERTIFICATE_REF: &str = "InvalidCACertificateRef";
    pub(crate) const INVALID_CA_CERTIFICATE_KIND: &str = "InvalidCACertificateKind";
    pub(crate) const NO_VALID_CA_CERTIFICATE: &str = "NoValidCACertificate";
    pub(crate) const CONFIGURATION_CHANGED: &str = "ConfigurationChanged";
    pub(crate) const INVALID_ROUTE_KINDS: &str = "InvalidRouteKinds";
    pub(crate) const REF_NOT_PERMITTED: &str = "RefNotPermitted";
    pub(crate) const NOT_ALLOWED_BY_LISTENERS: &str = "NotAllowedByListeners";
    pub(crate) const NO_MATCHING_LISTENER_HOSTNAME: &str = "NoMatchingListenerHostname";
    pub(crate) const NO_MATCHING_PARENT: &str = "NoMatchingParent";
    pub(crate) const BACKEND_NOT_FOUND: &str = "BackendNotFound";
    pub(crate) const INVALID_KIND: &str = "InvalidKind";
    pub(crate) const NOT_ALLOWED: &str = "NotAllowed";
    pub(crate) const TOO_MANY_LISTENERS: &str = "TooManyListeners";
    pub(crate) const LISTENER_SETS_NOT_ALLOWED: &str = "ListenerSetsNotAllowed";
    pub(crate) const NO_LISTENER_SETS_ATTACHED: &str = "NoListenerSetsAttached";
    pub(crate) const TUNNEL_CLAIM_REJECTED: &str = "TunnelClaimRejected";
    pub(crate) const DATA_PLANE_QUOTA_EXCEEDED: &str = "DataPlaneQuotaExceeded";
    pub(crate) const TUNNEL_SHARED_WITHIN_NAMESPACE: &str = "TunnelSharedWithinNamespace";
    pub(crate) const TUNNEL_SHARED_ACROSS_NAMESPACES: &str = "TunnelSharedAcrossNamespaces";
}

/// A condition still to be written: type, truth, reason, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) status: bool,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl Verdict {
    pub(crate) fn yes(reason: &'static str) -> Self {
        Self {
            status: true,
            reason,
            message: String::new(),
        }
    }

    pub(crate) fn no(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: false,
            reason,
            message: message.into(),
        }
    }

    pub(crate) fn condition(&self, kind: &str, generation: i64) -> Condition {
        Condition::new(
            kind,
            self.status,
            self.reason,
            self.message.clone(),
            generation,
        )
    }
}
