//! What the controller writes to the API server for its planes: the
//! controller's CA, each plane's Secrets (a config API token it generates unless
//! the GatewayConfig names one, the config API's serving certificate, renewed
//! before it ends), the rendered objects by server-side apply under
//! [`FIELD_MANAGER`] (forced, so a hand edit of a field Culvert sets is healed on
//! the next reconcile), and the removal of rendered objects no plane wants any more.
//!
//! A shared plane's Secrets hold a copy of its class tunnel's token too, since
//! the operator may keep the original in any namespace.
//!
//! Removal touches only objects labelled as rendered by Culvert
//! (`app.kubernetes.io/managed-by: culvert-controller`) that still carry a
//! controller owner reference to a Gateway (or, for a shared plane, a
//! GatewayClass): an object someone took over (by
//! stripping the reference) is left alone. Secrets are never deleted; the
//! generated token outlives a plane until its Gateway is deleted, as garbage
//! collection then removes it with its owner.

use std::collections::{BTreeMap, BTreeSet};

use aws_lc_rs::digest;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use culvert_control_lite::model::{SecretKeyReference, TOKEN_KEY};
use culvert_control_lite::store::NamespacedName;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::credentials::{Authority, CredentialError};
use crate::planes::DesiredPlane;
use crate::render::{MANAGED_BY, OwnerKind, PlaneNames, PlaneSecrets, SecretKey, label};

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "culvert-controller";
/// The Secret holding the controller's CA, in the controller's namespace.
pub const AUTHORITY_SECRET: &str = "culvert-controller-ca";
/// Annotation on a serving certificate Secret: Unix seconds after which it is
/// renewed.
pub const RENEW_AFTER_ANNOTATION: &str = "culvert.dev/renew-after";
/// Common name of the controller's CA.
const AUTHORITY_NAME: &str = "culvert-controller";
/// Keys of the CA Secret.
const CA_CERT_KEY: &str = "ca.crt";
const CA_KEY_KEY: &str = "ca.key";

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The API server refused or could not be reached.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// A credential could not be made.
    #[error(transparent)]
    Credential(#[from] CredentialError),
    /// A Secret the plane needs is missing or lacks its key.
    #[error("{0}")]
    MissingSecret(String),
    /// A rendered document has no usable `apiVersion`, `kind` or name.
    #[error("a rendered document is malformed: {0}")]
    Document(String),
}

fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> ClusterError {
    let what = what.into();
    move |source| ClusterError::Api { what, source }
}

/// The plane's Secrets as rendering names them, with the hash of what they hold
/// (SHA-256, 16 hex digits), and the config API token for the pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneCredentials {
    /// The Secrets and their hash.
    pub secrets: PlaneSecrets,
    /// The config API token itself, for the pushes.
    pub token_value: String,
}

/// The rendered objects to keep when pruning, by `(namespace, name)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keep {
    /// Deployments, NetworkPolicies and PodDisruptionBudgets.
    pub workloads: BTreeSet<NamespacedName>,
    /// Services: config Services, and the data Services of planes that have one.
    pub services: BTreeSet<NamespacedName>,
    /// HorizontalPodAutoscalers (a plane without autoscaling keeps none).
    pub autoscalers: BTreeSet<NamespacedName>,
}

/// Writes to one cluster.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
}

