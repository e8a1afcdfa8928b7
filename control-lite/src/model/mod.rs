//! Serde types for the objects Culvert reads: Gateway API (standard channel, every
//! served version), core Kubernetes objects, and Culvert's own kinds, plus
//! [`Resource`], which dispatches a raw object on `apiVersion` and `kind`.
//!
//! Types here are plain data. They tolerate fields they do not model (Kubernetes
//! objects grow), except where a dropped field could loosen a routing restriction:
//! those structs keep unknown fields in `unknown` for translation to refuse.

mod culvert;
mod gateway;
mod grant;
mod k8s;
mod listener_set;
mod meta;
mod policy;
mod route;

pub use culvert::{
    Autoscaling, ClassTunnel, DEFAULT_SHARED_REPLICAS, GROUP as CULVERT_GROUP, GatewayClassConfig,
    GatewayClassConfigSpec, GatewayConfig, GatewayConfigSpec, HTTPS_REDIRECT_ANNOTATION,
    SecretKeyReference, SharedPlane, TOKEN_KEY, TUNNEL_TOKEN_LABEL, TunnelConfig,
};
pub use gateway::{
    AdvertisedStatus, AllowedListeners, AllowedRoutes, FrontendTls, FrontendTlsConfig,
    FrontendValidation, Gateway, GatewayAddress, GatewayBackendTls, GatewayClass, GatewayClassSpec,
    GatewayClassStatus, GatewaySpec, GatewayStatus, GatewayTls, Infrastructure, Listener,
    ListenerNamespaces, ListenerStatus, ListenerTls, LocalParametersReference, ParametersReference,
    PerPortTls, RouteGroupKind, RouteNamespaces, SecretObjectReference,
};
pub use grant::{ReferenceGrant, ReferenceGrantFrom, ReferenceGrantSpec, ReferenceGrantTo};
pub use k8s::{
    ConfigMap, Endpoint, EndpointConditions, EndpointPort, EndpointSlice, EndpointTarget,
    LoadBalancerIngress, LoadBalancerStatus, Namespace, Secret, Service, ServicePort, ServiceSpec,
    ServiceStatus,
};
pub use listener_set::{ListenerSet, ListenerSetParentRef, ListenerSetSpec, ListenerSetStatus};
pub use meta::{Condition, LabelSelector, LabelSelectorRequirement, ObjectMeta};
pub use policy::{
    BackendTlsPolicy, BackendTlsPolicySpec, BackendTlsValidation, LocalObjectReference,
    PolicyAncestorStatus, PolicyStatus, PolicyTargetReference, SubjectAltName,
};
pub use route::{
    BackendObjectReference, BackendRef, GrpcMethodMatch, GrpcRoute, GrpcRouteMatch, GrpcRouteRule,
    GrpcRouteSpec, HttpRoute, HttpRouteMatch, HttpRouteRetry, HttpRouteRule, HttpRouteSpec,
    HttpRouteTimeouts, L4Route, L4RouteSpec, ParentReference, PathMatch, RouteFilter, RouteObject,
    RouteParentStatus, RouteStatus, StringMatch, TlsRoute, TlsRouteRule, TlsRouteSpec, Unknown,
};

use serde::de::DeserializeOwned;
use std::fmt;

/// API group of the Gateway API.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// Any object Culvert reads, decoded by its `apiVersion` and `kind`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Resource {
    /// `GatewayClass`.
    GatewayClass(GatewayClass),
    /// `Gateway`.
    Gateway(Gateway),
    /// `HTTPRoute`.
    HttpRoute(HttpRoute),
    /// `GRPCRoute`.
    GrpcRoute(GrpcRoute),
    /// `TLSRoute`.
    TlsRoute(TlsRoute),
    /// `TCPRoute`: read to be refused, since Culvert carries no TCP.
    TcpRoute(L4Route),
    /// `UDPRoute`: read to be refused, since Culvert carries no UDP.
    UdpRoute(L4Route),
    /// `ListenerSet`: read to be refused, since Culvert merges none.
    ListenerSet(ListenerSet),
    /// `BackendTLSPolicy`.
    BackendTlsPolicy(BackendTlsPolicy),
    /// `ReferenceGrant`.
    ReferenceGrant(ReferenceGrant),
    /// `Namespace`.
    Namespace(Namespace),
    /// `Service`.
    Service(Service),
    /// `EndpointSlice`.
    EndpointSlice(EndpointSlice),
    /// `Secret`.
    Secret(Secret),
    /// `ConfigMap`.
    ConfigMap(ConfigMap),
    /// Culvert `GatewayClassConfig`.
    GatewayClassConfig(GatewayClassConfig),
    /// Culvert `GatewayConfig`.
    GatewayConfig(GatewayConfig),
    /// A kind Culvert does not read (Deployments, other controllers' CRDs, ...).
    Other(ObjectKey),
}

