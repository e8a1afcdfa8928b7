//! `culvert install`: print the Kubernetes manifests that install Culvert, for
//! `kubectl apply -f -` (as `linkerd install` does).
//!
//! `--mode controller` renders the Namespace, the CRDs, the same RBAC plus the
//! `culvert-controller` ClusterRole (the dedicated planes' objects and Secrets), the
//! GatewayClass and the `culvert controller` Deployment; no Secrets, since the
//! controller makes its own.
//!
//! `--mode daemonset` renders, in apply order: the Namespace, Culvert's own CRDs
//! (`deploy/crds/culvert/`), the ServiceAccount and its RBAC, the config API's two
//! Secrets (a fresh bearer token and a self-signed serving certificate, unless
//! `--no-secrets`), the `culvert` GatewayClass and the DaemonSet. The documents are
//! the files under `deploy/kubernetes/templates/`, compiled in with `include_str!`
//! and filled by [`fill`]; nothing else is generated, so what is printed is what
//! those files say. `deploy/kubernetes/culvert.yaml` is the default rendering with
//! `--no-secrets`, and a test keeps it identical.
//!
//! This command talks to no cluster and writes no file. Start at [`run`].

use std::time::{SystemTime, UNIX_EPOCH};

use culvert_controller::credentials;

use super::Outcome;
use anyhow::Context;

const NAMESPACE: &str = include_str!("../../../../deploy/kubernetes/templates/namespace.yaml");
const GATEWAY_CONFIGS: &str = include_str!("../../../../deploy/crds/culvert/gatewayconfigs.yaml");
const GATEWAY_CLASS_CONFIGS: &str =
    include_str!("../../../../deploy/crds/culvert/gatewayclassconfigs.yaml");
const RBAC: &str = include_str!("../../../../deploy/kubernetes/templates/rbac.yaml");
const SECRETS: &str = include_str!("../../../../deploy/kubernetes/templates/secrets.yaml");
const GATEWAY_CLASS: &str =
    include_str!("../../../../deploy/kubernetes/templates/gatewayclass.yaml");
const DAEMONSET: &str = include_str!("../../../../deploy/kubernetes/templates/daemonset.yaml");
const CONTROLLER_RBAC: &str =
    include_str!("../../../../deploy/kubernetes/templates/controller-rbac.yaml");
const CONTROLLER: &str = include_str!("../../../../deploy/kubernetes/templates/controller.yaml");

/// Image repository of the released binary; the tag is this binary's version.
const IMAGE_REPOSITORY: &str = "ghcr.io/culvert-proxy/culvert";

/// How many years the generated control certificate is valid.
const CERTIFICATE_YEARS: i32 = 10;

/// How the data plane runs in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// One data plane per node, reached on the node's ports 80 and 443.
    Daemonset,
    /// The control plane alone, running the dedicated data planes Gateways ask for
    /// (`culvert controller`).
    Controller,
}

/// Arguments of `culvert install`.
#[derive(Debug, clap::Args)]
pub(crate) struct InstallArgs {
    /// How the data plane runs.
    #[arg(long, value_enum)]
    mode: Mode,
    /// Namespace Culvert is installed in.
    #[arg(long, default_value = "culvert-system")]
    namespace: String,
    /// Container image (default: `ghcr.io/culvert-proxy/culvert:VERSION`, this
    /// binary's version).
    #[arg(long)]
    image: Option<String>,
    /// Run in the node's network namespace (any listener port; the pod's
    /// ports are the node's).
    #[arg(long, conflicts_with = "host_ports")]
    host_network: bool,
    /// Map host ports 80 and 443 to the pod (the default).
    #[arg(long)]
    host_ports: bool,
    /// Leave out the two Secrets (the config API's token and TLS certificate), for
    /// upgrades and for Secrets managed elsewhere.
    #[arg(long)]
    no_secrets: bool,
}

