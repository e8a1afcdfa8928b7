//! The conformance vector file format, `gateway-api-conformance-vectors/v1`, as serde
//! types. The format's own description is `bench/conformance/vectors/README.md`;
//! the field docs here repeat only what a harness must not get wrong.
//!
//! Types tolerate keys they do not know (newer files may carry more), keep Kubernetes
//! objects (`resources`, `steps[].apply`) as raw JSON for the loader and the model to
//! type, and serialize back to the same JSON they were read from: lists and maps that
//! the format leaves out when empty are skipped, while `expect.backend` and
//! `conditions[].status`/`reason` keep their meaningful `null`.
//!
//! Start at [`VectorFile`] and [`load_vector`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The `format` this module reads.
pub const FORMAT: &str = "gateway-api-conformance-vectors/v1";

/// The value of `needs` for files that depend on backends behaving over time.
pub const NEEDS_LIVE_BACKENDS: &str = "live-backends";

/// One vector file: one upstream conformance test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VectorFile {
    /// Always [`FORMAT`]; [`load_vector`] refuses anything else.
    pub format: String,
    /// File name without `.json` (the upstream test file name).
    pub name: String,
    /// Upstream `ConformanceTest.ShortName`.
    #[serde(default)]
    pub short_name: String,
    /// Upstream description.
    #[serde(default)]
    pub description: String,
    /// Where upstream keeps the test.
    #[serde(default)]
    pub source: Upstream,
    /// Upstream feature names the test needs: run the file only if all are claimed.
    #[serde(default)]
    pub features: Vec<String>,
    /// Upstream has not finalized the test.
    #[serde(default)]
    pub provisional: bool,
    /// What the test needs beyond replay, such as [`NEEDS_LIVE_BACKENDS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// Skip the file if any of these features is claimed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_if_features: Vec<String>,
    /// Extra instructions for this file, in English.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Kubernetes objects to load before anything else, as written.
    #[serde(default)]
    pub resources: Vec<Value>,
    /// Exchanges to check once `resources` are loaded.
    #[serde(default)]
    pub requests: Vec<Exchange>,
    /// Status conditions that must hold once `resources` are loaded.
    #[serde(default)]
    pub conditions: Vec<ConditionCheck>,
    /// Other status assertions that must hold once `resources` are loaded.
    #[serde(default)]
    pub status_checks: Vec<StatusCheck>,
    /// Later changes, applied in order, each with its own checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
}

impl VectorFile {
    /// Whether the file needs backends that behave over time ([`NEEDS_LIVE_BACKENDS`]).
    pub fn needs_live_backends(&self) -> bool {
        self.needs.as_deref() == Some(NEEDS_LIVE_BACKENDS)
    }

    /// Whether a harness that claims the features `claimed` accepts should run this
    /// file: every `features` entry claimed and no `skipIfFeatures` entry claimed.
    pub fn runs_with(&self, claimed: impl Fn(&str) -> bool) -> bool {
        self.features.iter().all(|f| claimed(f))
            && !self.skip_if_features.iter().any(|f| claimed(f))
    }
}

/// Where upstream keeps a test (`source`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Upstream {
    /// Repository, such as `kubernetes-sigs/gateway-api`.
    #[serde(default)]
    pub repository: String,
    /// Release tag.
    #[serde(rename = "ref", default)]
    pub git_ref: String,
    /// Commit of the tag.
    #[serde(default)]
    pub commit: String,
    /// The test's Go file.
    #[serde(default)]
    pub test: String,
    /// The test's manifest files.
    #[serde(default)]
    pub manifests: Vec<String>,
    /// The base manifest the shared objects come from.
    #[serde(default)]
    pub base_manifest: String,
}

/// One exchange: a request and what must come of it (`requests[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Human-readable label, unique within the file.
    pub name: String,
    /// What to send.
    pub request: RequestSpec,
    /// What must hold.
    #[serde(default)]
    pub expect: Expect,
}

