//! What a dedicated data plane consists of, rendered as typed Kubernetes objects.
//! Pure: no IO, no clock, no randomness; the same [`PlaneSpec`] always gives the
//! same objects, so the controller can apply them on every reconcile (server-side
//! apply) and drift is healed by re-applying. Start at [`render`].
//!
//! For a Gateway whose `spec.infrastructure.parametersRef` names a `GatewayConfig`,
//! [`render`] produces, in the Gateway's namespace and owned by it
//! (`controller: true`, `blockOwnerDeletion: true`, so they go when it goes):
//!
//! - a **Deployment** `culvert-<gateway>` ([`deployment`]) running `culvert serve`
//!   in push mode (neither `--config` nor `--kubernetes`): the config API on
//!   `$(POD_IP):8081` over TLS, its bearer token and certificate from the plane's
//!   Secrets, `--tunnel-token-file` when the GatewayConfig has a tunnel. Replicas
//!   come from `GatewayConfig.replicas` (default 1) and are left out when
//!   autoscaling, so the HorizontalPodAutoscaler owns the count. The pod keeps the
//!   DaemonSet's hardening, probes, `preStop` drain and grace period;
//! - a headless **Service** `culvert-<gateway>-config` ([`service`]) for the config
//!   API port only, publishing pods before they are ready, because a pushed plane
//!   becomes ready only after its first push;
//! - without a tunnel, a `LoadBalancer` **Service** `culvert-<gateway>`
//!   ([`service`]) with the plane's listener ports, whose address the Gateway
//!   reports;
//! - a **NetworkPolicy** `culvert-<gateway>` ([`network_policy`]) admitting the
//!   config API port only from the controller's pods (and any metrics scrapers the
//!   controller names), every other port from anywhere;
//! - a **PodDisruptionBudget** `culvert-<gateway>` ([`disruption`]) with
//!   `maxUnavailable: 1`;
//! - with `GatewayConfig.autoscaling`, an autoscaling/v2 **HorizontalPodAutoscaler**
//!   `culvert-<gateway>` ([`autoscaler`]) on the Pods metric
//!   `culvert_requests_in_flight`. The HPA reads it from the custom metrics API, so
//!   the cluster needs an adapter (prometheus-adapter) exposing the proxy's gauge
//!   there; without one the HPA reports `FailedGetPodsMetric` and holds the
//!   minimum. `docs/controller.md` has an adapter rule.
//!
//! Names fit Kubernetes' limits whatever the Gateway is called ([`names`]).
//! Every object and the pod template carry the standard `app.kubernetes.io/*`
//! labels, `gateway.networking.k8s.io/gateway-name` (and `-class-name`), and the
//! Gateway's `spec.infrastructure` labels and annotations; on a shared key
//! Culvert's value wins, and the Gateway's entry is reported in
//! [`Rendered::dropped`] ([`labels`]). The pod template also carries
//! [`SECRETS_HASH_ANNOTATION`], the hash of the plane's Secrets' data, so rotating
//! a token or certificate rolls the pods (the token reaches the process through
//! its environment, which only a restart re-reads).
//!
//! The plane's Secrets are the controller's business; this module only names
//! them. The config API TLS Secret holds `tls.crt`, `tls.key` and `ca.crt` (the
//! CA that issued it, which `culvert drain` trusts), for the name
//! [`PlaneNames::config_server_name`].
//!
//! Nothing here panics on what a Gateway or GatewayConfig says: impossible
//! settings are an [`Error`], bad infrastructure entries are dropped and reported.

pub mod autoscaler;
pub mod deployment;
pub mod disruption;
pub mod labels;
pub mod names;
pub mod network_policy;
pub mod service;

use std::collections::BTreeMap;

use culvert_control_lite::model::{Gateway, GatewayClass, GatewayConfigSpec};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};

use crate::Error;
pub use labels::{DropReason, Dropped, MetadataKind};
pub use names::PlaneNames;

/// The config API's port on every plane pod.
pub const CONFIG_API_PORT: i32 = 8081;

/// The name of that port on the container and the Service.
pub const CONFIG_API_PORT_NAME: &str = "control";

