//! Turning a vector file's `resources` into the state a cluster would hold: TLS
//! material generated, address placeholders replaced, creation times and generations
//! set in apply order (as an API server would), and ready endpoints for every Service
//! the suite backs with echo pods. Also the address pool each Gateway draws from.

use super::certs::{CaSet, fill_generated};
use culvert_control_lite::model::{GatewayAddress, Resource};
use culvert_control_lite::store::NamespacedName;
use culvert_control_lite::translate::{AddressAssigner, AddressError};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

/// An address the harness can bind (replaces `PLACEHOLDER_USABLE_ADDRS`).
pub const USABLE_ADDRESS: &str = "127.0.10.1";
/// An address no Gateway may take (replaces `PLACEHOLDER_UNUSABLE_ADDRS`): outside
/// the loopback range the harness owns.
pub const UNUSABLE_ADDRESS: &str = "192.0.2.1";

/// Rewrites resources in place so they can be loaded: placeholders, generated
/// certificates, timestamps and generations, synthesized EndpointSlices.
///
/// `backed_by` maps Services (`namespace/name`) whose EndpointSlices a test fills
/// at run time to the Service whose pods it fills them with (a vector's
/// `backend` and `backendPods`): their empty IPv4 slices get one such pod.
pub fn prepare(
    resources: &mut Vec<Value>,
    cas: &mut CaSet,
    clock: &mut Clock,
    backed_by: &BTreeMap<String, String>,
) -> Result<(), String> {
    for resource in resources.iter_mut() {
        replace_placeholders(resource);
    }
    add_suite_objects(resources);
    fill_generated(resources, cas).map_err(|e| e.to_string())?;
    for resource in resources.iter_mut() {
        clock.stamp(resource, None);
    }
    let synthesized = synthesize_endpoints(resources);
    resources.extend(synthesized);
    back_with_pods(resources, backed_by);
    Ok(())
}

/// The TLS objects upstream's suite creates at start-up for every test, as
/// `(kind, name, generate annotation)` in `gateway-conformance-infra`. A file
/// that names one without carrying it (a Deployment mounting it, a policy or a
/// certificate annotation referring to it) gets it, as the suite's cluster would
/// have it.
const SUITE_OBJECTS: &[(&str, &str, &str)] = &[
    (
        "ConfigMap",
        "tls-checks-ca-certificate",
        "CA certificate bundle (key ca.crt); CA \"C\"",
    ),
    (
        "Secret",
        "tls-checks-certificate",
        "TLS serving certificate signed by CA \"C\" (ConfigMap tls-checks-ca-certificate); \
         SANs=abc.example.com,other.example.com",
    ),
];

/// Adds the [`SUITE_OBJECTS`] that `resources` refer to and do not carry.
fn add_suite_objects(resources: &mut Vec<Value>) {
    const NAMESPACE: &str = "gateway-conformance-infra";
    let text = Value::Array(resources.clone()).to_string();
    for &(kind, name, annotation) in SUITE_OBJECTS {
        let carried = resources.iter().any(|r| {
            r["kind"] == kind
                && r["metadata"]["name"] == name
                && r["metadata"]["namespace"] == NAMESPACE
        });
        if carried || !text.contains(&format!("\"{name}\"")) && !text.contains(&format!(" {name})"))
        {
            continue;
        }
        let data = match kind {
            "Secret" => json!({"tls.crt": "", "tls.key": ""}),
            _ => json!({"ca.crt": ""}),
        };
        let mut object = json!({
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "annotations": {"conformance-vectors/generate": annotation},
            },
            "data": data,
        });
        if kind == "Secret" {
            object["type"] = json!("kubernetes.io/tls");
        }
        resources.push(object);
    }
}

/// Replaces the address placeholders anywhere in `value` (resources and expected
/// values alike).
pub fn replace_placeholders(value: &mut Value) {
    match value {
        Value::String(text) if text == "PLACEHOLDER_USABLE_ADDRS" => {
            *text = USABLE_ADDRESS.to_owned()
        }
        Value::String(text) if text == "PLACEHOLDER_UNUSABLE_ADDRS" => {
            *text = UNUSABLE_ADDRESS.to_owned()
        }
        Value::Array(items) => items.iter_mut().for_each(replace_placeholders),
        Value::Object(map) => map.values_mut().for_each(replace_placeholders),
        _ => {}
    }
}

/// Hands out creation timestamps one second apart, as objects are applied.
#[derive(Debug, Default)]
pub struct Clock {
    seconds: u64,
}