/// What to send (`requests[].request`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestSpec {
    /// `namespace/name` of the Gateway the client connects to.
    pub gateway: String,
    /// One of that Gateway's listener ports.
    pub port: u16,
    /// `http`, `https` (TLS then HTTP) or `tls` (TLS then a raw TCP echo).
    pub scheme: String,
    /// `HTTP/1.1`, `HTTP/2`, `HTTP/2-prior-knowledge`, `gRPC` or `websocket`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `Host` (`:authority`), maybe with a port. Absent: the Gateway's own address,
    /// which matches only listeners and routes without a hostname.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// HTTP method; `GET` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Request target including the query, sent exactly as written. `{UUID}` must be
    /// replaced with a fresh random value per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Request headers, one value each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// TLS SNI for `https` and `tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// Generated certificate the client trusts (`Secret ns/name`); informational.
    #[serde(rename = "trustedCA", default, skip_serializing_if = "Option::is_none")]
    pub trusted_ca: Option<String>,
    /// `ns/secret` of the client certificate to present; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
    /// gRPC service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_service: Option<String>,
    /// gRPC method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_method: Option<String>,
    /// gRPC request metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Headers the backend must add to its response.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_response_headers: BTreeMap<String, String>,
    /// How the echo backend must behave for this request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_behavior: Option<BackendBehavior>,
    /// Send the request this many times and judge the whole sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Text frame to send after a WebSocket upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket_message: Option<String>,
}

/// How the echo backend must behave for one request (`request.backendBehavior`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendBehavior {
    /// Go duration to wait before answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// Fail this many attempts that share `attemptKey`, then echo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_first_attempts: Option<u32>,
    /// Status of the failed attempts; a connection reset when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_with_status: Option<u16>,
    /// What identifies the attempts of one request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_key: Option<String>,
}

/// What must hold for one exchange (`requests[].expect`); a property left out is not
/// checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Expect {
    /// Acceptable status codes. With 504 or 408 listed, a client timeout also counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<u16>,
    /// Status codes that must not be returned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_not: Vec<u16>,
    /// `None`: not checked. `Some(None)` (JSON `null`): no backend may receive the
    /// request. `Some(Some("ns/service"))`: exactly that Service serves it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub backend: Option<Option<String>>,
    /// Namespace the serving backend must be in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_namespace: Option<String>,
    /// Every request of the sample must land on one of these Services.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backend_one_of: Vec<String>,
    /// The Service named in `backend` is backed by the pods of this Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_pods: Option<String>,
    /// Path and query the backend receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_sees_path: Option<String>,
    /// Method the backend receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_sees_method: Option<String>,
    /// Host header the backend receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_sees_host: Option<String>,
    /// Headers the backend must receive (names case-insensitive; repeats joined with `,`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_sees_headers: BTreeMap<String, String>,
    /// Headers the backend must not receive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent_backend_headers: Vec<String>,
    /// `{service: {header: value}}` for whichever backend served the request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_sees_headers_per_backend: BTreeMap<String, BTreeMap<String, String>>,
    /// SNI the backend's TLS server observed.
    #[serde(
        rename = "backendSeesSNI",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub backend_sees_sni: Option<String>,
    /// Client certificate the Gateway must present to the backend (`Secret ns/name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_sees_client_certificate: Option<String>,
    /// TLSRoute: `true` when the backend terminated the client's TLS (passthrough),
    /// `false` when the Gateway did.
    #[serde(
        rename = "backendTerminatesTLS",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub backend_terminates_tls: Option<bool>,
    /// Response headers, exact values (names case-insensitive).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub response_headers: BTreeMap<String, String>,
    /// Response header must be present with one of the listed values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub response_header_one_of: BTreeMap<String, Vec<String>>,
    /// Remove spaces before comparing response header values.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignore_whitespace_in_header_values: bool,
    /// Headers the client must not receive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent_response_headers: Vec<String>,
    /// HTTP protocol of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_protocol: Option<String>,
    /// The `Location` of a 3xx.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<Redirect>,
    /// The same redirect as one canonical URL (only when the host is known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_location: Option<String>,
    /// Services that must each receive a copy of the request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mirrored_to: Vec<Mirror>,
    /// With `repeat`: the share of requests each Service must receive.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub distribution: BTreeMap<String, f64>,
    /// Absolute tolerance on each `distribution` share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution_tolerance: Option<f64>,
    /// gRPC status code name (`OK`, `Unimplemented`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_status: Option<String>,
    /// TCP may be accepted but no TLS session may complete for this SNI.
    #[serde(default, skip_serializing_if = "is_false")]
    pub connection_rejected: bool,
    /// The TLS handshake or request fails at transport level; no HTTP response.
    #[serde(default, skip_serializing_if = "is_false")]
    pub request_fails: bool,
    /// The frame echoed back over the WebSocket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket_echo: Option<String>,
}