impl Cluster {
    /// Writes through `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// The controller's CA from Secret [`AUTHORITY_SECRET`] in `namespace`, made
    /// and stored on first use.
    pub async fn authority(&self, namespace: &str, now: u64) -> Result<Authority, ClusterError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        if let Some(authority) = self.stored_authority(&api).await? {
            return Ok(authority);
        }
        let authority = Authority::generate(AUTHORITY_NAME, now)?;
        let data = BTreeMap::from([
            (CA_CERT_KEY, &authority.certificate_pem),
            (CA_KEY_KEY, &authority.key_pem),
        ]);
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": AUTHORITY_SECRET, "namespace": namespace,
                         "labels": {label::MANAGED_BY: MANAGED_BY}},
            "type": "Opaque",
            "data": encoded(data),
        });
        let created: Secret =
            serde_json::from_value(secret).map_err(|e| ClusterError::Document(e.to_string()))?;
        match api.create(&PostParams::default(), &created).await {
            Ok(_) => Ok(authority),
            // Another controller (a leader before us) stored one meanwhile: use it.
            Err(kube::Error::Api(response)) if response.code == 409 => {
                self.stored_authority(&api).await?.ok_or_else(|| {
                    ClusterError::MissingSecret(format!(
                        "Secret {namespace}/{AUTHORITY_SECRET} exists without {CA_CERT_KEY} and {CA_KEY_KEY}"
                    ))
                })
            }
            Err(source) => Err(api_error("storing the controller CA")(source)),
        }
    }

    async fn stored_authority(&self, api: &Api<Secret>) -> Result<Option<Authority>, ClusterError> {
        let stored = api
            .get_opt(AUTHORITY_SECRET)
            .await
            .map_err(api_error("reading the controller CA"))?;
        let Some(secret) = stored else {
            return Ok(None);
        };
        let mut data = secret_data(&secret);
        Ok(match (data.remove(CA_CERT_KEY), data.remove(CA_KEY_KEY)) {
            (Some(certificate_pem), Some(key_pem)) => Some(Authority {
                common_name: AUTHORITY_NAME.to_owned(),
                certificate_pem,
                key_pem,
            }),
            _ => None,
        })
    }

    /// The plane's Secrets, made or renewed as needed.
    pub async fn credentials(
        &self,
        plane: &DesiredPlane,
        authority: &Authority,
        now: u64,
    ) -> Result<PlaneCredentials, ClusterError> {
        let namespace = &plane.gateway.namespace;
        let names = plane.gateway.names();
        let mut secrets = plane.secrets(String::new());
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let mut hashed = Vec::new();
        let token_value = match &plane.config.config_api_token_ref {
            Some(_) => {
                self.secret_value(&api, namespace, &secrets.config_token)
                    .await?
            }
            None => {
                self.generated_token(&api, plane, &names, &secrets.config_token)
                    .await?
            }
        };
        hashed.push(token_value.clone());
        let certificate = self
            .serving_certificate(&api, plane, &names, &secrets.config_tls, authority, now)
            .await?;
        hashed.push(certificate);
        match (&plane.class_tunnel, &secrets.tunnel_token) {
            (_, None) => {}
            (None, Some(key)) => hashed.push(self.secret_value(&api, namespace, key).await?),
            (Some(reference), Some(copy)) => hashed.push(
                self.class_tunnel_copy(plane, &names, reference, copy)
                    .await?,
            ),
        }
        let mut context = digest::Context::new(&digest::SHA256);
        for part in &hashed {
            context.update(&(part.len() as u64).to_be_bytes());
            context.update(part.as_bytes());
        }
        let content_hash = context
            .finish()
            .as_ref()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        secrets.content_hash = content_hash;
        Ok(PlaneCredentials {
            secrets,
            token_value,
        })
    }

    /// The value of key `key` of Secret `namespace/key.name`, which must exist and
    /// be non-empty text.
    pub async fn read_secret(
        &self,
        namespace: &str,
        key: &SecretKey,
    ) -> Result<String, ClusterError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        self.secret_value(&api, namespace, key).await
    }

    async fn secret_value(
        &self,
        api: &Api<Secret>,
        namespace: &str,
        key: &SecretKey,
    ) -> Result<String, ClusterError> {
        let secret = api
            .get_opt(&key.name)
            .await
            .map_err(api_error(format!(
                "reading Secret {namespace}/{}",
                key.name
            )))?
            .ok_or_else(|| {
                ClusterError::MissingSecret(format!("Secret {namespace}/{} not found", key.name))
            })?;
        secret_data(&secret)
            .remove(&key.key)
            .filter(|value| !value.is_empty())
            .ok_or_else(|| {
                ClusterError::MissingSecret(format!(
                    "Secret {namespace}/{} has no {:?}",
                    key.name, key.key
                ))
            })
    }

    /// A shared plane's copy of its class's tunnel token, in the plane's namespace
    /// (a pod mounts Secrets of its own namespace only): Secret
    /// `culvert-class-<class>-tunnel`, owned by the GatewayClass, rewritten when
    /// the operator's token changes.
    async fn class_tunnel_copy(
        &self,
        plane: &DesiredPlane,
        names: &PlaneNames,
        reference: &SecretKeyReference,
        copy: &SecretKey,
    ) -> Result<String, ClusterError> {
        let source: Api<Secret> = Api::namespaced(self.client.clone(), &reference.namespace);
        let original = SecretKey {
            name: reference.name.clone(),
            key: reference
                .key
                .clone()
                .unwrap_or_else(|| TOKEN_KEY.to_owned()),
        };
        let value = self
            .secret_value(&source, &reference.namespace, &original)
            .await?;
        let secret = owned_secret(
            plane,
            names,
            &copy.name,
            BTreeMap::from([(copy.key.as_str(), &value)]),
            None,
        );
        self.apply(&secret).await?;
        Ok(value)
    }

    /// The token Secret the controller generates for a plane: read when it
    /// exists, created (owned by the Gateway) when not, never rewritten.
    async fn generated_token(
        &self,
        api: &Api<Secret>,
        plane: &DesiredPlane,
        names: &PlaneNames,
        key: &SecretKey,
    ) -> Result<String, ClusterError> {
        let namespace = &plane.gateway.namespace;
        if let Some(secret) = api.get_opt(&key.name).await.map_err(api_error(format!(
            "reading Secret {namespace}/{}",
            key.name
        )))? {
            if let Some(value) = secret_data(&secret)
                .remove(TOKEN_KEY)
                .filter(|v| !v.is_empty())
            {
                return Ok(value);
            }
        }
        let value = crate::credentials::random_token()?;
        let secret = owned_secret(
            plane,
            names,
            &key.name,
            BTreeMap::from([(TOKEN_KEY, &value)]),
            None,
        );
        self.apply(&secret).await?;
        Ok(value)
    }

    /// The serving certificate Secret: kept while it is from `authority` and not
    /// due for renewal, issued anew otherwise. Returns the certificate PEM.
    async fn serving_certificate(
        &self,
        api: &Api<Secret>,
        plane: &DesiredPlane,
        names: &PlaneNames,
        secret_name: &str,
        authority: &Authority,
        now: u64,
    ) -> Result<String, ClusterError> {
        let namespace = &plane.gateway.namespace;
        if let Some(secret) = api.get_opt(secret_name).await.map_err(api_error(format!(
            "reading Secret {namespace}/{secret_name}"
        )))? {
            let renew_after = secret
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(RENEW_AFTER_ANNOTATION))
                .and_then(|v| v.parse::<u64>().ok());
            let mut data = secret_data(&secret);
            let current = renew_after.is_some_and(|at| now < at)
                && data.get(CA_CERT_KEY) == Some(&authority.certificate_pem);
            if let (true, Some(certificate)) = (current, data.remove("tls.crt")) {
                return Ok(certificate);
            }
        }
        let issued = authority.issue(&names.config_server_name(namespace), now)?;
        let data = BTreeMap::from([
            ("tls.crt", &issued.certificate_pem),
            ("tls.key", &issued.key_pem),
            (CA_CERT_KEY, &authority.certificate_pem),
        ]);
        let renew_after = issued.renew_after.to_string();
        let secret = owned_secret(plane, names, secret_name, data, Some(&renew_after));
        self.apply(&secret).await?;
        Ok(issued.certificate_pem)
    }

    /// Server-side applies `document` (forced) under [`FIELD_MANAGER`].
    pub async fn apply(&self, document: &Value) -> Result<(), ClusterError> {
        let (api, name) = self.api_for(document)?;
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(document),
        )
        .await
        .map_err(api_error(format!("applying {}", describe(document))))?;
        Ok(())
    }

    fn api_for(&self, document: &Value) -> Result<(Api<DynamicObject>, String), ClusterError> {
        let text = |field: &Value| field.as_str().map(str::to_owned);
        let (Some(api_version), Some(kind), Some(name)) = (
            text(&document["apiVersion"]),
            text(&document["kind"]),
            text(&document["metadata"]["name"]),
        ) else {
            return Err(ClusterError::Document(describe(document)));
        };
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, &kind));
        let api = match document["metadata"]["namespace"].as_str() {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        Ok((api, name))
    }

    /// Deletes rendered objects of every kind rendering makes that `keep` does
    /// not name. Returns how many were deleted.
    pub async fn prune(&self, keep: &Keep) -> Result<usize, ClusterError> {
        let kinds: [(&str, &str, &str, &BTreeSet<NamespacedName>); 5] = [
            ("apps", "v1", "Deployment", &keep.workloads),
            ("", "v1", "Service", &keep.services),
            ("networking.k8s.io", "v1", "NetworkPolicy", &keep.workloads),
            ("policy", "v1", "PodDisruptionBudget", &keep.workloads),
            (
                "autoscaling",
                "v2",
                "HorizontalPodAutoscaler",
                &keep.autoscalers,
            ),
        ];
        let selector = format!("{}={MANAGED_BY}", label::MANAGED_BY);
        let mut deleted = 0;
        for (group, version, kind, keep) in kinds {
            let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
            let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            let listed = all
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(api_error(format!("listing {kind}s")))?;
            for object in listed.items {
                let namespace = object.metadata.namespace.clone().unwrap_or_default();
                let name = object.metadata.name.clone().unwrap_or_default();
                let owned_by_gateway = object.metadata.owner_references.iter().flatten().any(|o| {
                    (o.kind == OwnerKind::Gateway.as_str()
                        || o.kind == OwnerKind::GatewayClass.as_str())
                        && o.controller == Some(true)
                });
                if !owned_by_gateway || keep.contains(&(namespace.clone(), name.clone())) {
                    continue;
                }
                let api: Api<DynamicObject> =
                    Api::namespaced_with(self.client.clone(), &namespace, &resource);
                match api.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => deleted += 1,
                    Err(kube::Error::Api(response)) if response.code == 404 => {}
                    Err(source) => {
                        return Err(api_error(format!("deleting {kind} {namespace}/{name}"))(
                            source,
                        ));
                    }
                }
            }
        }
        Ok(deleted)
    }
}