/// Identity of an object: kind, namespace (`""` when cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Kind.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A key from its parts.
    pub fn new(kind: &str, namespace: &str, name: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// Why a raw object could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `apiVersion` or `kind` is missing or not a string.
    #[error("object has no apiVersion or kind")]
    MissingType,
    /// A known kind in a version the API server does not serve.
    #[error("{kind} {version} is not a served version (use one of: {served})")]
    UnservedVersion {
        /// Kind.
        kind: String,
        /// The version given.
        version: String,
        /// Versions accepted.
        served: &'static str,
    },
    /// The object does not fit its kind's schema.
    #[error("{kind}: {path}: {message}")]
    Schema {
        /// Kind.
        kind: String,
        /// Path of the offending field (`spec.listeners[0].port`).
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl Resource {
    /// Decodes a raw object, naming the field at fault when it does not fit.
    pub fn from_value(value: serde_json::Value) -> Result<Self, Error> {
        let api_version = value
            .get("apiVersion")
            .and_then(|v| v.as_str())
            .ok_or(Error::MissingType)?;
        let kind = value
            .get("kind")
            .and_then(|v| v.as_str())
            .ok_or(Error::MissingType)?
            .to_owned();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let (group, version) = (group.to_owned(), version.to_owned());
        let check = |served: &'static str| -> Result<(), Error> {
            if served.split(", ").any(|v| v == version) {
                Ok(())
            } else {
                Err(Error::UnservedVersion {
                    kind: kind.clone(),
                    version: version.clone(),
                    served,
                })
            }
        };
        Ok(match (group.as_str(), kind.as_str()) {
            (GATEWAY_GROUP, "GatewayClass") => {
                check("v1, v1beta1")?;
                Self::GatewayClass(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "Gateway") => {
                check("v1, v1beta1")?;
                Self::Gateway(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "HTTPRoute") => {
                check("v1, v1beta1")?;
                Self::HttpRoute(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "GRPCRoute") => {
                check("v1")?;
                Self::GrpcRoute(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "TLSRoute") => {
                check("v1")?;
                Self::TlsRoute(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "TCPRoute") => {
                check("v1")?;
                Self::TcpRoute(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "UDPRoute") => {
                check("v1")?;
                Self::UdpRoute(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "ListenerSet") => {
                check("v1")?;
                Self::ListenerSet(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "BackendTLSPolicy") => {
                check("v1")?;
                Self::BackendTlsPolicy(decode(&kind, value)?)
            }
            (GATEWAY_GROUP, "ReferenceGrant") => {
                check("v1, v1beta1")?;
                Self::ReferenceGrant(decode(&kind, value)?)
            }
            ("", "Namespace") => Self::Namespace(decode(&kind, value)?),
            ("", "Service") => Self::Service(decode(&kind, value)?),
            ("", "Secret") => Self::Secret(decode(&kind, value)?),
            ("", "ConfigMap") => Self::ConfigMap(decode(&kind, value)?),
            ("discovery.k8s.io", "EndpointSlice") => {
                check("v1")?;
                Self::EndpointSlice(decode(&kind, value)?)
            }
            (CULVERT_GROUP, "GatewayClassConfig") => {
                check("v1alpha1")?;
                Self::GatewayClassConfig(decode(&kind, value)?)
            }
            (CULVERT_GROUP, "GatewayConfig") => {
                check("v1alpha1")?;
                Self::GatewayConfig(decode(&kind, value)?)
            }
            _ => {
                let metadata = value.get("metadata");
                let field = |name: &str| {
                    metadata
                        .and_then(|m| m.get(name))
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_owned()
                };
                Self::Other(ObjectKey {
                    kind: kind.clone(),
                    namespace: field("namespace"),
                    name: field("name"),
                })
            }
        })
    }

    /// The object's identity.
    pub fn key(&self) -> ObjectKey {
        let (kind, meta) = match self {
            Self::GatewayClass(o) => ("GatewayClass", &o.metadata),
            Self::Gateway(o) => ("Gateway", &o.metadata),
            Self::HttpRoute(o) => ("HTTPRoute", &o.metadata),
            Self::GrpcRoute(o) => ("GRPCRoute", &o.metadata),
            Self::TlsRoute(o) => ("TLSRoute", &o.metadata),
            Self::TcpRoute(o) => ("TCPRoute", &o.metadata),
            Self::UdpRoute(o) => ("UDPRoute", &o.metadata),
            Self::ListenerSet(o) => ("ListenerSet", &o.metadata),
            Self::BackendTlsPolicy(o) => ("BackendTLSPolicy", &o.metadata),
            Self::ReferenceGrant(o) => ("ReferenceGrant", &o.metadata),
            Self::Namespace(o) => ("Namespace", &o.metadata),
            Self::Service(o) => ("Service", &o.metadata),
            Self::EndpointSlice(o) => ("EndpointSlice", &o.metadata),
            Self::Secret(o) => ("Secret", &o.metadata),
            Self::ConfigMap(o) => ("ConfigMap", &o.metadata),
            Self::GatewayClassConfig(o) => ("GatewayClassConfig", &o.metadata),
            Self::GatewayConfig(o) => ("GatewayConfig", &o.metadata),
            Self::Other(key) => return key.clone(),
        };
        ObjectKey::new(kind, meta.namespace(), &meta.name)
    }
}

fn decode<T: DeserializeOwned>(kind: &str, value: serde_json::Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(|error| Error::Schema {
        kind: kind.to_owned(),
        path: error.path().to_string(),
        message: error.inner().to_string(),
    })
}

#[cfg(test)]
mod tests;
