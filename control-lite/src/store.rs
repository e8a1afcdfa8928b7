//! [`Store`]: the current set of objects, indexed the way translation looks them up.
//! Filled from manifest files, a Kubernetes watch, or a conformance vector; holds no
//! opinion about what the objects mean.

use crate::load::load_path;
use crate::model::CULVERT_GROUP;
use crate::model::{
    BackendTlsPolicy, ConfigMap, EndpointSlice, Gateway, GatewayClass, GatewayClassConfig,
    GatewayConfig, GrpcRoute, HttpRoute, L4Route, ListenerSet, Namespace, ObjectKey,
    ReferenceGrant, Resource, Secret, Service, TlsRoute,
};
use std::collections::BTreeMap;
use std::path::Path;

/// The label Kubernetes puts on every Namespace, holding its name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Namespace and name.
pub type NamespacedName = (String, String);

/// Every object translation reads, keyed by name (and namespace).
#[derive(Debug, Clone, Default)]
pub struct Store {
    /// GatewayClasses by name.
    pub gateway_classes: BTreeMap<String, GatewayClass>,
    /// Gateways.
    pub gateways: BTreeMap<NamespacedName, Gateway>,
    /// HTTPRoutes.
    pub http_routes: BTreeMap<NamespacedName, HttpRoute>,
    /// GRPCRoutes.
    pub grpc_routes: BTreeMap<NamespacedName, GrpcRoute>,
    /// TLSRoutes.
    pub tls_routes: BTreeMap<NamespacedName, TlsRoute>,
    /// TCPRoutes (refused: Culvert carries no TCP).
    pub tcp_routes: BTreeMap<NamespacedName, L4Route>,
    /// UDPRoutes (refused: Culvert carries no UDP).
    pub udp_routes: BTreeMap<NamespacedName, L4Route>,
    /// ListenerSets (refused: Culvert merges none into Gateways).
    pub listener_sets: BTreeMap<NamespacedName, ListenerSet>,
    /// BackendTLSPolicies.
    pub backend_tls_policies: BTreeMap<NamespacedName, BackendTlsPolicy>,
    /// ReferenceGrants.
    pub reference_grants: BTreeMap<NamespacedName, ReferenceGrant>,
    /// Namespaces by name.
    pub namespaces: BTreeMap<String, Namespace>,
    /// Services.
    pub services: BTreeMap<NamespacedName, Service>,
    /// EndpointSlices.
    pub endpoint_slices: BTreeMap<NamespacedName, EndpointSlice>,
    /// Secrets.
    pub secrets: BTreeMap<NamespacedName, Secret>,
    /// ConfigMaps.
    pub config_maps: BTreeMap<NamespacedName, ConfigMap>,
    /// Culvert GatewayClassConfigs by name.
    pub gateway_class_configs: BTreeMap<String, GatewayClassConfig>,
    /// Culvert GatewayConfigs.
    pub gateway_configs: BTreeMap<NamespacedName, GatewayConfig>,
}

fn key_of(namespace: Option<&String>, name: &str) -> NamespacedName {
    (namespace.cloned().unwrap_or_default(), name.to_owned())
}

impl Store {
    /// Loads the manifests at `path` (a file or a directory) into a store. Returns
    /// the store of every object that loaded, and one message per document that did
    /// not (file#document and why), so a caller can refuse a partial load.
    pub fn load(path: &Path) -> (Self, Vec<String>) {
        let loaded = load_path(path);
        let mut problems: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
        let mut resources = Vec::with_capacity(loaded.documents.len());
        for document in loaded.documents {
            let source = document.source;
            match Resource::from_value(document.value) {
                Ok(resource) => resources.push(resource),
                Err(error) => problems.push(format!("{source}: {error}")),
            }
        }
        (Self::from_resources(resources), problems)
    }

    /// A store holding `resources`; later objects replace earlier ones of the same key.
    pub fn from_resources(resources: impl IntoIterator<Item = Resource>) -> Self {
        let mut store = Self::default();
        for resource in resources {
            store.apply(resource);
        }
        store
    }