impl Clock {
    /// Sets `creationTimestamp` (if absent) and `generation`: 1 for a new object, the
    /// previous generation plus one for a replaced one (`previous`).
    pub fn stamp(&mut self, resource: &mut Value, previous: Option<&Value>) {
        let old_meta = previous.and_then(|p| p.get("metadata"));
        let spec_changed = previous.is_some_and(|p| p.get("spec") != resource.get("spec"));
        let created = match old_meta.and_then(|m| m.get("creationTimestamp")) {
            Some(created) => created.clone(),
            None => {
                self.seconds += 1;
                let (hours, minutes, seconds) = (
                    self.seconds / 3600,
                    self.seconds / 60 % 60,
                    self.seconds % 60,
                );
                json!(format!("2026-01-01T{hours:02}:{minutes:02}:{seconds:02}Z"))
            }
        };
        let generation = match old_meta
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
        {
            Some(old) if spec_changed => old + 1,
            Some(old) => old,
            None => 1,
        };
        let Some(metadata) = resource.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        metadata.entry("creationTimestamp").or_insert(created);
        metadata.entry("generation").or_insert(json!(generation));
    }
}

/// The address of synthesized endpoint number `index`: unique, and mapped back to
/// its Service by [`EndpointOwners`].
fn endpoint_ip(index: usize) -> IpAddr {
    let index = u32::try_from(index).unwrap_or(u32::MAX);
    IpAddr::V4(Ipv4Addr::from(0x0A00_0000 | (index << 4)))
}

/// A ready endpoint at `ip` standing for pod `namespace/pod`.
fn pod_endpoint(ip: IpAddr, namespace: &str, pod: &str) -> Value {
    json!({
        "addresses": [ip.to_string()],
        "conditions": {"ready": true},
        "targetRef": {"kind": "Pod", "namespace": namespace, "name": pod}
    })
}

fn services(resources: &[Value]) -> impl Iterator<Item = &Value> {
    resources
        .iter()
        .filter(|r| r["kind"] == "Service" && r["apiVersion"] == "v1")
}

/// The name of the pod that stands for Service `service`'s pods: the Service's name
/// and a suffix, as a Deployment names its pods (what `backendPods` is judged by).
fn pod_name(service: &str) -> String {
    format!("{service}-0")
}

/// The namespace and name of the Service an EndpointSlice belongs to (its
/// `kubernetes.io/service-name` label), if it names one.
fn slice_service(slice: &Value) -> Option<(&str, &str)> {
    let namespace = slice["metadata"]["namespace"].as_str().unwrap_or("default");
    let service = slice["metadata"]["labels"]["kubernetes.io/service-name"].as_str()?;
    Some((namespace, service))
}

/// The namespace and name of a Service.
fn service_key(service: &Value) -> (&str, &str) {
    let namespace = service["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    (
        namespace,
        service["metadata"]["name"].as_str().unwrap_or_default(),
    )
}

/// EndpointSlices for every Service with a selector and no slice of its own: the
/// suite backs those with echo pods. One ready endpoint per Service, with an address
/// of its own, standing for a pod named after the first Service with the same
/// selector (Services that select alike share their pods, as a headless Service
/// shares a Deployment's).
fn synthesize_endpoints(resources: &[Value]) -> Vec<Value> {
    let with_slices: BTreeSet<(String, String)> = resources
        .iter()
        .filter(|r| r["kind"] == "EndpointSlice")
        .filter_map(slice_service)
        .map(|(namespace, service)| (namespace.to_owned(), service.to_owned()))
        .collect();
    let mut pods: BTreeMap<(&str, String), String> = BTreeMap::new();
    let mut out = Vec::new();
    for (index, service) in services(resources).enumerate() {
        let (namespace, name) = service_key(service);
        let selector = &service["spec"]["selector"];
        if selector.is_null() || with_slices.contains(&(namespace.to_owned(), name.to_owned())) {
            continue;
        }
        let pod = pods
            .entry((namespace, selector.to_string()))
            .or_insert_with(|| pod_name(name));
        let ports: Vec<Value> = service["spec"]["ports"]
            .as_array()
            .map(|ports| {
                ports
                    .iter()
                    .map(|p| {
                        let target = p["targetPort"].as_i64().or_else(|| p["port"].as_i64()).unwrap_or(80);
                        json!({"name": p["name"].as_str().unwrap_or(""), "port": target, "protocol": "TCP"})
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": format!("{name}-echo"),
                "namespace": namespace,
                "labels": {"kubernetes.io/service-name": name},
                "generation": 1
            },
            "addressType": "IPv4",
            "endpoints": [pod_endpoint(endpoint_ip(index), namespace, pod)],
            "ports": ports
        }));
    }
    out
}

