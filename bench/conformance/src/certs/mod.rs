//! Certificates the conformance vectors only describe. Upstream's suite generates TLS
//! Secrets and CA-bundle ConfigMaps at start-up; the vectors carry them with empty
//! `data` and an [`ANNOTATION`] saying what to generate. [`fill_generated`] reads those
//! annotations and fills `data` in place, as Kubernetes stores it: Secret values base64
//! (`tls.crt`, `tls.key`, PEM inside), ConfigMap values plain PEM (`ca.crt`).
//!
//! Named CAs ("A", "B", "C", ...) are independent and live in a [`CaSet`], created on
//! first use, so a certificate "signed by CA X" and the ConfigMap bundle of CA X agree
//! within a file (and across calls that share the set, such as a file's steps).
//! Annotation text this module does not understand is an error, never a guess.
//!
//! Keys are ECDSA P-256 made by rcgen on the aws-lc-rs provider; certificates are
//! valid from 1975 to 4096, so no clock is read. Start at [`fill_generated`].

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;

/// The annotation that marks an object for generation; its value says what to make.
pub const ANNOTATION: &str = "conformance-vectors/generate";

/// Secret key of the certificate chain (PEM).
pub const TLS_CRT: &str = "tls.crt";
/// Secret key of the private key (PEM, PKCS#8).
pub const TLS_KEY: &str = "tls.key";
/// Key of a CA bundle unless the annotation names another (`(key ...)`).
pub const CA_CRT: &str = "ca.crt";

/// Why generated data could not be filled in.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An annotated object has no usable `kind` or `metadata.name`, or its annotation
    /// is not a string.
    #[error("resource {index}: {reason}")]
    Malformed {
        /// Position of the object in the slice.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The annotation text is not one this module knows how to honour.
    #[error("{object}: cannot generate from {ANNOTATION} annotation {text:?}: {reason}")]
    Annotation {
        /// The object, as `Kind namespace/name`.
        object: String,
        /// The annotation text.
        text: String,
        /// What did not parse.
        reason: String,
    },
    /// The annotation asks for something this kind of object cannot hold.
    #[error("{object}: a {kind} cannot hold {what}")]
    WrongKind {
        /// The object, as `Kind namespace/name`.
        object: String,
        /// Its kind.
        kind: String,
        /// What was asked for.
        what: &'static str,
    },
    /// Two annotations disagree about which CA signs what.
    #[error("{object}: {reason}")]
    Conflict {
        /// The object whose annotation cannot be honoured.
        object: String,
        /// The disagreement.
        reason: String,
    },
    /// rcgen refused to make a key or certificate.
    #[error("{object}: certificate generation failed: {source}")]
    Generate {
        /// The object, or the CA, being generated.
        object: String,
        /// rcgen's error.
        #[source]
        source: rcgen::Error,
    },
}

/// The CAs of one replay, created on first use and kept so that every certificate and
/// bundle that names the same CA agrees.
#[derive(Default)]
pub struct CaSet {
    cas: BTreeMap<CaKey, Ca>,
    /// CA held by each bundle ConfigMap seen so far, by `(namespace, name)`.
    bundles: BTreeMap<(String, String), CaKey>,
}

impl CaSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// PEM certificate of the named CA ("A", "B", ...), creating it if needed; for
    /// building a trust store outside the vectors.
    pub fn ca_pem(&mut self, name: &str) -> Result<String, Error> {
        Ok(self.ca(&CaKey::Named(name.to_owned()))?.pem.clone())
    }

    fn ca(&mut self, key: &CaKey) -> Result<&Ca, Error> {
        match self.cas.entry(key.clone()) {
            Entry::Occupied(entry) => Ok(entry.into_mut()),
            Entry::Vacant(entry) => {
                let ca = Ca::new(&key.to_string()).map_err(|source| Error::Generate {
                    object: key.to_string(),
                    source,
                })?;
                Ok(entry.insert(ca))
            }
        }
    }
}

impl fmt::Debug for CaSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaSet")
            .field(
                "cas",
                &self.cas.keys().map(ToString::to_string).collect::<Vec<_>>(),
            )
            .field("bundles", &self.bundles)
            .finish()
    }
}