    /// Creates or replaces an object. Kinds translation does not read are dropped.
    pub fn apply(&mut self, resource: Resource) {
        match resource {
            Resource::GatewayClass(o) => {
                self.gateway_classes.insert(o.metadata.name.clone(), o);
            }
            Resource::Gateway(o) => {
                self.gateways
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::HttpRoute(o) => {
                self.http_routes
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::GrpcRoute(o) => {
                self.grpc_routes
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::TlsRoute(o) => {
                self.tls_routes
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::TcpRoute(o) => {
                self.tcp_routes
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::UdpRoute(o) => {
                self.udp_routes
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::ListenerSet(o) => {
                self.listener_sets
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::BackendTlsPolicy(o) => {
                self.backend_tls_policies
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::ReferenceGrant(o) => {
                self.reference_grants
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::Namespace(mut o) => {
                // The API server labels every namespace with its own name, so
                // `allowedRoutes` selectors on that label work; manifests get it too.
                o.metadata
                    .labels
                    .entry(NAME_LABEL.to_owned())
                    .or_insert_with(|| o.metadata.name.clone());
                self.namespaces.insert(o.metadata.name.clone(), o);
            }
            Resource::Service(o) => {
                self.services
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::EndpointSlice(o) => {
                self.endpoint_slices
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::Secret(o) => {
                self.secrets
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::ConfigMap(o) => {
                self.config_maps
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::GatewayClassConfig(o) => {
                self.gateway_class_configs
                    .insert(o.metadata.name.clone(), o);
            }
            Resource::GatewayConfig(o) => {
                self.gateway_configs
                    .insert(key_of(o.metadata.namespace.as_ref(), &o.metadata.name), o);
            }
            Resource::Other(_) => {}
        }
    }

    /// Deletes an object; returns whether it existed.
    pub fn delete(&mut self, key: &ObjectKey) -> bool {
        let nn = (key.namespace.clone(), key.name.clone());
        match key.kind.as_str() {
            "GatewayClass" => self.gateway_classes.remove(&key.name).is_some(),
            "Gateway" => self.gateways.remove(&nn).is_some(),
            "HTTPRoute" => self.http_routes.remove(&nn).is_some(),
            "GRPCRoute" => self.grpc_routes.remove(&nn).is_some(),
            "TLSRoute" => self.tls_routes.remove(&nn).is_some(),
            "TCPRoute" => self.tcp_routes.remove(&nn).is_some(),
            "UDPRoute" => self.udp_routes.remove(&nn).is_some(),
            "ListenerSet" => self.listener_sets.remove(&nn).is_some(),
            "BackendTLSPolicy" => self.backend_tls_policies.remove(&nn).is_some(),
            "ReferenceGrant" => self.reference_grants.remove(&nn).is_some(),
            "Namespace" => self.namespaces.remove(&key.name).is_some(),
            "Service" => self.services.remove(&nn).is_some(),
            "EndpointSlice" => self.endpoint_slices.remove(&nn).is_some(),
            "Secret" => self.secrets.remove(&nn).is_some(),
            "ConfigMap" => self.config_maps.remove(&nn).is_some(),
            "GatewayClassConfig" => self.gateway_class_configs.remove(&key.name).is_some(),
            "GatewayConfig" => self.gateway_configs.remove(&nn).is_some(),
            _ => false,
        }
    }

    /// Deletes every object of `kind` (a relist replaces them all).
    pub fn clear_kind(&mut self, kind: &str) {
        match kind {
            "GatewayClass" => self.gateway_classes.clear(),
            "Gateway" => self.gateways.clear(),
            "HTTPRoute" => self.http_routes.clear(),
            "GRPCRoute" => self.grpc_routes.clear(),
            "TLSRoute" => self.tls_routes.clear(),
            "TCPRoute" => self.tcp_routes.clear(),
            "UDPRoute" => self.udp_routes.clear(),
            "ListenerSet" => self.listener_sets.clear(),
            "BackendTLSPolicy" => self.backend_tls_policies.clear(),
            "ReferenceGrant" => self.reference_grants.clear(),
            "Namespace" => self.namespaces.clear(),
            "Service" => self.services.clear(),
            "EndpointSlice" => self.endpoint_slices.clear(),
            "Secret" => self.secrets.clear(),
            "ConfigMap" => self.config_maps.clear(),
            "GatewayClassConfig" => self.gateway_class_configs.clear(),
            "GatewayConfig" => self.gateway_configs.clear(),
            _ => {}
        }
    }

    /// The `GatewayConfig` that `gateway` (in `namespace`) names in
    /// `spec.infrastructure.parametersRef`, if it exists.
    pub fn gateway_config<'s>(
        &'s self,
        namespace: &str,
        gateway: &Gateway,
    ) -> Option<&'s GatewayConfig> {
        let reference = gateway
            .spec
            .infrastructure
            .as_ref()?
            .parameters_ref
            .as_ref()?;
        if reference.group != CULVERT_GROUP || reference.kind != "GatewayConfig" {
            return None;
        }
        self.gateway_configs
            .get(&(namespace.to_owned(), reference.name.clone()))
    }

    /// The `GatewayClassConfig` that GatewayClass `class` names in
    /// `spec.parametersRef`, if it names one and it exists.
    pub fn gateway_class_config(&self, class: &str) -> Option<&GatewayClassConfig> {
        let reference = self
            .gateway_classes
            .get(class)?
            .spec
            .parameters_ref
            .as_ref()?;
        if reference.group != CULVERT_GROUP || reference.kind != "GatewayClassConfig" {
            return None;
        }
        self.gateway_class_configs.get(&reference.name)
    }

    /// The EndpointSlices of Service `namespace/service`.
    pub fn slices_of<'s>(
        &'s self,
        namespace: &'s str,
        service: &'s str,
    ) -> impl Iterator<Item = &'s EndpointSlice> + 's {
        self.endpoint_slices
            .range((namespace.to_owned(), String::new())..)
            .take_while(move |((ns, _), _)| ns == namespace)
            .map(|(_, slice)| slice)
            .filter(move |slice| slice.service_name() == Some(service))
    }
}