/// The expected `Location` of a redirect (`expect.redirect`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    /// Scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Host; not checked when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Port. Absent means the port must be missing or the scheme default (80/443).
    /// Written as a string in the files; a number is accepted too.
    #[serde(
        default,
        deserialize_with = "port_string_or_number",
        serialize_with = "port_as_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub port: Option<u16>,
    /// Path, compared without the query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A Service that must receive a copy of the request (`expect.mirroredTo[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mirror {
    /// `namespace/service`.
    pub backend: String,
    /// Share of requests mirrored, in percent; all of them when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
}

/// A status condition that must be present (`conditions[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionCheck {
    /// Kind of the object holding the condition.
    pub kind: String,
    /// Its namespace; absent for cluster-scoped kinds (GatewayClass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Gateway listener whose conditions hold it; the Gateway's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener: Option<String>,
    /// Route parent (or BackendTLSPolicy ancestor) whose entry holds it; only the keys
    /// given are compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_ref: Option<ParentRef>,
    /// Condition type (`Accepted`, `ResolvedRefs`, ...).
    #[serde(rename = "type")]
    pub condition_type: String,
    /// `True`, `False` or `Unknown`; `None` (JSON `null`) means any.
    #[serde(default)]
    pub status: Option<String>,
    /// Reason; `None` (JSON `null`) means any.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The parent entry a route condition belongs to (`conditions[].parentRef`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    /// API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Section (listener) name; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
    /// Port; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// A status assertion other than a condition (`statusChecks[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCheck {
    /// Kind of the object.
    pub kind: String,
    /// Its namespace; absent for cluster-scoped kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// What to check.
    pub check: CheckKind,
    /// Free text, for checks the format cannot express (`infrastructureMetadataPropagated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// [`CheckKind::Listeners`]: exact number of `status.listeners` entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_count: Option<u32>,
    /// [`CheckKind::Listeners`]: per-listener expectations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerCheck>,
    /// [`CheckKind::StatusAddressesExactly`]: the exact `status.addresses` values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Vec<String>>,
}

/// What a `statusChecks[].check` asserts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckKind {
    /// `hasAddress`: at least one `status.addresses` entry.
    HasAddress,
    /// `listeners`: `listenerCount` entries, each listed one as described.
    Listeners,
    /// `zeroAttachedRoutes`: no listener status, or one listener with 0 routes.
    ZeroAttachedRoutes,
    /// `noAcceptedParents`: no `status.parents`, or one whose `Accepted` is `False`.
    NoAcceptedParents,
    /// `conditionsHaveLatestObservedGeneration`: every condition is current.
    ConditionsHaveLatestObservedGeneration,
    /// `statusAddressesExactly`: `status.addresses` values are exactly `value`.
    StatusAddressesExactly,
    /// `infrastructureMetadataPropagated`: see the check's `description`.
    InfrastructureMetadataPropagated,
    /// A check this version does not know, by its name.
    Other(String),
}

impl CheckKind {
    /// The name used in the files.
    pub fn as_str(&self) -> &str {
        match self {
            Self::HasAddress => "hasAddress",
            Self::Listeners => "listeners",
            Self::ZeroAttachedRoutes => "zeroAttachedRoutes",
            Self::NoAcceptedParents => "noAcceptedParents",
            Self::ConditionsHaveLatestObservedGeneration => {
                "conditionsHaveLatestObservedGeneration"
            }
            Self::StatusAddressesExactly => "statusAddressesExactly",
            Self::InfrastructureMetadataPropagated => "infrastructureMetadataPropagated",
            Self::Other(name) => name,
        }
    }
}

