//! `HTTPRoute`, `GRPCRoute` and `TLSRoute` (gateway.networking.k8s.io/v1), their
//! shared parent and backend references, and route status; `TCPRoute` and
//! `UDPRoute` as far as Culvert reads them, which is their parents only (Culvert
//! carries neither kind, and says so in their status).
//!
//! Every struct whose fields carry routing restrictions keeps the fields it does not
//! know in `unknown`, so translation can refuse them (`UnsupportedValue`) instead of
//! silently dropping a restriction.

use super::meta::{Condition, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Fields a struct did not recognise.
pub type Unknown = BTreeMap<String, serde_json::Value>;

/// What every route kind shares: metadata, parents and hostnames.
pub trait RouteObject {
    /// The Gateway API kind, such as `HTTPRoute`.
    const KIND: &'static str;
    /// Metadata.
    fn meta(&self) -> &ObjectMeta;
    /// `spec.parentRefs`.
    fn parent_refs(&self) -> &[ParentReference];
    /// `spec.hostnames`.
    fn hostnames(&self) -> &[String];
}

macro_rules! route_object {
    ($($ty:ty => $kind:literal),*) => {$(
        impl RouteObject for $ty {
            const KIND: &'static str = $kind;
            fn meta(&self) -> &ObjectMeta { &self.metadata }
            fn parent_refs(&self) -> &[ParentReference] { &self.spec.parent_refs }
            fn hostnames(&self) -> &[String] { &self.spec.hostnames }
        }
    )*};
}
route_object!(HttpRoute => "HTTPRoute", GrpcRoute => "GRPCRoute", TlsRoute => "TLSRoute");

/// A reference from a route to its parent (a Gateway).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    /// API group; `gateway.networking.k8s.io` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind; `Gateway` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Namespace; the route's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Listener name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
    /// Listener port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
}

/// A reference to a backend (a Service port, usually).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendObjectReference {
    /// API group; `""` (core) when absent.
    #[serde(default)]
    pub group: Option<String>,
    /// Kind; `Service` when absent.
    #[serde(default)]
    pub kind: Option<String>,
    /// Name.
    pub name: String,
    /// Namespace; the route's when absent.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Port; required for Services.
    #[serde(default)]
    pub port: Option<i64>,
}

/// A weighted backend reference with optional per-backend filters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendRef {
    /// The backend.
    #[serde(flatten)]
    pub object: BackendObjectReference,
    /// Weight; 1 when absent.
    #[serde(default)]
    pub weight: Option<i64>,
    /// Per-backend filters (HTTP and gRPC routes).
    #[serde(default)]
    pub filters: Vec<RouteFilter>,
}

/// Status shared by every route kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteStatus {
    /// One entry per parent the controller handles.
    #[serde(default)]
    pub parents: Vec<RouteParentStatus>,
}

/// Status of a route for one parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    /// The parent, as the route wrote it.
    pub parent_ref: ParentReference,
    /// The controller writing this entry.
    pub controller_name: String,
    /// Conditions.
    pub conditions: Vec<Condition>,
}

/// An `HTTPRoute`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpRoute {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: HttpRouteSpec,
}

/// `HTTPRoute.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteSpec {
    /// Parents.
    #[serde(default)]
    pub parent_refs: Vec<ParentReference>,
    /// Hostnames.
    #[serde(default)]
    pub hostnames: Vec<String>,
    /// Rules; absent means one rule that matches everything and has no backend.
    #[serde(default)]
    pub rules: Option<Vec<HttpRouteRule>>,
    /// Unrecognised fields.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One rule of an `HTTPRoute`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteRule {
    /// Rule name.
    #[serde(default)]
    pub name: Option<String>,
    /// Matches.
    #[serde(default)]
    pub matches: Vec<HttpRouteMatch>,
    /// Filters.
    #[serde(default)]
    pub filters: Vec<RouteFilter>,
    /// Backends.
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
    /// Timeouts.
    #[serde(default)]
    pub timeouts: Option<HttpRouteTimeouts>,
    /// Retries.
    #[serde(default)]
    pub retry: Option<HttpRouteRetry>,
    /// Unrecognised fields (such as `sessionPersistence`).
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One match of an HTTP rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteMatch {
    /// Path condition.
    #[serde(default)]
    pub path: Option<PathMatch>,
    /// Header conditions.
    #[serde(default)]
    pub headers: Vec<StringMatch>,
    /// Query parameter conditions.
    #[serde(default)]
    pub query_params: Vec<StringMatch>,
    /// Method.
    #[serde(default)]
    pub method: Option<String>,
    /// Unrecognised fields.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// A path condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathMatch {
    /// `Exact`, `PathPrefix` (default) or `RegularExpression`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Value; `/` when absent.
    #[serde(default)]
    pub value: Option<String>,
}