/// The proxy's in-flight requests gauge (`proxy/src/metrics/`), the autoscaling
/// signal.
pub const IN_FLIGHT_METRIC: &str = "culvert_requests_in_flight";

/// In-flight requests per pod the autoscaler aims at when the GatewayConfig does
/// not say.
pub const DEFAULT_TARGET_IN_FLIGHT: u32 = 50;

/// Pod template annotation holding the hash of the plane's Secrets' data.
pub const SECRETS_HASH_ANNOTATION: &str = "culvert.dev/secrets-hash";

/// `app.kubernetes.io/name` of dedicated plane pods. Not the DaemonSet's
/// `culvert`, so neither its selector nor its `--publish-pods` ever matches a
/// dedicated plane's pods.
pub const APP_NAME: &str = "culvert-plane";

/// `app.kubernetes.io/managed-by` of everything rendered here.
pub const MANAGED_BY: &str = "culvert-controller";

/// Label keys.
pub mod label {
    /// Selector: the application (`culvert-plane`).
    pub const NAME: &str = "app.kubernetes.io/name";
    /// Selector: which Gateway's plane.
    pub const INSTANCE: &str = "app.kubernetes.io/instance";
    /// `data-plane`.
    pub const COMPONENT: &str = "app.kubernetes.io/component";
    /// `culvert`.
    pub const PART_OF: &str = "app.kubernetes.io/part-of";
    /// `culvert-controller`.
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// The Gateway's name (GEP-1762), on metadata, never in a selector.
    pub const GATEWAY_NAME: &str = "gateway.networking.k8s.io/gateway-name";
    /// The Gateway's class name (GEP-1762), on metadata, never in a selector.
    pub const GATEWAY_CLASS_NAME: &str = "gateway.networking.k8s.io/gateway-class-name";
}

/// Every label key Culvert sets; the Gateway's infrastructure labels cannot.
const RESERVED_LABELS: &[&str] = &[
    label::NAME,
    label::INSTANCE,
    label::COMPONENT,
    label::PART_OF,
    label::MANAGED_BY,
    label::GATEWAY_NAME,
    label::GATEWAY_CLASS_NAME,
];

/// Every annotation key Culvert sets; the Gateway's infrastructure annotations
/// cannot.
const RESERVED_ANNOTATIONS: &[&str] = &[
    SECRETS_HASH_ANNOTATION,
    deployment::PROMETHEUS_SCRAPE,
    deployment::PROMETHEUS_PORT,
    deployment::PROMETHEUS_SCHEME,
    deployment::PROMETHEUS_PATH,
];

/// Everything rendering needs; the controller gathers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneSpec {
    /// The Gateway the plane serves and owns the objects.
    pub gateway: GatewayRef,
    /// The `GatewayConfig` it names.
    pub config: GatewayConfigSpec,
    /// The image the controller itself runs, and its pull policy.
    pub image: Image,
    /// The controller's pods, the only ones the config API admits.
    pub controller: PodPeer,
    /// Further pods admitted to the config API port for `/metrics` (Prometheus,
    /// which the autoscaler's adapter reads); empty by default.
    pub metrics_scrapers: Vec<PodPeer>,
    /// The plane's Secrets.
    pub secrets: PlaneSecrets,
    /// Tunnel edge addresses (`host:port`) the plane dials when it has a tunnel;
    /// empty, it discovers the edge (SRV records of argotunnel.com).
    pub tunnel_edges: Vec<String>,
    /// The listener ports the plane serves, sorted and distinct: the data
    /// Service's ports.
    pub listener_ports: Vec<u16>,
}

/// What owns a plane's objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OwnerKind {
    /// A dedicated plane: its Gateway, in whose namespace it is rendered.
    #[default]
    Gateway,
    /// A class's shared plane: the (cluster-scoped) GatewayClass; rendered in the
    /// controller's namespace.
    GatewayClass,
}

impl OwnerKind {
    /// The owner's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gateway => "Gateway",
            Self::GatewayClass => "GatewayClass",
        }
    }
}

