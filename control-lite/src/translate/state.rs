//! The state layer of translation: what each stage reads and refines, in one place
//! and below every stage. [`Context`] carries the inputs and the state built so far
//! from stage to stage; [`ClassState`], [`GatewayState`] with its [`ListenerState`]s,
//! and [`RouteState`] with its [`ParentOutcome`]s are what the stages fill in, in the
//! order `translate` runs them. Nothing here decides anything a stage decides: the
//! types, and the small questions every stage asks of them (is a listener served,
//! what is a Gateway's `Programmed` verdict, what is a listener called in the
//! data-plane config).

use super::conditions::{Verdict, reason};
use super::options::Options;
use crate::model::{GatewayAddress, LabelSelector, ParentReference, RouteGroupKind};
use crate::store::{NamespacedName, Store};
use culvert_router::config::{
    BackendClientCertificate, BackendConfig, CertificateRef, ClientValidationConfig,
    GrpcRuleConfig, HttpRuleConfig,
};
use culvert_router::host::HostPattern;
use culvert_tunnel_proto::Uuid;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// A translation under way: what it was given, and the state the stages have built
/// so far. `translate` creates it and hands it to each stage in turn.
pub(crate) struct Context<'a> {
    pub(crate) store: &'a Store,
    pub(crate) options: &'a Options,
    /// The GatewayClasses Culvert owns, by name (`classes`).
    pub(crate) classes: BTreeMap<String, ClassState>,
    /// The Gateways of those classes, oldest first (`gateways`).
    pub(crate) gateways: Vec<GatewayState>,
    /// Every HTTPRoute, GRPCRoute and TLSRoute, attached and translated (`routes`).
    pub(crate) routes: Vec<RouteState>,
}

impl<'a> Context<'a> {
    /// A translation of `store` that has not started.
    pub(crate) fn new(store: &'a Store, options: &'a Options) -> Self {
        Self {
            store,
            options,
            classes: BTreeMap::new(),
            gateways: Vec::new(),
            routes: Vec::new(),
        }
    }

    /// The position of each Gateway among `gateways`, by namespace and name: how a
    /// `parentRef` finds its Gateway.
    pub(crate) fn gateway_index(&self) -> BTreeMap<NamespacedName, usize> {
        self.gateways
            .iter()
            .enumerate()
            .map(|(i, g)| (g.key.clone(), i))
            .collect()
    }
}

/// Which data plane serves a Gateway.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataPlaneId {
    /// The shared data plane of a GatewayClass.
    Shared(String),
    /// A dedicated data plane for one Gateway (`GatewayConfig`).
    Dedicated(NamespacedName),
}

/// Why admission refused a Gateway its dedicated data plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneRefusal {
    /// Its tunnel claim was refused (contested, unproven, the class's tunnel, or a
    /// token that cannot be read).
    TunnelClaimRejected,
    /// Its namespace is at the class's `maxDataPlanesPerNamespace`.
    DataPlaneQuotaExceeded,
    /// Its own GatewayConfig or tunnel token does not resolve (a Secret deleted,
    /// say): it takes no new config, but a plane already running keeps serving the
    /// last one it was given.
    ConfigUnresolved,
}

impl PlaneRefusal {
    /// The reason events about the refusal carry.
    pub fn reason(self) -> &'static str {
        match self {
            Self::TunnelClaimRejected => "TunnelClaimRejected",
            Self::DataPlaneQuotaExceeded => "DataPlaneQuotaExceeded",
            Self::ConfigUnresolved => "InvalidParameters",
        }
    }
}

/// A GatewayClass Culvert owns, and its verdict.
pub(crate) struct ClassState {
    pub(crate) generation: i64,
    pub(crate) accepted: Verdict,
    pub(crate) privileged_prefixes: Vec<String>,
    /// Gateways of different namespaces may share a tunnel (`allowSharedTunnels`).
    pub(crate) allow_shared_tunnels: bool,
    /// Most dedicated planes per namespace (`maxDataPlanesPerNamespace`).
    pub(crate) max_data_planes: Option<u32>,
    /// The tunnel the class's shared plane serves, which no Gateway may claim.
    pub(crate) tunnel: Option<Uuid>,
}