/// A header or query parameter condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StringMatch {
    /// `Exact` (default) or `RegularExpression`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

/// `HTTPRouteRule.timeouts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteTimeouts {
    /// Whole request.
    #[serde(default)]
    pub request: Option<String>,
    /// One backend attempt.
    #[serde(default)]
    pub backend_request: Option<String>,
}

/// `HTTPRouteRule.retry`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRouteRetry {
    /// Retried status codes.
    #[serde(default)]
    pub codes: Vec<i64>,
    /// Retries.
    #[serde(default)]
    pub attempts: Option<i64>,
    /// Backoff duration.
    #[serde(default)]
    pub backoff: Option<String>,
}

/// A route filter: a `type` and the body named after it. Bodies stay raw JSON here;
/// translation decodes the ones Culvert supports and refuses the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteFilter {
    /// Filter type, such as `RequestHeaderModifier`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The bodies (`requestHeaderModifier`, `requestRedirect`, ...).
    #[serde(flatten)]
    pub bodies: BTreeMap<String, serde_json::Value>,
}

/// A `GRPCRoute`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrpcRoute {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: GrpcRouteSpec,
}

/// `GRPCRoute.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrpcRouteSpec {
    /// Parents.
    #[serde(default)]
    pub parent_refs: Vec<ParentReference>,
    /// Hostnames.
    #[serde(default)]
    pub hostnames: Vec<String>,
    /// Rules.
    #[serde(default)]
    pub rules: Vec<GrpcRouteRule>,
    /// Unrecognised fields.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One rule of a `GRPCRoute`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrpcRouteRule {
    /// Rule name.
    #[serde(default)]
    pub name: Option<String>,
    /// Matches.
    #[serde(default)]
    pub matches: Vec<GrpcRouteMatch>,
    /// Filters.
    #[serde(default)]
    pub filters: Vec<RouteFilter>,
    /// Backends.
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
    /// Unrecognised fields.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One match of a gRPC rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GrpcRouteMatch {
    /// Service and method.
    #[serde(default)]
    pub method: Option<GrpcMethodMatch>,
    /// Metadata conditions.
    #[serde(default)]
    pub headers: Vec<StringMatch>,
    /// Unrecognised fields.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// `GRPCRouteMatch.method`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcMethodMatch {
    /// `Exact` (default) or `RegularExpression`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Service.
    #[serde(default)]
    pub service: Option<String>,
    /// Method.
    #[serde(default)]
    pub method: Option<String>,
}

/// A `TLSRoute`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsRoute {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: TlsRouteSpec,
}

/// `TLSRoute.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsRouteSpec {
    /// Parents.
    #[serde(default)]
    pub parent_refs: Vec<ParentReference>,
    /// SNI hostnames.
    #[serde(default)]
    pub hostnames: Vec<String>,
    /// Rules (one in v1).
    #[serde(default)]
    pub rules: Vec<TlsRouteRule>,
    /// Unrecognised fields.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One rule of a `TLSRoute`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsRouteRule {
    /// Rule name.
    #[serde(default)]
    pub name: Option<String>,
    /// Backends.
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
    /// Unrecognised fields.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// A `TCPRoute` or `UDPRoute` (v1, standard since Gateway API v1.6). Culvert has no
/// TCP or UDP listener, so it reads only what it needs to refuse the route on each
/// of its Gateways: the parents. Nothing else is kept, because nothing else is ever
/// served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L4Route {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: L4RouteSpec,
}

/// The part of `TCPRoute.spec` and `UDPRoute.spec` Culvert reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct L4RouteSpec {
    /// Parents.
    #[serde(default)]
    pub parent_refs: Vec<ParentReference>,
}