/// A Secret of the plane, owned by its Gateway (or GatewayClass) and labelled as
/// Culvert's.
fn owned_secret(
    plane: &DesiredPlane,
    names: &PlaneNames,
    name: &str,
    data: BTreeMap<&str, &String>,
    renew_after: Option<&str>,
) -> Value {
    let mut secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": plane.gateway.namespace,
            "labels": {
                label::MANAGED_BY: MANAGED_BY,
                label::INSTANCE: names.instance_label,
            },
            "ownerReferences": [{
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": plane.gateway.owner.as_str(),
                "name": plane.gateway.name,
                "uid": plane.gateway.uid,
            }],
        },
        "type": "Opaque",
        "data": encoded(data),
    });
    if let Some(at) = renew_after {
        secret["metadata"]["annotations"] = json!({RENEW_AFTER_ANNOTATION: at});
    }
    secret
}

/// Secret `data`: each value base64.
fn encoded(data: BTreeMap<&str, &String>) -> Value {
    data.into_iter()
        .map(|(key, value)| (key.to_owned(), json!(BASE64.encode(value))))
        .collect::<serde_json::Map<String, Value>>()
        .into()
}

/// A Secret's values as text (values that are not UTF-8 are left out).
fn secret_data(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .iter()
        .flatten()
        .filter_map(|(key, value)| Some((key.clone(), String::from_utf8(value.0.clone()).ok()?)))
        .collect()
}

fn describe(document: &Value) -> String {
    format!(
        "{} {}/{}",
        document["kind"].as_str().unwrap_or("?"),
        document["metadata"]["namespace"].as_str().unwrap_or(""),
        document["metadata"]["name"].as_str().unwrap_or("?")
    )
}