pub(crate) fn run(args: &InstallArgs) -> anyhow::Result<Outcome> {
    check_namespace(&args.namespace)?;
    let version = env!("CARGO_PKG_VERSION");
    let image = match &args.image {
        Some(image) => {
            check_image(image)?;
            image.clone()
        }
        None => format!("{IMAGE_REPOSITORY}:{version}"),
    };
    let namespace = args.namespace.as_str();
    let (pod_network, pod_sysctls) = if args.host_network {
        (
            "hostNetwork: true\ndnsPolicy: ClusterFirstWithHostNet",
            // Namespaced sysctls cannot be set in the host's network namespace:
            // the image's file capability lets the non-root binary bind 80 and 443.
            "",
        )
    } else {
        (
            "",
            // Non-root containers get no ambient capabilities, so NET_BIND_SERVICE
            // alone does not let the binary bind 80 and 443 inside the pod's own
            // network namespace; this (safe, namespaced) sysctl does.
            "sysctls:\n  - name: net.ipv4.ip_unprivileged_port_start\n    value: \"0\"",
        )
    };
    let common = [("namespace", namespace), ("version", version)];

    let mut documents = vec![
        fill(NAMESPACE, &common),
        GATEWAY_CONFIGS.to_owned(),
        GATEWAY_CLASS_CONFIGS.to_owned(),
        fill(RBAC, &common),
    ];
    if args.mode == Mode::Controller {
        documents.push(fill(CONTROLLER_RBAC, &common));
        documents.push(fill(GATEWAY_CLASS, &common));
        documents.push(fill(
            CONTROLLER,
            &[
                ("namespace", namespace),
                ("version", version),
                ("image", &image),
            ],
        ));
        return Ok(Outcome::success(print(
            &format!(
                "# Culvert {version} on Kubernetes, a controller running dedicated data planes: printed by `culvert install`.\n\
                 # Apply the Gateway API CRDs first (docs/kubernetes.md).\n"
            ),
            documents,
        )));
    }
    if !args.no_secrets {
        let token = credentials::random_token()?;
        let (certificate, key) = control_certificate(namespace)?;
        documents.push(fill(
            SECRETS,
            &[
                ("namespace", namespace),
                ("token", &token),
                ("tls_crt", certificate.trim_end()),
                ("tls_key", key.trim_end()),
            ],
        ));
    }
    documents.push(fill(GATEWAY_CLASS, &common));
    documents.push(fill(
        DAEMONSET,
        &[
            ("namespace", namespace),
            ("version", version),
            ("image", &image),
            ("pod_network", pod_network),
            ("pod_sysctls", pod_sysctls),
        ],
    ));

    let mut header = format!(
        "# Culvert {version} on Kubernetes, one data plane per node: printed by `culvert install`.\n\
         # Apply the Gateway API CRDs first (docs/kubernetes.md).\n"
    );
    if args.no_secrets {
        header.push_str(
            "# Without the Secrets culvert-control-token and culvert-control-tls: create them\n\
             # before the DaemonSet's pods can start (docs/kubernetes.md).\n",
        );
    }
    Ok(Outcome::success(print(&header, documents)))
}

/// `header`, then each document after a `---` line.
fn print(header: &str, documents: Vec<String>) -> String {
    let mut out = header.to_owned();
    for document in documents {
        out.push_str("---\n");
        out.push_str(&document);
        if !document.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Fills `{{key}}` placeholders. A placeholder alone on its line takes a
/// multi-line value, each line indented as the placeholder was (an empty value
/// removes the line); elsewhere the value is inserted as is. An unknown key is
/// left in place, so a test sees it.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    for line in template.lines() {
        let trimmed = line.trim_start();
        let block = values.iter().find(|(key, _)| {
            trimmed
                .strip_prefix("{{")
                .and_then(|t| t.strip_suffix("}}"))
                == Some(key)
        });
        if let Some((_, value)) = block {
            let indent = &line[..line.len() - trimmed.len()];
            for value_line in value.lines() {
                out.push_str(indent);
                out.push_str(value_line);
                out.push('\n');
            }
            continue;
        }
        let mut line = line.to_owned();
        for (key, value) in values {
            line = line.replace(&format!("{{{{{key}}}}}"), value);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A namespace name must be a DNS-1123 label.
fn check_namespace(name: &str) -> anyhow::Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    anyhow::ensure!(
        valid,
        "--namespace {name:?} is not a DNS label (lower-case letters, digits and '-', at most 63)"
    );
    Ok(())
}

/// An image reference is inserted into YAML unquoted: allow only the characters
/// references are made of.
fn check_image(image: &str) -> anyhow::Result<()> {
    let valid = !image.is_empty()
        && !image.starts_with(['-', '.', ':', '@', '/'])
        && image
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"./:_@-".contains(&b));
    anyhow::ensure!(valid, "--image {image:?} is not an image reference");
    Ok(())
}

/// The name the control certificate is issued for. Probes connect to the pod IP
/// and do not verify; `culvert drain` in the preStop hook verifies this name.
fn control_server_name(namespace: &str) -> String {
    format!("culvert-control.{namespace}.svc")
}

/// A self-signed ECDSA P-256 serving certificate for [`control_server_name`],
/// valid from today for [`CERTIFICATE_YEARS`]: `(certificate PEM, key PEM)`.
fn control_certificate(namespace: &str) -> anyhow::Result<(String, String)> {
    let name = control_server_name(namespace);
    let mut params = rcgen::CertificateParams::new(vec![name.clone()])
        .context("the control certificate's name")?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "Culvert");
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let (year, month, day) = today()?;
    params.not_before = rcgen::date_time_ymd(year, month, day);
    params.not_after = rcgen::date_time_ymd(year + CERTIFICATE_YEARS, month, day.min(28));
    let key = rcgen::KeyPair::generate().context("generating the control key")?;
    let certificate = params
        .self_signed(&key)
        .context("signing the control certificate")?;
    Ok((certificate.pem(), key.serialize_pem()))
}

/// Today's UTC date as (year, month, day).
fn today() -> anyhow::Result<(i32, u8, u8)> {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the clock is before 1970")?
        .as_secs();
    Ok(credentials::utc_date(seconds))
}
