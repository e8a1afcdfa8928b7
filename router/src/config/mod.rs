//! The raw, serde-facing model of a `DataPlaneConfig`: the one document the control
//! plane produces and the config API accepts.
//!
//! Everything here is plain data that mirrors the JSON schema in `docs/config.md`:
//! field names are camelCase, unknown fields are refused, and nothing is validated
//! beyond its shape. Validation happens when `RouteTableBuilder::build` turns the raw
//! config into a compiled `RouteTable`. Start at [`DataPlaneConfig`].

mod acme;
mod backend;
mod certificate;
mod filter;
mod grpc;
mod http_route;
mod tls;

pub use acme::AcmeListenerConfig;
pub use backend::{
    AppProtocol, BackendClientCertificate, BackendConfig, BackendTlsConfig, Unavailable,
};
pub use certificate::CertificateConfig;
pub use filter::{
    CorsConfig, FractionConfig, HeaderModifierConfig, HeaderValueConfig, HttpFilterConfig,
    PathModifierConfig, RequestMirrorConfig, RequestRedirectConfig, UrlRewriteConfig,
};
pub use grpc::{GrpcMatchConfig, GrpcMethodMatchConfig, GrpcRouteConfig, GrpcRuleConfig};
pub use http_route::{
    HeaderMatchConfig, HttpMatchConfig, HttpRouteConfig, HttpRuleConfig, PathMatchConfig,
    PathMatchType, QueryParamMatchConfig, RetryConfig, StringMatchType, TimeoutsConfig,
};
pub use tls::TlsRouteConfig;

use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// The whole configuration of one data plane, as pushed to the config API.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DataPlaneConfig {
    /// Monotonic version; a data plane refuses a document older than the one it serves.
    pub version: u64,
    /// Listeners (ports, protocols, hostnames) this data plane serves.
    #[serde(default)]
    pub listeners: Vec<ListenerConfig>,
    /// HTTP routes attached to listeners.
    #[serde(default)]
    pub http_routes: Vec<HttpRouteConfig>,
    /// gRPC routes attached to listeners.
    #[serde(default)]
    pub grpc_routes: Vec<GrpcRouteConfig>,
    /// TLS passthrough routes attached to `TLS` listeners.
    #[serde(default)]
    pub tls_routes: Vec<TlsRouteConfig>,
    /// Certificates `HTTPS` listeners refer to by `namespace`/`name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<CertificateConfig>,
}

impl DataPlaneConfig {
    /// What the config says, as hex of a stable 64-bit FNV-1a hash of its canonical
    /// JSON with the version left out: the same content pushed under two versions
    /// hashes alike, so a pusher can tell a plane already serves it. It tells
    /// configs apart; it is no defence against a forged document.
    pub fn content_hash(&self) -> Result<String, serde_json::Error> {
        let unversioned = Unversioned {
            version: 0,
            listeners: &self.listeners,
            http_routes: &self.http_routes,
            grpc_routes: &self.grpc_routes,
            tls_routes: &self.tls_routes,
            certificates: &self.certificates,
        };
        let mut hasher = Fnv1a64(FNV_OFFSET);
        serde_json::to_writer(&mut hasher, &unversioned)?;
        Ok(format!("{:016x}", hasher.0))
    }

    /// Every backend the config names: rule backends of every route kind, and the
    /// targets of request mirrors (on rules and on backends).
    pub fn backends(&self) -> impl Iterator<Item = &BackendConfig> {
        let mirrors = mirror_targets;
        let http = self
            .http_routes
            .iter()
            .flat_map(|route| &route.rules)
            .flat_map(move |rule| {
                mirrors(&rule.filters).chain(rule.backends.iter().flat_map(move |backend| {
                    std::iter::once(backend).chain(mirrors(&backend.filters))
                }))
            });
        let grpc = self
            .grpc_routes
            .iter()
            .flat_map(|route| &route.rules)
            .flat_map(move |rule| mirrors(&rule.filters).chain(&rule.backends));
        let tls = self.tls_routes.iter().flat_map(|route| &route.backends);
        http.chain(grpc).chain(tls)
    }

