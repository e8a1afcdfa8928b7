//! Listener validation: protocol support, conflicts between listeners of one
//! Gateway, allowed route kinds and namespaces, and certificate references.

use super::certificates::check_tls_secret;
use super::client_validation;
use super::conditions::{Verdict, reason};
use super::references::{GatewayRefError, gateway_core_ref};
use crate::model::GATEWAY_GROUP;
use crate::model::{Gateway, LabelSelector, Listener, RouteGroupKind};
use crate::store::Store;
use culvert_router::config::{CertificateRef, ClientValidationConfig};
use culvert_router::host::HostPattern;

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
    fn of(listener: &Listener) -> Self {
        match listener.protocol.as_str() {
            "HTTP" => Self::Http,
            "HTTPS" => Self::Https,
            "TLS" => match listener.tls.as_ref().and_then(|t| t.mode.as_deref()) {
                Some("Passthrough") => Self::TlsPassthrough,
                _ => Self::TlsTerminate,
            },
            _ => Self::Unsupported,
        }
    }

    /// Route kinds this transport can carry.
    fn route_kinds(self) -> &'static [&'static str] {
        match self {
            Self::Http | Self::Https => &["HTTPRoute", "GRPCRoute"],
            Self::TlsPassthrough | Self::TlsTerminate => &["TLSRoute"],
            Self::Unsupported => &[],
        }
    }

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

/// Validates every listener of a Gateway.
pub(crate) fn validate(gateway: &Gateway, store: &Store) -> Vec<ListenerState> {
    let namespace = gateway.metadata.namespace();
    let mut states: Vec<ListenerState> = gateway
        .spec
        .listeners
        .iter()
        .map(|l| validate_one(gateway, l, namespace, store))
        .collect();
    mark_conflicts(&mut states);
    states
}

fn validate_one(
    gateway: &Gateway,
    listener: &Listener,
    namespace: &str,
    store: &Store,
) -> ListenerState {
    let transport = Transport::of(listener);
    let mut accepted = Verdict::yes(reason::ACCEPTED);
    let mut resolved_refs = Verdict::yes(reason::RESOLVED_REFS);
    let port = u16::try_from(listener.port).ok().filter(|p| *p != 0);
    if port.is_none() {
        accepted = Verdict::no(
            reason::UNSUPPORTED_VALUE,
            format!("port {} is out of range", listener.port),
        );
    }
    let hostname = match listener
        .hostname
        .as_deref()
        .map(HostPattern::parse)
        .transpose()
    {
        Ok(hostname) => hostname,
        Err(why) => {
            accepted = Verdict::no(reason::UNSUPPORTED_VALUE, why);
            None
        }
    };
    if transport == Transport::Unsupported {
        accepted = Verdict::no(
            reason::UNSUPPORTED_PROTOCOL,
            format!("protocol {:?} is not supported", listener.protocol),
        );
    }
    let (supported_kinds, kinds_ok) = supported_kinds(listener, transport);
    if !kinds_ok {
        resolved_refs = Verdict::no(
            reason::INVALID_ROUTE_KINDS,
            "allowedRoutes.kinds names a kind this listener cannot carry",
        );
    }
    let mut certificates = Vec::new();
    let mut client_validation = None;
    let acme = match acme_option(listener, transport) {
        Ok(acme) => acme,
        Err(refused) => {
            accepted = refused;
            false
        }
    };
    if let (true, Some(port)) = (transport.terminates(), port) {
        let has_refs = listener
            .tls
            .as_ref()
            .is_some_and(|tls| !tls.certificate_refs.is_empty());
        if !acme || has_refs {
            match resolve_certificates(listener, namespace, store) {
                Ok(refs) => certificates = refs,
                Err(verdict) => resolved_refs = verdict,
            }
        }
        let validation = client_validation::for_listener(gateway, listener, port, store);
        client_validation = validation.config;
        if let Some(unresolved) = validation.unresolved {
            if resolved_refs.status {
                resolved_refs = unresolved;
            }
        }
        if let Some(refused) = validation.refused {
            if accepted.status {
                accepted = refused;
            }
        }
    }
    let namespaces = match listener
        .allowed_routes
        .as_ref()
        .and_then(|a| a.namespaces.as_ref())
    {
        None => NamespacePolicy::Same,
        Some(policy) => match policy.from.as_deref().unwrap_or("Same") {
            "Same" => NamespacePolicy::Same,
            "All" => NamespacePolicy::All,
            "Selector" => policy
                .selector
                .clone()
                .map_or(NamespacePolicy::None, NamespacePolicy::Selector),
            _ => NamespacePolicy::None,
        },
    };
    ListenerState {
        name: listener.name.clone(),
        port: port.unwrap_or(0),
        transport,
        hostname,
        supported_kinds: if accepted.status {
            supported_kinds
        } else {
            Vec::new()
        },
        namespaces,
        accepted,
        conflicted: Verdict::no(reason::NO_CONFLICTS, ""),
        resolved_refs,
        certificates,
        client_validation,
        acme,
        attached_routes: 0,
    }
}