/// Where [`GatewayRef::key`] of a class's shared plane starts: a `/` no Gateway
/// name holds, so the key of a shared plane never equals a Gateway's.
pub const CLASS_KEY_PREFIX: &str = "gatewayclass/";

/// The parts of a plane's owner rendering reads: a Gateway, or for a shared
/// plane its GatewayClass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayRef {
    /// A Gateway or a GatewayClass.
    pub owner: OwnerKind,
    /// Namespace, where everything is rendered (the Gateway's; the controller's
    /// for a GatewayClass).
    pub namespace: String,
    /// The owner's name.
    pub name: String,
    /// UID, for the owner references.
    pub uid: String,
    /// `spec.gatewayClassName` (the class itself for a GatewayClass).
    pub class_name: String,
    /// `spec.infrastructure.labels`, unchecked.
    pub labels: BTreeMap<String, String>,
    /// `spec.infrastructure.annotations`, unchecked.
    pub annotations: BTreeMap<String, String>,
}

impl GatewayRef {
    /// The parts of `gateway`; a missing field becomes empty (and [`render`]
    /// refuses it).
    pub fn from_gateway(gateway: &Gateway) -> Self {
        let infrastructure = gateway.spec.infrastructure.as_ref();
        Self {
            owner: OwnerKind::Gateway,
            namespace: gateway.metadata.namespace().to_owned(),
            name: gateway.metadata.name.clone(),
            uid: gateway.metadata.uid.clone().unwrap_or_default(),
            class_name: gateway.spec.gateway_class_name.clone(),
            labels: infrastructure.map(|i| i.labels.clone()).unwrap_or_default(),
            annotations: infrastructure
                .map(|i| i.annotations.clone())
                .unwrap_or_default(),
        }
    }

    /// The shared plane of `class`, rendered in `namespace` (the controller's).
    pub fn for_class(class: &GatewayClass, namespace: &str) -> Self {
        Self {
            owner: OwnerKind::GatewayClass,
            namespace: namespace.to_owned(),
            name: class.metadata.name.clone(),
            uid: class.metadata.uid.clone().unwrap_or_default(),
            class_name: class.metadata.name.clone(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
        }
    }

    /// The names of the plane's objects.
    pub fn names(&self) -> PlaneNames {
        match self.owner {
            OwnerKind::Gateway => PlaneNames::new(&self.name),
            OwnerKind::GatewayClass => PlaneNames::for_class(&self.name),
        }
    }

    /// The plane's key among all planes: `(namespace, name)` of a Gateway,
    /// `(namespace, "gatewayclass/<class>")` of a shared plane.
    pub fn key(&self) -> (String, String) {
        match self.owner {
            OwnerKind::Gateway => (self.namespace.clone(), self.name.clone()),
            OwnerKind::GatewayClass => (
                self.namespace.clone(),
                format!("{CLASS_KEY_PREFIX}{}", self.name),
            ),
        }
    }
}

/// A container image and when the kubelet pulls it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Image reference.
    pub name: String,
    /// Pull policy.
    pub pull_policy: PullPolicy,
}

/// `imagePullPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullPolicy {
    /// `Always`.
    Always,
    /// `IfNotPresent`.
    IfNotPresent,
    /// `Never`.
    Never,
}

impl PullPolicy {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "Always",
            Self::IfNotPresent => "IfNotPresent",
            Self::Never => "Never",
        }
    }
}

/// Pods in one namespace with some labels (all its pods when `labels` is empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodPeer {
    /// Their namespace.
    pub namespace: String,
    /// Their labels.
    pub labels: BTreeMap<String, String>,
}

/// One key of a Secret.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretKey {
    /// Secret name (in the Gateway's namespace).
    pub name: String,
    /// Key within it.
    pub key: String,
}

/// The plane's Secrets, all in the Gateway's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneSecrets {
    /// The config API's bearer token.
    pub config_token: SecretKey,
    /// The config API's certificate (`tls.crt`, `tls.key`, `ca.crt`).
    pub config_tls: String,
    /// The tunnel token, when the GatewayConfig has a tunnel.
    pub tunnel_token: Option<SecretKey>,
    /// A hash of those Secrets' data, carried on the pod template.
    pub content_hash: String,
}