    /// Calls `visit` on every backend, as [`backends`](Self::backends) lists them.
    pub fn for_each_backend_mut(&mut self, mut visit: impl FnMut(&mut BackendConfig)) {
        for route in &mut self.http_routes {
            route.for_each_backend_mut(&mut visit);
        }
        for route in &mut self.grpc_routes {
            route.for_each_backend_mut(&mut visit);
        }
        for route in &mut self.tls_routes {
            route.backends.iter_mut().for_each(&mut visit);
        }
    }
}

impl HttpRouteConfig {
    /// Calls `visit` on every backend of the route: rule backends and the targets
    /// of request mirrors (on rules and on backends).
    pub fn for_each_backend_mut(&mut self, mut visit: impl FnMut(&mut BackendConfig)) {
        for rule in &mut self.rules {
            mirror_targets_mut(&mut rule.filters, &mut visit);
            for backend in &mut rule.backends {
                mirror_targets_mut(&mut backend.filters, &mut visit);
                visit(backend);
            }
        }
    }
}

impl GrpcRouteConfig {
    /// Calls `visit` on every backend of the route: rule backends and the targets
    /// of request mirrors.
    pub fn for_each_backend_mut(&mut self, mut visit: impl FnMut(&mut BackendConfig)) {
        for rule in &mut self.rules {
            mirror_targets_mut(&mut rule.filters, &mut visit);
            rule.backends.iter_mut().for_each(&mut visit);
        }
    }
}

/// Calls `visit` on the backends request mirrors in `filters` send copies to.
fn mirror_targets_mut(
    filters: &mut [HttpFilterConfig],
    visit: &mut impl FnMut(&mut BackendConfig),
) {
    for filter in filters {
        if let HttpFilterConfig::RequestMirror { request_mirror } = filter {
            visit(&mut request_mirror.backend);
        }
    }
}

/// The backends request mirrors in `filters` send copies to.
fn mirror_targets(filters: &[HttpFilterConfig]) -> impl Iterator<Item = &BackendConfig> {
    filters.iter().filter_map(|filter| match filter {
        HttpFilterConfig::RequestMirror { request_mirror } => Some(&request_mirror.backend),
        _ => None,
    })
}

/// One listener: where the data plane accepts traffic and which hostnames it owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListenerConfig {
    /// Unique name; routes attach to listeners by this name.
    pub name: String,
    /// Local address to bind; absent means every address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
    /// TCP port.
    pub port: u16,
    /// What the listener speaks.
    pub protocol: ListenerProtocol,
    /// Exact (`foo.example.com`) or wildcard (`*.example.com`) hostname this listener
    /// owns; absent means every hostname.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Certificates of an `HTTPS` listener or a `TLS` listener that terminates, and
    /// a `TLS` listener's mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ListenerTlsConfig>,
}

impl ListenerConfig {
    /// Whether TLS is terminated here: `HTTPS`, or `TLS` in mode `Terminate`.
    pub fn terminates_tls(&self) -> bool {
        match self.protocol {
            ListenerProtocol::Http => false,
            ListenerProtocol::Https => true,
            ListenerProtocol::Tls => self
                .tls
                .as_ref()
                .is_some_and(|tls| tls.mode == TlsMode::Terminate),
        }
    }
}

/// TLS settings of a listener: the certificates it serves (picked by SNI) and, on a
/// `TLS` listener, whether it passes TLS through or terminates it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListenerTlsConfig {
    /// `kubernetes.io/tls` Secrets holding certificate chain and key.
    #[serde(default)]
    pub certificate_refs: Vec<CertificateRef>,
    /// A `TLS` listener's mode (`Passthrough` when absent); `HTTPS` listeners always
    /// terminate.
    #[serde(default, skip_serializing_if = "TlsMode::is_passthrough")]
    pub mode: TlsMode,
    /// Client certificates asked for and checked in the handshake (Gateway
    /// `spec.tls.frontend`); none asked for when absent. Every terminating listener
    /// of one address must ask for the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_validation: Option<ClientValidationConfig>,
    /// The data plane obtains this `HTTPS` listener's certificate for its hostname by
    /// ACME and keeps it renewed (needs `culvert serve --acme-directory`); may stand
    /// instead of `certificateRefs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acme: Option<AcmeListenerConfig>,
}