/// Which CA: one named in annotations, or the anonymous one of a bundle ConfigMap that
/// names none.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum CaKey {
    Named(String),
    Bundle { namespace: String, name: String },
}

impl fmt::Display for CaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(name) => write!(f, "CA {name:?}"),
            Self::Bundle { namespace, name } => write!(f, "CA of ConfigMap {namespace}/{name}"),
        }
    }
}

struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pem: String,
}

impl Ca {
    fn new(label: &str) -> Result<Self, rcgen::Error> {
        let mut params = CertificateParams::default();
        params.distinguished_name = conformance_name(format!("Culvert conformance {label}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        let pem = issuer.pem();
        Ok(Self { issuer, pem })
    }
}

/// What an annotation asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Spec {
    /// The certificate of a CA, under `key`. `ca` names it; `signs` names the Secret
    /// its CA signs (checked for agreement).
    Bundle {
        key: String,
        ca: Option<String>,
        signs: Option<String>,
    },
    /// A key and certificate; self-signed when `signer` is `None`.
    Cert {
        usage: Usage,
        signer: Option<Signer>,
        names: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Usage {
    Server,
    Client,
}

/// Who signs: a named CA, the CA of a bundle ConfigMap (same namespace unless written
/// `ns/name`), or a named CA whose bundle is also named.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Signer {
    ca: Option<String>,
    config_map: Option<String>,
}

/// Parses annotation text. Grammar, clauses separated by `;`:
///
/// ```text
/// head    = "CA certificate bundle" ["(key " KEY ")"]
///         | "self-signed " [what " "] "certificate"
///         | [what " "] "certificate signed by " signer
/// what    = "TLS" | "TLS serving" | "serving" | "server" | "TLS server" | "client" | "TLS client"
/// signer  = "CA " QUOTED ["(ConfigMap " NAME ")"] | ["the "] "CA in ConfigMap " NAME
/// clause  = ("hosts=" | "SANs=") NAME ("," NAME)* ["(" remark ")"]
///         | "CA " QUOTED ["used to sign " SECRET]          (bundles only)
/// ```
fn parse(text: &str) -> Result<Spec, String> {
    let mut clauses = text.split(';').map(str::trim);
    let head = clauses.next().unwrap_or_default();
    let mut names: Option<Vec<String>> = None;
    let mut named_ca: Option<(String, Option<String>)> = None;
    for clause in clauses.filter(|c| !c.is_empty()) {
        if let Some(list) = clause
            .strip_prefix("hosts=")
            .or_else(|| clause.strip_prefix("SANs="))
        {
            if names.is_some() {
                return Err("host names are given twice".to_owned());
            }
            names = Some(parse_names(list)?);
        } else if let Some(rest) = clause.strip_prefix("CA ") {
            let (name, rest) = quoted(rest)?;
            let signs = match rest.trim() {
                "" => None,
                rest => match rest.strip_prefix("used to sign ").map(str::trim) {
                    Some(secret) if !secret.is_empty() && !secret.contains(char::is_whitespace) => {
                        Some(secret.to_owned())
                    }
                    _ => return Err(format!("unknown text after the CA name: {rest:?}")),
                },
            };
            named_ca = Some((name, signs));
        } else {
            return Err(format!("unknown clause {clause:?}"));
        }
    }

    if let Some(rest) = head.strip_prefix("CA certificate bundle") {
        let key = match rest.trim() {
            "" => CA_CRT.to_owned(),
            rest => match rest
                .strip_prefix("(key ")
                .and_then(|r| r.strip_suffix(')'))
                .map(str::trim)
            {
                Some(key) if !key.is_empty() && !key.contains(char::is_whitespace) => {
                    key.to_owned()
                }
                _ => {
                    return Err(format!(
                        "unknown text after \"CA certificate bundle\": {rest:?}"
                    ));
                }
            },
        };
        if names.is_some() {
            return Err("a CA bundle takes no host names".to_owned());
        }
        let (ca, signs) = named_ca.map_or((None, None), |(ca, signs)| (Some(ca), signs));
        return Ok(Spec::Bundle { key, ca, signs });
    }
    if named_ca.is_some() {
        return Err("a `CA \"...\"` clause belongs to a CA certificate bundle".to_owned());
    }
    let (usage, signer) = if let Some(what) = head
        .strip_prefix("self-signed")
        .and_then(|rest| rest.trim_start().strip_suffix("certificate"))
    {
        (usage(what.trim())?, None)
    } else if let Some((what, signer)) = head.split_once("certificate signed by ") {
        (usage(what.trim())?, Some(parse_signer(signer.trim())?))
    } else {
        return Err(format!("unknown description {head:?}"));
    };
    let names = names.unwrap_or_default();
    if usage == Usage::Server && names.is_empty() {
        return Err("a serving certificate needs hosts= or SANs=".to_owned());
    }
    Ok(Spec::Cert {
        usage,
        signer,
        names,
    })
}

fn usage(what: &str) -> Result<Usage, String> {
    match what {
        "" | "TLS" | "TLS serving" | "serving" | "server" | "TLS server" => Ok(Usage::Server),
        "client" | "TLS client" => Ok(Usage::Client),
        other => Err(format!("unknown certificate purpose {other:?}")),
    }
}

fn parse_signer(text: &str) -> Result<Signer, String> {
    let config_map_name = |name: &str| {
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            Err(format!("bad ConfigMap name {name:?}"))
        } else {
            Ok(name.to_owned())
        }
    };
    if let Some(name) = text
        .strip_prefix("the CA in ConfigMap ")
        .or_else(|| text.strip_prefix("CA in ConfigMap "))
    {
        return Ok(Signer {
            ca: None,
            config_map: Some(config_map_name(name)?),
        });
    }
    let Some(rest) = text.strip_prefix("CA ") else {
        return Err(format!("unknown signer {text:?}"));
    };
    let (ca, rest) = quoted(rest)?;
    let config_map = match rest.trim() {
        "" => None,
        rest => match rest
            .strip_prefix("(ConfigMap ")
            .and_then(|r| r.strip_suffix(')'))
        {
            Some(name) => Some(config_map_name(name)?),
            None => return Err(format!("unknown text after the CA name: {rest:?}")),
        },
    };
    Ok(Signer {
        ca: Some(ca),
        config_map,
    })
}

/// `"NAME" rest` into `(NAME, rest)`.
fn quoted(text: &str) -> Result<(String, &str), String> {
    let inner = text
        .trim_start()
        .strip_prefix('"')
        .ok_or_else(|| format!("expected a quoted CA name in {text:?}"))?;
    let (name, rest) = inner
        .split_once('"')
        .ok_or_else(|| format!("unterminated CA name in {text:?}"))?;
    if name.is_empty() {
        return Err("empty CA name".to_owned());
    }
    Ok((name.to_owned(), rest))
}

/// `a,b,c (remark)` into names; the parenthesised remark is ignored.
fn parse_names(list: &str) -> Result<Vec<String>, String> {
    let list = list.split_once('(').map_or(list, |(names, _remark)| names);
    list.split(',')
        .map(str::trim)
        .map(|name| {
            if name.is_empty() || name.contains(char::is_whitespace) {
                Err(format!("bad host name {name:?} in {list:?}"))
            } else {
                Ok(name.to_owned())
            }
        })
        .collect()
}

/// An annotated object, by position, with what to make for it.
struct Plan {
    index: usize,
    kind: String,
    namespace: String,
    name: String,
    text: String,
    spec: Spec,
    /// Keys the object's `data` lists before filling.
    declared: Vec<String>,
}

impl Plan {
    /// The CA a bundle holds: the one it names, or an anonymous one of its own.
    fn bundle_ca(&self) -> CaKey {
        match &self.spec {
            Spec::Bundle { ca: Some(ca), .. } => CaKey::Named(ca.clone()),
            _ => CaKey::Bundle {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
            },
        }
    }