/// A Gateway Culvert owns, after validation.
pub(crate) struct GatewayState {
    pub(crate) key: NamespacedName,
    pub(crate) generation: i64,
    pub(crate) creation_timestamp: String,
    pub(crate) accepted: Verdict,
    pub(crate) addresses: Vec<GatewayAddress>,
    /// Why the requested addresses cannot be programmed, when they cannot.
    pub(crate) address_problem: Option<String>,
    /// What its address waits for (a load balancer being provisioned): it keeps
    /// its plane, since the plane is what gets the address.
    pub(crate) address_pending: Option<String>,
    /// The address its listeners bind, when the address is an IP.
    pub(crate) local_ip: Option<IpAddr>,
    pub(crate) listeners: Vec<ListenerState>,
    /// A port lets clients without a valid certificate through
    /// (`InsecureFrontendValidationMode`).
    pub(crate) insecure_frontend_validation: bool,
    /// `None` when the Gateway is not accepted and so not served.
    pub(crate) plane: Option<DataPlaneId>,
    /// What its routes' parents say when admission refused it (`admission`).
    pub(crate) parent_refusal: Option<Verdict>,
    /// Which admission rule refused its dedicated plane.
    pub(crate) refused_plane: Option<PlaneRefusal>,
    /// The tunnel its dedicated plane serves, once admitted.
    pub(crate) tunnel: Option<Uuid>,
    /// Set when its tunnel is shared with other dedicated Gateways (`TunnelShared`).
    pub(crate) tunnel_shared: Option<Verdict>,
    /// The status code of the HTTPS redirect it asks for (`redirect`).
    pub(crate) https_redirect: Option<u16>,
    /// The client certificate it shows backends over TLS (`spec.tls.backend`).
    pub(crate) backend_client_certificate: Option<BackendClientCertificate>,
    /// The Gateway-level `ResolvedRefs`, when `spec.tls.backend` names a certificate.
    pub(crate) resolved_refs: Option<Verdict>,
}

impl GatewayState {
    /// The Gateway-level `Programmed` verdict.
    pub(crate) fn programmed(&self) -> Verdict {
        if !self.accepted.status {
            Verdict::no(reason::INVALID, "gateway is not accepted")
        } else if let Some(problem) = &self.address_problem {
            Verdict::no(reason::ADDRESS_NOT_USABLE, problem.clone())
        } else if let Some(pending) = &self.address_pending {
            Verdict::no(reason::ADDRESS_NOT_ASSIGNED, pending.clone())
        } else if self.addresses.is_empty() {
            Verdict::no(reason::ADDRESS_NOT_USABLE, "no address could be assigned")
        } else {
            Verdict::yes(reason::PROGRAMMED)
        }
    }

    /// The name a listener has in the data-plane config.
    pub(crate) fn listener_id(&self, listener: &ListenerState) -> String {
        format!("{}/{}/{}", self.key.0, self.key.1, listener.name)
    }
}

/// What a listener speaks, as far as Culvert is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// `HTTP`.
    Http,
    /// `HTTPS` (TLS terminated, then HTTP).
    Https,
    /// `TLS` with `mode: Passthrough`.
    TlsPassthrough,
    /// `TLS` with `mode: Terminate` (the default): TLS terminated, the stream
    /// forwarded by TLSRoutes.
    TlsTerminate,
    /// Anything else.
    Unsupported,
}

impl Transport {
    /// Whether TLS is terminated by the data plane.
    pub(crate) fn terminates(self) -> bool {
        matches!(self, Self::Https | Self::TlsTerminate)
    }

    /// Whether two transports can share one port.
    pub(crate) fn compatible(self, other: Self) -> bool {
        match (self, other) {
            (Self::Unsupported, _) | (_, Self::Unsupported) => true,
            (Self::Http, Self::Http) => true,
            (Self::Http, _) | (_, Self::Http) => false,
            // The ClientHello's SNI picks among HTTPS, terminating and passthrough
            // TLS listeners of one port before any TLS is done.
            _ => true,
        }
    }
}

/// Which namespaces may attach routes to a listener.
#[derive(Debug, Clone)]
pub(crate) enum NamespacePolicy {
    Same,
    All,
    Selector(LabelSelector),
    /// An unknown `from` or a missing selector: nothing may attach.
    None,
}