/// The rendered objects, ready to be serialised for server-side apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The names used.
    pub names: PlaneNames,
    /// The plane's workload.
    pub deployment: Deployment,
    /// Headless Service of the config API.
    pub config_service: Service,
    /// The Service clients reach a plane without a tunnel through (the
    /// controller deletes an existing one otherwise).
    pub data_service: Option<Service>,
    /// The config API's admission.
    pub network_policy: NetworkPolicy,
    /// The disruption budget.
    pub disruption_budget: PodDisruptionBudget,
    /// The autoscaler, when the GatewayConfig asks for one (the controller deletes
    /// an existing one otherwise).
    pub autoscaler: Option<HorizontalPodAutoscaler>,
    /// Infrastructure labels and annotations left off, with why.
    pub dropped: Vec<Dropped>,
}

impl Rendered {
    /// Every object as JSON (with `apiVersion` and `kind`), in apply order: what
    /// the pods need first, the workload, then what refers to it.
    pub fn apply_documents(&self) -> Result<Vec<serde_json::Value>, Error> {
        let mut documents = vec![to_json("Service", &self.config_service)?];
        if let Some(service) = &self.data_service {
            documents.push(to_json("Service", service)?);
        }
        documents.extend([
            to_json("NetworkPolicy", &self.network_policy)?,
            to_json("Deployment", &self.deployment)?,
            to_json("PodDisruptionBudget", &self.disruption_budget)?,
        ]);
        if let Some(autoscaler) = &self.autoscaler {
            documents.push(to_json("HorizontalPodAutoscaler", autoscaler)?);
        }
        Ok(documents)
    }
}

fn to_json<T: serde::Serialize>(
    kind: &'static str,
    object: &T,
) -> Result<serde_json::Value, Error> {
    serde_json::to_value(object).map_err(|e| Error::Serialize {
        kind,
        message: e.to_string(),
    })
}

/// Renders the plane `spec` describes.
pub fn render(spec: &PlaneSpec) -> Result<Rendered, Error> {
    let plane = Plane::new(spec)?;
    Ok(Rendered {
        deployment: deployment::deployment(&plane)?,
        config_service: service::config_service(&plane),
        data_service: service::data_service(&plane),
        network_policy: network_policy::network_policy(&plane)?,
        disruption_budget: disruption::disruption_budget(&plane),
        autoscaler: plane
            .scaling
            .autoscaling()
            .map(|a| autoscaler::autoscaler(&plane, a)),
        dropped: plane.dropped.clone(),
        names: plane.names,
    })
}

/// How many pods, and who decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scaling {
    /// The Deployment says.
    Fixed(i32),
    /// The autoscaler says, within these bounds.
    Auto(AutoscalingBounds),
}

impl Scaling {
    fn autoscaling(self) -> Option<AutoscalingBounds> {
        match self {
            Self::Fixed(_) => None,
            Self::Auto(bounds) => Some(bounds),
        }
    }
}

/// Checked autoscaling settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoscalingBounds {
    /// Fewest replicas (`GatewayConfig.replicas`, default 1).
    pub min: i32,
    /// Most replicas.
    pub max: i32,
    /// In-flight requests per pod aimed at.
    pub target_in_flight: i32,
}

/// The checked spec and what every object shares.
#[derive(Debug)]
struct Plane<'a> {
    spec: &'a PlaneSpec,
    names: PlaneNames,
    scaling: Scaling,
    /// Labels that select the plane's pods (immutable on the Deployment).
    selector: BTreeMap<String, String>,
    /// Labels on every object and the pod template.
    labels: BTreeMap<String, String>,
    /// Annotations on every object (the pod template adds its own).
    annotations: BTreeMap<String, String>,
    dropped: Vec<Dropped>,
}

