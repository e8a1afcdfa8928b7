//! Gateway `spec.tls.frontend`: the client certificate validation of each listener
//! that terminates TLS, from its port's `perPort` entry or else the `default`.
//!
//! Each CA reference must be a core `ConfigMap` (else `InvalidCACertificateKind`),
//! permitted by a ReferenceGrant when it is in another namespace (else
//! `RefNotPermitted`), and exist with PEM certificates under `ca.crt` (else
//! `InvalidCACertificateRef`). The certificates of the valid references are copied
//! inline into the data plane's config; a listener left with none is not accepted
//! (`NoValidCACertificate`), so it never serves without the validation it asked for.

use culvert_router::config::{ClientValidationConfig, ClientValidationMode};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::conditions::{Verdict, reason};
use super::references::{GatewayRefError, gateway_core_ref};
use crate::model::{FrontendValidation, Gateway, Listener, SecretObjectReference};
use crate::store::Store;

/// The key of a CA ConfigMap that holds the PEM bundle.
const CA_KEY: &str = "ca.crt";
/// The listener `tls.options` key that sends the verified client certificate's
/// identity to backends.
pub(crate) const FORWARD_OPTION: &str = "culvert.dev/forward-client-certificate";

/// A listener's client validation and what its status says about it.
#[derive(Default)]
pub(crate) struct ListenerValidation {
    /// What the data plane checks; `None` when nothing is asked for, or nothing
    /// valid is left (then `refused` says why).
    pub(crate) config: Option<ClientValidationConfig>,
    /// A reference that did not resolve: the listener's `ResolvedRefs` verdict.
    pub(crate) unresolved: Option<Verdict>,
    /// Why the listener cannot be accepted.
    pub(crate) refused: Option<Verdict>,
}

/// The validation `listener` (of `gateway`, on `port`) must do.
pub(crate) fn for_listener(
    gateway: &Gateway,
    listener: &Listener,
    port: u16,
    store: &Store,
) -> ListenerValidation {
    let Some(validation) = validation_for_port(gateway, port) else {
        return ListenerValidation::default();
    };
    let mode = match validation.mode.as_deref() {
        None | Some("AllowValidOnly") => ClientValidationMode::AllowValidOnly,
        Some("AllowInsecureFallback") => ClientValidationMode::AllowInsecureFallback,
        Some(other) => {
            return ListenerValidation {
                refused: Some(Verdict::no(
                    reason::UNSUPPORTED_VALUE,
                    format!("frontend validation mode {other:?} is not supported"),
                )),
                ..ListenerValidation::default()
            };
        }
    };
    let namespace = gateway.metadata.namespace();
    let (bundle, unresolved) = join_bundles(
        validation
            .ca_certificate_refs
            .iter()
            .map(|reference| ca_bundle(reference, namespace, store)),
    );
    if bundle.is_empty() {
        let unresolved = unresolved.unwrap_or_else(|| {
            Verdict::no(
                reason::INVALID_CA_CERTIFICATE_REF,
                "frontend validation names no CA certificate",
            )
        });
        let refused = Verdict::no(
            reason::NO_VALID_CA_CERTIFICATE,
            format!(
                "no valid CA certificate for client validation on port {port}: {}",
                unresolved.message
            ),
        );
        return ListenerValidation {
            config: None,
            unresolved: Some(unresolved),
            refused: Some(refused),
        };
    }
    // With some references resolved, the listener validates with those and says
    // which did not.
    ListenerValidation {
        config: Some(config(bundle, mode, listener)),
        unresolved,
        refused: None,
    }
}

/// The PEM bundles that resolved, joined one after the other, and the first
/// reference that did not.
pub(crate) fn join_bundles(
    reads: impl Iterator<Item = Result<String, Verdict>>,
) -> (String, Option<Verdict>) {
    let mut bundle = String::new();
    let mut unresolved = None;
    for read in reads {
        match read {
            Ok(pem) => {
                bundle.push_str(&pem);
                if !pem.ends_with('\n') {
                    bundle.push('\n');
                }
            }
            Err(problem) => {
                unresolved.get_or_insert(problem);
            }
        }
    }
    (bundle, unresolved)
}