/// A validated listener and the status it will report.
#[derive(Debug, Clone)]
pub(crate) struct ListenerState {
    pub(crate) name: String,
    pub(crate) port: u16,
    pub(crate) transport: Transport,
    pub(crate) hostname: Option<HostPattern>,
    pub(crate) supported_kinds: Vec<RouteGroupKind>,
    pub(crate) namespaces: NamespacePolicy,
    pub(crate) accepted: Verdict,
    /// `status: true` means conflicted.
    pub(crate) conflicted: Verdict,
    pub(crate) resolved_refs: Verdict,
    pub(crate) certificates: Vec<CertificateRef>,
    /// Client certificate validation (Gateway `spec.tls.frontend`), if asked for.
    pub(crate) client_validation: Option<ClientValidationConfig>,
    /// The data plane obtains the certificate by ACME (`tls.options`
    /// `culvert.dev/acme: "true"` on an `HTTPS` listener with an exact hostname).
    pub(crate) acme: bool,
    pub(crate) attached_routes: i32,
}

impl ListenerState {
    /// Refuses the listener for a conflict with another one.
    pub(crate) fn mark_conflicted(&mut self, why: &'static str, message: String) {
        self.conflicted = Verdict {
            status: true,
            reason: why,
            message: message.clone(),
        };
        self.refuse(why, message);
    }

    /// Refuses the listener: nothing attaches to it and the data plane does not
    /// serve it.
    pub(crate) fn refuse(&mut self, why: &'static str, message: String) {
        self.accepted = Verdict::no(why, message);
        self.supported_kinds.clear();
    }

    /// Whether routes may attach and the data plane serves this listener.
    pub(crate) fn usable(&self) -> bool {
        self.accepted.status
    }

    /// Whether the data plane gets this listener: accepted, and when it terminates
    /// TLS, with a certificate to terminate with (an `HTTPS` listener whose
    /// certificates did not resolve stays accepted but not programmed; sending it
    /// would make the data plane refuse the whole config).
    pub(crate) fn served(&self) -> bool {
        self.usable()
            && (!self.transport.terminates() || self.acme || !self.certificates.is_empty())
    }

    /// The `Programmed` verdict.
    pub(crate) fn programmed(&self) -> Verdict {
        if self.accepted.status && self.resolved_refs.status {
            Verdict::yes(reason::PROGRAMMED)
        } else {
            Verdict::no(
                reason::INVALID,
                "listener is not accepted or has unresolved references",
            )
        }
    }

    /// Whether `kind` may attach.
    pub(crate) fn allows_kind(&self, kind: &str) -> bool {
        self.supported_kinds.iter().any(|k| k.kind == kind)
    }

    /// Whether a route in `namespace` may attach to this listener of a Gateway in
    /// `gateway_namespace`.
    pub(crate) fn allows_namespace(
        &self,
        store: &Store,
        gateway_namespace: &str,
        namespace: &str,
    ) -> bool {
        match &self.namespaces {
            NamespacePolicy::Same => namespace == gateway_namespace,
            NamespacePolicy::All => true,
            NamespacePolicy::Selector(selector) => store
                .namespaces
                .get(namespace)
                .is_some_and(|ns| selector.matches(&ns.metadata.labels)),
            NamespacePolicy::None => false,
        }
    }
}

/// The translated rules of a route, by kind.
pub(crate) enum RouteBody {
    Http(Vec<HttpRuleConfig>),
    Grpc(Vec<GrpcRuleConfig>),
    Tls(Vec<BackendConfig>),
}

/// A route of any kind after attachment and translation.
pub(crate) struct RouteState {
    pub(crate) kind: &'static str,
    pub(crate) key: NamespacedName,
    pub(crate) generation: i64,
    pub(crate) creation_timestamp: Option<String>,
    pub(crate) hostnames: Vec<String>,
    pub(crate) patterns: Vec<HostPattern>,
    pub(crate) parents: Vec<ParentOutcome>,
    pub(crate) resolved_refs: Verdict,
    /// The Services its backends resolved to.
    pub(crate) services: BTreeSet<NamespacedName>,
    pub(crate) body: RouteBody,
}

/// The outcome for one parentRef of a Gateway Culvert owns.
pub(crate) struct ParentOutcome {
    pub(crate) parent_ref: ParentReference,
    /// Index into the gateway states.
    pub(crate) gateway: usize,
    pub(crate) accepted: Verdict,
    /// Indexes of the listeners that accept the route.
    pub(crate) listeners: Vec<usize>,
}