impl From<&str> for CheckKind {
    fn from(name: &str) -> Self {
        match name {
            "hasAddress" => Self::HasAddress,
            "listeners" => Self::Listeners,
            "zeroAttachedRoutes" => Self::ZeroAttachedRoutes,
            "noAcceptedParents" => Self::NoAcceptedParents,
            "conditionsHaveLatestObservedGeneration" => {
                Self::ConditionsHaveLatestObservedGeneration
            }
            "statusAddressesExactly" => Self::StatusAddressesExactly,
            "infrastructureMetadataPropagated" => Self::InfrastructureMetadataPropagated,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for CheckKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for CheckKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CheckKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|name| Self::from(name.as_str()))
    }
}

/// Expectations for one listener of a [`CheckKind::Listeners`] check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerCheck {
    /// Listener name.
    pub name: String,
    /// Exact `attachedRoutes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_routes: Option<u32>,
    /// Kinds `supportedKinds` must contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supported_kinds_include: Vec<GroupKind>,
    /// `supportedKinds` must be empty.
    #[serde(default, skip_serializing_if = "is_false")]
    pub supported_kinds_empty: bool,
}

/// A route kind in `supportedKinds`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupKind {
    /// API group; the Gateway API group when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind.
    pub kind: String,
}

/// A later change and its own checks (`steps[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// What the step does and why.
    #[serde(default)]
    pub description: String,
    /// Full objects that create or replace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apply: Vec<Value>,
    /// Objects to delete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<ObjectRef>,
    /// Exchanges to check after the change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<Exchange>,
    /// Conditions that must hold after the change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionCheck>,
    /// Status assertions that must hold after the change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_checks: Vec<StatusCheck>,
}

/// An object named for deletion (`steps[].delete[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// Kind.
    pub kind: String,
    /// Namespace; absent for cluster-scoped kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// Why a vector file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file or directory could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The file is not valid JSON or does not fit the format.
    #[error("{}: {field}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Path of the offending field (`requests[3].request.port`; `.` for the file).
        field: String,
        /// The JSON error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// `format` is not [`FORMAT`].
    #[error("{}: unsupported format {found:?} (this reader knows {FORMAT:?})", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// The `format` it declares.
        found: String,
    },
}

/// Reads one vector file.
pub fn load_vector(path: &Path) -> Result<VectorFile, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_vector(&text, path)
}

/// Parses the text of a vector file; `path` only names it in errors.
pub fn parse_vector(text: &str, path: &Path) -> Result<VectorFile, Error> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let file: VectorFile = serde_path_to_error::deserialize(de).map_err(|err| Error::Parse {
        path: path.to_owned(),
        field: err.path().to_string(),
        source: err.into_inner(),
    })?;
    if file.format != FORMAT {
        return Err(Error::Format {
            path: path.to_owned(),
            found: file.format,
        });
    }
    Ok(file)
}

/// The vector files in `dir` (`*.json`, not recursive), sorted by name.
pub fn vector_paths(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let read_err = |source| Error::Read {
        path: dir.to_owned(),
        source,
    };
    let mut paths = Vec::new();
    for entry in fs::read_dir(dir).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        if path.extension().is_some_and(|ext| ext == "json") && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// Deserializes a field that is present (maybe `null`) into `Some`, so that with
/// `#[serde(default)]` an absent field stays `None`.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

fn port_string_or_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u16>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Port {
        Number(u16),
        Text(String),
    }
    match Option::<Port>::deserialize(deserializer)? {
        None => Ok(None),
        Some(Port::Number(port)) => Ok(Some(port)),
        Some(Port::Text(text)) => text.parse().map(Some).map_err(|_| {
            serde::de::Error::custom(format!("port {text:?} is not a number from 0 to 65535"))
        }),
    }
}

fn port_as_string<S: Serializer>(port: &Option<u16>, serializer: S) -> Result<S::Ok, S::Error> {
    match port {
        Some(port) => serializer.collect_str(port),
        None => serializer.serialize_none(),
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests;