/// How a listener checks client certificates.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientValidationConfig {
    /// PEM bundle of the CA certificates a client certificate must chain to.
    pub ca_certificates_pem: String,
    /// What happens to a client without a valid certificate.
    #[serde(default)]
    pub mode: ClientValidationMode,
    /// Send the verified certificate's identity to backends in
    /// `X-Forwarded-Client-Cert` (`Hash=<SHA-256 of the DER, hex>`). The field is
    /// always removed from what clients send on such a listener.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forward_identity: bool,
}

/// Gateway API `FrontendValidationModeType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum ClientValidationMode {
    /// A client without a certificate that chains to the CAs fails the handshake.
    #[default]
    AllowValidOnly,
    /// Any client is served; a valid certificate is still told apart (for the
    /// access log and the forwarded identity).
    AllowInsecureFallback,
}

/// What a `TLS` listener does with a connection's TLS (Gateway API `tls.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TlsMode {
    /// The TLS stream goes to the backend untouched, routed by its SNI.
    #[default]
    Passthrough,
    /// TLS is terminated here and the decrypted stream goes to the backend.
    Terminate,
}

impl TlsMode {
    fn is_passthrough(&self) -> bool {
        *self == Self::Passthrough
    }
}

/// A reference to a `kubernetes.io/tls` Secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateRef {
    /// Namespace of the Secret.
    pub namespace: String,
    /// Name of the Secret.
    pub name: String,
}

/// The protocol of a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ListenerProtocol {
    /// Clear-text HTTP/1.1 and h2c.
    #[serde(rename = "HTTP")]
    Http,
    /// HTTP over TLS terminated by the data plane.
    #[serde(rename = "HTTPS")]
    Https,
    /// TLS passed through to the backend, selected by SNI.
    #[serde(rename = "TLS")]
    Tls,
}

/// A route's identity and attachment, shared by every route kind.
///
/// Kept as plain fields on each route type (serde cannot combine `flatten` with
/// `deny_unknown_fields`); this trait gives the compiler one view of them.
pub trait RouteMeta {
    /// Namespace of the route object.
    fn namespace(&self) -> &str;
    /// Name of the route object.
    fn name(&self) -> &str;
    /// Creation time (RFC 3339), used for the "oldest route wins" tie-break.
    fn creation_timestamp(&self) -> Option<&str>;
    /// Names of the listeners this route is attached to.
    fn listeners(&self) -> &[String];
    /// Hostnames the route asks for; empty means "whatever the listener allows".
    fn hostnames(&self) -> &[String];
}

macro_rules! impl_route_meta {
    ($($ty:ty),*) => {$(
        impl RouteMeta for $ty {
            fn namespace(&self) -> &str { &self.namespace }
            fn name(&self) -> &str { &self.name }
            fn creation_timestamp(&self) -> Option<&str> { self.creation_timestamp.as_deref() }
            fn listeners(&self) -> &[String] { &self.listeners }
            fn hostnames(&self) -> &[String] { &self.hostnames }
        }
    )*};
}
impl_route_meta!(HttpRouteConfig, GrpcRouteConfig, TlsRouteConfig);

#[cfg(test)]
mod tests;

/// A [`DataPlaneConfig`] serialised as it is, but for its version: what its
/// content hash covers, without copying the config.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Unversioned<'a> {
    version: u64,
    listeners: &'a [ListenerConfig],
    http_routes: &'a [HttpRouteConfig],
    grpc_routes: &'a [GrpcRouteConfig],
    tls_routes: &'a [TlsRouteConfig],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    certificates: &'a [CertificateConfig],
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes` (the tests check it against reference vectors).
#[cfg(test)]
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hasher = Fnv1a64(FNV_OFFSET);
    hasher.update(bytes);
    hasher.0
}

/// 64-bit FNV-1a, tiny and stable across releases and platforms, fed as a writer
/// so a document is hashed as it is serialised.
struct Fnv1a64(u64);

impl Fnv1a64 {
    fn update(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |hash, &byte| {
            (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
        });
    }
}

impl std::io::Write for Fnv1a64 {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