/// Whether any port of `gateway` validates clients with `AllowInsecureFallback`
/// (the Gateway then carries `InsecureFrontendValidationMode`).
pub(crate) fn insecure_fallback(gateway: &Gateway) -> bool {
    let Some(frontend) = gateway
        .spec
        .tls
        .as_ref()
        .and_then(|tls| tls.frontend.as_ref())
    else {
        return false;
    };
    frontend
        .default
        .iter()
        .chain(frontend.per_port.iter().map(|port| &port.tls))
        .filter_map(|config| config.validation.as_ref())
        .any(|validation| validation.mode.as_deref() == Some("AllowInsecureFallback"))
}

fn config(
    ca_certificates_pem: String,
    mode: ClientValidationMode,
    listener: &Listener,
) -> ClientValidationConfig {
    let forward_identity = listener
        .tls
        .as_ref()
        .and_then(|tls| tls.options.get(FORWARD_OPTION))
        .is_some_and(|value| value == "true");
    ClientValidationConfig {
        ca_certificates_pem,
        mode,
        forward_identity,
    }
}

/// The validation settings of `port`: its `perPort` entry, else the default.
fn validation_for_port(gateway: &Gateway, port: u16) -> Option<&FrontendValidation> {
    let frontend = gateway.spec.tls.as_ref()?.frontend.as_ref()?;
    match frontend
        .per_port
        .iter()
        .find(|entry| entry.port == i64::from(port))
    {
        Some(entry) => entry.tls.validation.as_ref(),
        None => frontend.default.as_ref()?.validation.as_ref(),
    }
}

/// The PEM CA certificates of one reference, checked.
fn ca_bundle(
    reference: &SecretObjectReference,
    gateway_namespace: &str,
    store: &Store,
) -> Result<String, Verdict> {
    let namespace = match gateway_core_ref(store, gateway_namespace, reference, "ConfigMap") {
        Ok(namespace) => namespace,
        Err(GatewayRefError::Kind { group, kind }) => {
            return Err(Verdict::no(
                reason::INVALID_CA_CERTIFICATE_KIND,
                format!(
                    "caCertificateRef {group:?}/{kind} {:?} is not a core ConfigMap",
                    reference.name
                ),
            ));
        }
        Err(GatewayRefError::NotPermitted { namespace }) => {
            return Err(Verdict::no(
                reason::REF_NOT_PERMITTED,
                format!(
                    "no ReferenceGrant allows ConfigMap {namespace}/{}",
                    reference.name
                ),
            ));
        }
    };
    read_ca_bundle(store, namespace, &reference.name)
}

/// The PEM CA certificates under `ca.crt` of ConfigMap `namespace/name`, checked to
/// hold at least one certificate (else `InvalidCACertificateRef`).
pub(crate) fn read_ca_bundle(
    store: &Store,
    namespace: &str,
    name: &str,
) -> Result<String, Verdict> {
    let invalid = |why: String| Verdict::no(reason::INVALID_CA_CERTIFICATE_REF, why);
    let config_map = store
        .config_maps
        .get(&(namespace.to_owned(), name.to_owned()))
        .ok_or_else(|| invalid(format!("ConfigMap {namespace}/{} not found", name)))?;
    let pem = config_map
        .data
        .get(CA_KEY)
        .ok_or_else(|| invalid(format!("ConfigMap {namespace}/{} has no {CA_KEY}", name)))?;
    let certificates = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            invalid(format!(
                "ConfigMap {namespace}/{} {CA_KEY} is not PEM: {error}",
                name
            ))
        })?;
    if certificates.is_empty() {
        return Err(invalid(format!(
            "ConfigMap {namespace}/{} {CA_KEY} holds no certificate",
            name
        )));
    }
    Ok(pem.clone())
}