/// The kinds that may attach, and whether every requested kind was valid.
fn supported_kinds(listener: &Listener, transport: Transport) -> (Vec<RouteGroupKind>, bool) {
    let carried = transport.route_kinds();
    let requested = listener
        .allowed_routes
        .as_ref()
        .map(|a| a.kinds.as_slice())
        .unwrap_or_default();
    let kind = |name: &str| RouteGroupKind {
        group: Some(GATEWAY_GROUP.to_owned()),
        kind: name.to_owned(),
    };
    if requested.is_empty() {
        return (carried.iter().map(|k| kind(k)).collect(), true);
    }
    let mut out: Vec<RouteGroupKind> = Vec::new();
    let mut all_valid = true;
    for wanted in requested {
        let group_ok = wanted.group.as_deref().is_none_or(|g| g == GATEWAY_GROUP);
        if group_ok && carried.contains(&wanted.kind.as_str()) {
            if !out.iter().any(|k| k.kind == wanted.kind) {
                out.push(kind(&wanted.kind));
            }
        } else {
            all_valid = false;
        }
    }
    (out, all_valid)
}

/// The `tls.options` key that asks the data plane to obtain the certificate by ACME.
pub(crate) const ACME_OPTION: &str = "culvert.dev/acme";

/// Whether the listener asks for ACME (`culvert.dev/acme: "true"`); refused (the
/// `Accepted` verdict) on a listener that is not `HTTPS` or has no exact hostname,
/// since HTTP-01 and TLS-ALPN-01 validate exact names only.
fn acme_option(listener: &Listener, transport: Transport) -> Result<bool, Verdict> {
    let value = listener
        .tls
        .as_ref()
        .and_then(|tls| tls.options.get(ACME_OPTION));
    let Some(value) = value else {
        return Ok(false);
    };
    let refuse = |why: String| Err(Verdict::no(reason::UNSUPPORTED_VALUE, why));
    match value.as_str() {
        "false" => return Ok(false),
        "true" => {}
        other => {
            return refuse(format!(
                "{ACME_OPTION} is {other:?}, not \"true\" or \"false\""
            ));
        }
    }
    if transport != Transport::Https {
        return refuse(format!("{ACME_OPTION} is only for HTTPS listeners"));
    }
    match listener.hostname.as_deref() {
        None => refuse(format!(
            "{ACME_OPTION} needs a hostname: the certificate is obtained for it"
        )),
        Some(name) if name.contains('*') => refuse(format!(
            "{ACME_OPTION} cannot obtain a certificate for the wildcard {name:?}: HTTP-01 and TLS-ALPN-01 validate exact names only"
        )),
        Some(_) => Ok(true),
    }
}

fn resolve_certificates(
    listener: &Listener,
    namespace: &str,
    store: &Store,
) -> Result<Vec<CertificateRef>, Verdict> {
    let refs = listener
        .tls
        .as_ref()
        .map(|t| t.certificate_refs.as_slice())
        .unwrap_or_default();
    if refs.is_empty() {
        return Err(Verdict::no(
            reason::INVALID_CERTIFICATE_REF,
            "HTTPS listener has no certificateRefs",
        ));
    }
    let mut out = Vec::with_capacity(refs.len());
    for reference in refs {
        let secret_namespace = match gateway_core_ref(store, namespace, reference, "Secret") {
            Ok(secret_namespace) => secret_namespace,
            Err(GatewayRefError::Kind { group, kind }) => {
                return Err(Verdict::no(
                    reason::INVALID_CERTIFICATE_REF,
                    format!(
                        "certificateRef {group:?}/{kind} {:?} is not a core Secret",
                        reference.name
                    ),
                ));
            }
            Err(GatewayRefError::NotPermitted { namespace }) => {
                return Err(Verdict::no(
                    reason::REF_NOT_PERMITTED,
                    format!(
                        "no ReferenceGrant allows Secret {namespace}/{}",
                        reference.name
                    ),
                ));
            }
        };
        let secret = store
            .secrets
            .get(&(secret_namespace.to_owned(), reference.name.clone()))
            .ok_or_else(|| {
                Verdict::no(
                    reason::INVALID_CERTIFICATE_REF,
                    format!("Secret {secret_namespace}/{} not found", reference.name),
                )
            })?;
        check_tls_secret(secret).map_err(|why| {
            Verdict::no(
                reason::INVALID_CERTIFICATE_REF,
                format!("Secret {secret_namespace}/{}: {why}", reference.name),
            )
        })?;
        out.push(CertificateRef {
            namespace: secret_namespace.to_owned(),
            name: reference.name.clone(),
        });
    }
    Ok(out)
}

/// Listeners on one port must speak compatible protocols and, when compatible, have
/// distinct hostnames; every listener involved in a conflict is refused.
fn mark_conflicts(states: &mut [ListenerState]) {
    let count = states.len();
    for i in 0..count {
        for j in 0..count {
            if i == j || states[i].port != states[j].port || states[i].port == 0 {
                continue;
            }
            let (a, b) = (states[i].transport, states[j].transport);
            if a == Transport::Unsupported || b == Transport::Unsupported {
                continue;
            }
            let verdict = if !a.compatible(b) {
                Some((
                    reason::PROTOCOL_CONFLICT,
                    format!(
                        "port {} is shared with listener {:?} of an incompatible protocol",
                        states[i].port, states[j].name
                    ),
                ))
            } else if states[i].hostname == states[j].hostname {
                Some((
                    reason::HOSTNAME_CONFLICT,
                    format!(
                        "port {} and hostname are shared with listener {:?}",
                        states[i].port, states[j].name
                    ),
                ))
            } else {
                None
            };
            if let Some((why, message)) = verdict {
                states[i].mark_conflicted(why, message);
            }
        }
    }
}