    fn object(&self) -> String {
        object_name(&self.kind, &self.namespace, &self.name)
    }
}

/// `Kind namespace/name`, or `Kind name` without a namespace.
fn object_name(kind: &str, namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    }
}

/// Fills the `data` of every Secret and ConfigMap in `resources` that carries
/// [`ANNOTATION`], generating keys and certificates with the CAs of `cas`.
///
/// * Secrets get [`TLS_CRT`] and [`TLS_KEY`] (base64 of PEM), plus [`CA_CRT`] with the
///   issuer's certificate when their `data` already lists that key. A CA bundle asked
///   of a Secret goes under its key, base64 too.
/// * ConfigMaps get the CA certificate as plain PEM under the annotation's key
///   (`ca.crt` by default); they cannot hold a private key.
///
/// Objects without the annotation are left alone. Every annotation is checked before
/// anything is generated, so on error nothing has been filled.
pub fn fill_generated(resources: &mut [Value], cas: &mut CaSet) -> Result<(), Error> {
    let plans = plan(resources)?;
    for plan in &plans {
        if matches!(plan.spec, Spec::Bundle { .. }) && plan.kind == "ConfigMap" {
            cas.bundles.insert(
                (plan.namespace.clone(), plan.name.clone()),
                plan.bundle_ca(),
            );
        }
    }
    let signers = plans
        .iter()
        .map(|plan| signer_key(plan, cas))
        .collect::<Result<Vec<_>, _>>()?;
    check_bundle_claims(&plans, &signers)?;
    for (plan, signer) in plans.iter().zip(&signers) {
        let data = generate(plan, signer.as_ref(), cas)?;
        if let Some(object) = resources.get_mut(plan.index).and_then(Value::as_object_mut) {
            let slot = object
                .entry("data")
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let Some(map) = slot.as_object_mut() {
                for (key, value) in data {
                    map.insert(key, Value::String(value));
                }
            }
        }
    }
    Ok(())
}

