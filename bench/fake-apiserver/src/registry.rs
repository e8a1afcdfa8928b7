//! Which kinds the server serves: the built-in kinds every fake starts with and the
//! served versions of registered CustomResourceDefinitions, each with its scope,
//! plural, list kind, `/status` subresource and (for CRDs) the OpenAPI schema whose
//! defaults the store applies. Owns no objects; start at [`Registry::builtin`].

use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;

/// Where a kind lives in the API and how it behaves.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Kind {
    /// API group (`""` for core).
    pub(crate) group: String,
    /// Served version.
    pub(crate) version: String,
    /// Kind.
    pub(crate) kind: String,
    /// List kind (`<Kind>List` unless the CRD says otherwise).
    pub(crate) list_kind: String,
    /// Plural resource name.
    pub(crate) plural: String,
    /// Namespaced or cluster-scoped.
    pub(crate) namespaced: bool,
    /// Whether `/status` is a subresource (main writes then ignore `status`).
    pub(crate) status: bool,
    /// Custom resource: list items carry `apiVersion` and `kind`, updates need a
    /// `resourceVersion`, strategic merge patches are refused.
    pub(crate) custom: bool,
    /// `openAPIV3Schema` of a CRD version, for defaults.
    pub(crate) schema: Option<Arc<Value>>,
}

impl Kind {
    fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            list_kind: format!("{kind}List"),
            plural: plural.to_owned(),
            namespaced,
            status: false,
            custom: false,
            schema: None,
        }
    }

    fn with_status(mut self) -> Self {
        self.status = true;
        self
    }

    /// `apiVersion` of the kind's objects.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` as error messages and storage keys name it (all versions of a
    /// resource share storage, as in etcd).
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The served kinds.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    kinds: Vec<Kind>,
}

/// `apiextensions.k8s.io` group, whose CRD objects register kinds when written.
pub(crate) const CRD_GROUP: &str = "apiextensions.k8s.io";

impl Registry {
    /// The built-in kinds: core Namespace, Node, Service, Secret, ConfigMap, Pod,
    /// Event; `events.k8s.io/v1` Event; EndpointSlice; Lease; the workload kinds
    /// the controller renders (Deployment, NetworkPolicy, PodDisruptionBudget,
    /// HorizontalPodAutoscaler); CRDs themselves.
    pub(crate) fn builtin() -> Self {
        let kinds = vec![
            Kind::builtin("", "v1", "Namespace", "namespaces", false).with_status(),
            Kind::builtin("", "v1", "Node", "nodes", false).with_status(),
            Kind::builtin("", "v1", "Service", "services", true).with_status(),
            Kind::builtin("", "v1", "Secret", "secrets", true),
            Kind::builtin("", "v1", "ConfigMap", "configmaps", true),
            Kind::builtin("", "v1", "Pod", "pods", true).with_status(),
            Kind::builtin("", "v1", "Event", "events", true),
            Kind::builtin("events.k8s.io", "v1", "Event", "events", true),
            Kind::builtin(
                "discovery.k8s.io",
                "v1",
                "EndpointSlice",
                "endpointslices",
                true,
            ),
            Kind::builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
            Kind::builtin("apps", "v1", "Deployment", "deployments", true).with_status(),
            Kind::builtin(
                "networking.k8s.io",
                "v1",
                "NetworkPolicy",
                "networkpolicies",
                true,
            ),
            Kind::builtin(
                "policy",
                "v1",
                "PodDisruptionBudget",
                "poddisruptionbudgets",
                true,
            )
            .with_status(),
            Kind::builtin(
                "autoscaling",
                "v2",
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
                true,
            )
            .with_status(),
            Kind::builtin(
                CRD_GROUP,
                "v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                false,
            )
            .with_status(),
        ];
        Self { kinds }
    }

    /// Every served kind.
    pub(crate) fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// The kind served at `group/version` as `plural`.
    pub(crate) fn by_plural(&self, group: &str, version: &str, plural: &str) -> Option<&Kind> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.plural == plural)
    }

    /// The kind `kind` of `apiVersion`.
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<&Kind> {
        let (group, version) = split_api_version(api_version);
        self.kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
    }

    /// Whether anything is served at `group/version`.
    pub(crate) fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.kinds
            .iter()
            .any(|k| k.group == group && k.version == version)
    }

    /// Registers (or re-registers) every served version of `crd`.
    pub(crate) fn register_crd(&mut self, crd: &Value) -> Result<(), Error> {
        let kinds = crd_kinds(crd)?;
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        self.kinds
            .retain(|k| !(k.custom && k.group == group && k.plural == plural));
        self.kinds.extend(kinds);
        Ok(())
    }

    /// Forgets the kinds of a deleted CRD.
    pub(crate) fn unregister_crd(&mut self, crd: &Value) {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        self.kinds
            .retain(|k| !(k.custom && k.group == group && k.plural == plural));
    }
}

/// `("group", "version")` of an `apiVersion` (`v1` is the core group).
pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The kinds a CustomResourceDefinition serves.
pub(crate) fn crd_kinds(crd: &Value) -> Result<Vec<Kind>, Error> {
    let name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let missing = |what: &str| Error::Crd {
        name: name.clone(),
        what: format!("{what} is missing"),
    };
    let spec = &crd["spec"];
    let group = spec["group"]
        .as_str()
        .ok_or_else(|| missing("spec.group"))?;
    let names = &spec["names"];
    let kind = names["kind"]
        .as_str()
        .ok_or_else(|| missing("spec.names.kind"))?;
    let plural = names["plural"]
        .as_str()
        .ok_or_else(|| missing("spec.names.plural"))?;
    let list_kind = names["listKind"]
        .as_str()
        .map_or_else(|| format!("{kind}List"), str::to_owned);
    let namespaced = match spec["scope"].as_str() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        _ => return Err(missing("spec.scope (Namespaced or Cluster)")),
    };
    let versions = spec["versions"]
        .as_array()
        .ok_or_else(|| missing("spec.versions"))?;
    let mut kinds = Vec::new();
    for version in versions {
        if version["served"] != Value::Bool(true) {
            continue;
        }
        let version_name = version["name"]
            .as_str()
            .ok_or_else(|| missing("spec.versions[].name"))?;
        let schema = version["schema"]["openAPIV3Schema"].clone();
        kinds.push(Kind {
            group: group.to_owned(),
            version: version_name.to_owned(),
            kind: kind.to_owned(),
            list_kind: list_kind.clone(),
            plural: plural.to_owned(),
            namespaced,
            status: version["subresources"]["status"].is_object(),
            custom: true,
            schema: (!schema.is_null()).then(|| Arc::new(schema)),
        });
    }
    Ok(kinds)
}