impl<'a> Plane<'a> {
    fn new(spec: &'a PlaneSpec) -> Result<Self, Error> {
        let gateway = &spec.gateway;
        for (field, value) in [
            ("namespace", &gateway.namespace),
            ("name", &gateway.name),
            ("uid", &gateway.uid),
        ] {
            if value.is_empty() {
                return Err(Error::MissingGatewayField(field));
            }
        }
        if spec.image.name.is_empty() {
            return Err(Error::NoImage);
        }
        let scaling = scaling(&spec.config)?;
        let names = gateway.names();
        let selector = BTreeMap::from([
            (label::NAME.to_owned(), APP_NAME.to_owned()),
            (label::INSTANCE.to_owned(), names.instance_label.clone()),
        ]);
        let mut own = selector.clone();
        own.extend([
            (label::COMPONENT.to_owned(), "data-plane".to_owned()),
            (label::PART_OF.to_owned(), "culvert".to_owned()),
            (label::MANAGED_BY.to_owned(), MANAGED_BY.to_owned()),
        ]);
        if gateway.owner == OwnerKind::Gateway {
            own.insert(label::GATEWAY_NAME.to_owned(), names.instance_label.clone());
        }
        if !gateway.class_name.is_empty() {
            own.insert(
                label::GATEWAY_CLASS_NAME.to_owned(),
                names::label_value(&gateway.class_name),
            );
        }
        let (infrastructure, dropped) = labels::Infrastructure::check(
            &gateway.labels,
            &gateway.annotations,
            RESERVED_LABELS,
            RESERVED_ANNOTATIONS,
        );
        Ok(Self {
            spec,
            labels: labels::under(&own, &infrastructure.labels),
            annotations: infrastructure.annotations,
            names,
            scaling,
            selector,
            dropped,
        })
    }

    /// Metadata of a rendered object called `name`.
    fn metadata(&self, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(self.spec.gateway.namespace.clone()),
            labels: Some(self.labels.clone()),
            annotations: non_empty(&self.annotations),
            owner_references: Some(vec![self.owner()]),
            ..ObjectMeta::default()
        }
    }

    /// The Gateway (or GatewayClass) as the controlling owner.
    fn owner(&self) -> OwnerReference {
        OwnerReference {
            api_version: "gateway.networking.k8s.io/v1".to_owned(),
            kind: self.spec.gateway.owner.as_str().to_owned(),
            name: self.spec.gateway.name.clone(),
            uid: self.spec.gateway.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// Whether the plane serves a tunnel: its GatewayConfig names one, or a
    /// shared plane is given its class's tunnel token.
    fn has_tunnel(&self) -> bool {
        self.spec.config.tunnel.is_some()
            || (self.spec.gateway.owner == OwnerKind::GatewayClass
                && self.spec.secrets.tunnel_token.is_some())
    }

    /// A selector matching exactly the plane's pods.
    fn pod_selector(&self) -> LabelSelector {
        LabelSelector {
            match_labels: Some(self.selector.clone()),
            match_expressions: None,
        }
    }
}

/// Replicas and autoscaling from the GatewayConfig, checked.
fn scaling(config: &GatewayConfigSpec) -> Result<Scaling, Error> {
    let replicas = config.replicas.unwrap_or(1);
    let min = i32::try_from(replicas).map_err(|_| Error::TooManyReplicas(replicas))?;
    let Some(autoscaling) = &config.autoscaling else {
        return Ok(Scaling::Fixed(min));
    };
    if replicas == 0 {
        return Err(Error::AutoscalingFromZero);
    }
    if autoscaling.max_replicas < replicas {
        return Err(Error::AutoscalingBounds {
            min: replicas,
            max: autoscaling.max_replicas,
        });
    }
    let max = i32::try_from(autoscaling.max_replicas)
        .map_err(|_| Error::TooManyReplicas(autoscaling.max_replicas))?;
    let target = autoscaling
        .target_in_flight
        .unwrap_or(DEFAULT_TARGET_IN_FLIGHT);
    let target_in_flight = i32::try_from(target)
        .ok()
        .filter(|t| *t > 0)
        .ok_or(Error::AutoscalingTarget(target))?;
    Ok(Scaling::Auto(AutoscalingBounds {
        min,
        max,
        target_in_flight,
    }))
}

/// `Some(map)` unless it is empty, so applied objects do not claim empty fields.
fn non_empty(map: &BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!map.is_empty()).then(|| map.clone())
}

#[cfg(test)]
mod tests;