fn plan(resources: &[Value]) -> Result<Vec<Plan>, Error> {
    let mut plans = Vec::new();
    for (index, resource) in resources.iter().enumerate() {
        let Some(annotation) = resource
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(ANNOTATION))
        else {
            continue;
        };
        let text = annotation.as_str().ok_or(Error::Malformed {
            index,
            reason: "annotation is not a string",
        })?;
        let field = |path: &[&str]| {
            path.iter()
                .try_fold(resource, |v, key| v.get(key))
                .and_then(Value::as_str)
        };
        let kind = field(&["kind"]).ok_or(Error::Malformed {
            index,
            reason: "annotated object has no kind",
        })?;
        let name = field(&["metadata", "name"]).ok_or(Error::Malformed {
            index,
            reason: "annotated object has no name",
        })?;
        let namespace = field(&["metadata", "namespace"]).unwrap_or_default();
        let spec = parse(text).map_err(|reason| Error::Annotation {
            object: object_name(kind, namespace, name),
            text: text.to_owned(),
            reason,
        })?;
        let plan = Plan {
            index,
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            text: text.to_owned(),
            spec,
            declared: resource
                .get("data")
                .and_then(Value::as_object)
                .map(|data| data.keys().cloned().collect())
                .unwrap_or_default(),
        };
        let what = match (&plan.spec, kind) {
            (_, "Secret") | (Spec::Bundle { .. }, "ConfigMap") => None,
            (Spec::Cert { .. }, "ConfigMap") => Some("a private key"),
            (Spec::Bundle { .. }, _) => Some("a CA bundle"),
            (Spec::Cert { .. }, _) => Some("a certificate"),
        };
        if let Some(what) = what {
            return Err(Error::WrongKind {
                object: plan.object(),
                kind: plan.kind,
                what,
            });
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// The CA that signs `plan`'s certificate; `None` for bundles and self-signed ones.
fn signer_key(plan: &Plan, cas: &CaSet) -> Result<Option<CaKey>, Error> {
    let Spec::Cert {
        signer: Some(signer),
        ..
    } = &plan.spec
    else {
        return Ok(None);
    };
    let bundle = signer
        .config_map
        .as_ref()
        .map(|config_map| match config_map.split_once('/') {
            Some((namespace, name)) => (namespace.to_owned(), name.to_owned()),
            None => (plan.namespace.clone(), config_map.clone()),
        });
    let held = bundle.as_ref().and_then(|bundle| cas.bundles.get(bundle));
    match (&signer.ca, held, &bundle) {
        (Some(ca), Some(held), Some((namespace, name))) if *held != CaKey::Named(ca.clone()) => {
            Err(Error::Conflict {
                object: plan.object(),
                reason: format!(
                    "signed by CA {ca:?}, but ConfigMap {namespace}/{name} holds the {held}"
                ),
            })
        }
        (Some(ca), _, _) => Ok(Some(CaKey::Named(ca.clone()))),
        (None, Some(held), _) => Ok(Some(held.clone())),
        // A bundle not seen (yet): its own anonymous CA, which the bundle will share
        // if it is filled later with the same set.
        (None, None, Some((namespace, name))) => Ok(Some(CaKey::Bundle {
            namespace: namespace.clone(),
            name: name.clone(),
        })),
        (None, None, None) => Ok(None),
    }
}

/// A bundle that says `CA "X" used to sign S` must agree with how S is signed.
fn check_bundle_claims(plans: &[Plan], signers: &[Option<CaKey>]) -> Result<(), Error> {
    for plan in plans {
        let Spec::Bundle {
            signs: Some(secret),
            ..
        } = &plan.spec
        else {
            continue;
        };
        let held = plan.bundle_ca();
        let signed = plans.iter().zip(signers).find(|(p, _)| {
            p.kind == "Secret" && p.namespace == plan.namespace && p.name == *secret
        });
        let Some((secret_plan, signer)) = signed else {
            continue;
        };
        if signer.as_ref() != Some(&held) {
            return Err(Error::Conflict {
                object: plan.object(),
                reason: format!(
                    "says its {held} signs {}, but that Secret's annotation is {:?}",
                    secret_plan.object(),
                    secret_plan.text
                ),
            });
        }
    }
    Ok(())
}

/// The `data` entries for one plan.
fn generate(
    plan: &Plan,
    signer: Option<&CaKey>,
    cas: &mut CaSet,
) -> Result<Vec<(String, String)>, Error> {
    let secret = plan.kind == "Secret";
    let encode = |pem: &str| {
        if secret {
            BASE64.encode(pem)
        } else {
            pem.to_owned()
        }
    };
    match &plan.spec {
        Spec::Bundle { key, .. } => {
            let pem = cas.ca(&plan.bundle_ca())?.pem.clone();
            Ok(vec![(key.clone(), encode(&pem))])
        }
        Spec::Cert { usage, names, .. } => {
            let generate_err = |source| Error::Generate {
                object: plan.object(),
                source,
            };
            let params =
                leaf_params(&plan.name, *usage, names, signer.is_some()).map_err(generate_err)?;
            let key = KeyPair::generate().map_err(generate_err)?;
            let (cert_pem, issuer_pem) = match signer {
                Some(ca_key) => {
                    let ca = cas.ca(ca_key)?;
                    let cert = params.signed_by(&key, &*ca.issuer).map_err(generate_err)?;
                    (cert.pem(), ca.pem.clone())
                }
                None => {
                    let pem = params.self_signed(&key).map_err(generate_err)?.pem();
                    (pem.clone(), pem)
                }
            };
            let mut data = vec![
                (TLS_CRT.to_owned(), encode(&cert_pem)),
                (TLS_KEY.to_owned(), encode(&key.serialize_pem())),
            ];
            if secret && plan.declared.iter().any(|key| key == CA_CRT) {
                data.push((CA_CRT.to_owned(), encode(&issuer_pem)));
            }
            Ok(data)
        }
    }
}

/// Parameters of a serving or client certificate. Names that parse as IP addresses
/// become IP SANs, the rest DNS SANs (`*` and wildcards included, as upstream writes
/// them).
fn leaf_params(
    common_name: &str,
    usage: Usage,
    names: &[String],
    signed: bool,
) -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::new(names.to_vec())?;
    params.distinguished_name = conformance_name(common_name);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![match usage {
        Usage::Server => ExtendedKeyUsagePurpose::ServerAuth,
        Usage::Client => ExtendedKeyUsagePurpose::ClientAuth,
    }];
    params.use_authority_key_identifier_extension = signed;
    Ok(params)
}

/// The subject every generated certificate carries: organization "Culvert
/// conformance" and the given common name.
fn conformance_name(common_name: impl Into<String>) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "Culvert conformance");
    name.push(DnType::CommonName, common_name.into());
    name
}

#[cfg(test)]
mod tests;