/// Fills the empty IPv4 EndpointSlices of each Service in `backed_by` with one
/// endpoint, at an address of its own, standing for a pod of the Service it maps
/// to: what a test that patches slices with another Deployment's pods sets up.
fn back_with_pods(resources: &mut [Value], backed_by: &BTreeMap<String, String>) {
    let mut next_ip = services(resources).count();
    for (service, pods_of) in backed_by {
        let Some((pod_namespace, pod_service)) = pods_of.split_once('/') else {
            continue;
        };
        let pod = pod_name(pod_service);
        for slice in resources
            .iter_mut()
            .filter(|r| r["kind"] == "EndpointSlice")
        {
            let owned = slice_service(slice)
                .is_some_and(|(namespace, owner)| format!("{namespace}/{owner}") == *service);
            let ipv4 = slice["addressType"].as_str().is_none_or(|t| t == "IPv4");
            let empty = slice["endpoints"].as_array().is_none_or(Vec::is_empty);
            if !owned || !ipv4 || !empty {
                continue;
            }
            slice["endpoints"] = json!([pod_endpoint(endpoint_ip(next_ip), pod_namespace, &pod)]);
            next_ip += 1;
        }
    }
}

/// Which Service each endpoint address belongs to, and which pod it stands for, from
/// the loaded EndpointSlices: how the static replay names the backend and the pod a
/// request reached.
#[derive(Debug, Clone, Default)]
pub struct EndpointOwners {
    services: BTreeMap<IpAddr, String>,
    pods: BTreeMap<IpAddr, String>,
}

impl EndpointOwners {
    /// Indexes every slice in `resources`.
    pub fn from_resources(resources: &[Resource]) -> Self {
        let mut owners = Self::default();
        for resource in resources {
            if let Resource::EndpointSlice(slice) = resource {
                let Some(service) = slice.service_name() else {
                    continue;
                };
                let namespace = slice.metadata.namespace();
                let owner = format!("{namespace}/{service}");
                for endpoint in &slice.endpoints {
                    let pod = endpoint
                        .target_ref
                        .as_ref()
                        .filter(|target| target.kind.as_deref() == Some("Pod"))
                        .and_then(|target| {
                            let pod_namespace = target.namespace.as_deref().unwrap_or(namespace);
                            Some(format!("{pod_namespace}/{}", target.name.as_deref()?))
                        });
                    for address in &endpoint.addresses {
                        if let Ok(ip) = address.parse() {
                            owners.services.insert(ip, owner.clone());
                            if let Some(pod) = &pod {
                                owners.pods.insert(ip, pod.clone());
                            }
                        }
                    }
                }
            }
        }
        owners
    }

    /// The `namespace/service` owning an endpoint address.
    pub fn owner(&self, ip: IpAddr) -> Option<&str> {
        self.services.get(&ip).map(String::as_str)
    }

    /// The `namespace/pod` an endpoint address stands for, if its slice names one.
    pub fn pod(&self, ip: IpAddr) -> Option<&str> {
        self.pods.get(&ip).map(String::as_str)
    }
}

/// Gives each Gateway its own loopback address (`127.0.N.1`, by name order), as the
/// suite's "each Gateway has its own address" requires; a Gateway may request any
/// loopback IPv4 address, nothing else.
#[derive(Debug, Default)]
pub struct LoopbackAddresses {
    assigned: BTreeMap<NamespacedName, Ipv4Addr>,
}

impl LoopbackAddresses {
    /// Addresses for the Gateways among `resources`.
    pub fn new(resources: &[Resource]) -> Self {
        let mut assigned = BTreeMap::new();
        let mut next = 1u8;
        for resource in resources {
            if let Resource::Gateway(gateway) = resource {
                let key = (
                    gateway.metadata.namespace().to_owned(),
                    gateway.metadata.name.clone(),
                );
                assigned.entry(key).or_insert_with(|| {
                    next = next.wrapping_add(1);
                    Ipv4Addr::new(127, 0, next, 1)
                });
            }
        }
        Self { assigned }
    }
}

impl AddressAssigner for LoopbackAddresses {
    fn assign(
        &self,
        gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        let ip_address = |value: &str| GatewayAddress {
            kind: Some("IPAddress".to_owned()),
            value: Some(value.to_owned()),
        };
        let mut out = Vec::new();
        for address in requested {
            let kind = address.kind.as_deref().unwrap_or("IPAddress");
            if kind != "IPAddress" {
                return Err(AddressError::UnsupportedType(format!(
                    "address type {kind:?} is not supported"
                )));
            }
            match address.value.as_deref() {
                None => {}
                Some(value) => match value.parse::<Ipv4Addr>() {
                    Ok(ip) if ip.is_loopback() => out.push(ip_address(value)),
                    _ => {
                        return Err(AddressError::NotUsable(format!(
                            "address {value:?} cannot be used"
                        )));
                    }
                },
            }
        }
        if out.is_empty() {
            let ip = self
                .assigned
                .get(gateway)
                .copied()
                .unwrap_or(Ipv4Addr::new(127, 0, 1, 1));
            out.push(ip_address(&ip.to_string()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
