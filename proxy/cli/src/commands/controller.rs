//! `culvert controller`: the control plane alone, for clusters that give Gateways
//! dedicated data planes. It watches the Gateway API objects as `serve
//! --kubernetes` does, writes their status while it holds its Lease, and for each
//! Gateway whose `spec.infrastructure.parametersRef` names a `GatewayConfig`
//! renders, applies, heals and removes that plane's objects and credentials
//! (`culvert_controller`), and pushes each plane's config to its pods over their
//! config API. It serves no traffic itself; until SIGINT or SIGTERM. With
//! `--render`, it prints what it would apply for manifests instead
//! ([`super::render_planes`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use culvert_controller::render::{Image, PodPeer, PullPolicy};
use culvert_controller::run::{CloudflareSettings, Settings};
use culvert_controller::serve;
use culvert_kubernetes::SourceConfig;
use culvert_router::parse_duration;
use tokio::sync::watch;

use super::Outcome;
use super::serve::Signals;

/// Arguments of `culvert controller`.
#[derive(Debug, Args)]
pub(crate) struct ControllerArgs {
    /// Kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// `controllerName` of the GatewayClasses this controller owns.
    #[arg(long, default_value = "culvert.dev/gateway-controller")]
    controller_name: String,
    /// The controller's namespace: its Lease and its CA Secret live there
    /// (default: env POD_NAMESPACE, else `culvert-system`).
    #[arg(long)]
    namespace: Option<String>,
    /// Name of the Lease electing the controller that writes.
    #[arg(long, default_value = "culvert-controller")]
    lease_name: String,
    /// How long the Lease holds without renewal.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    lease_duration: Duration,
    /// This process's identity in the Lease (default: env POD_NAME, else the host
    /// name and process id).
    #[arg(long)]
    identity: Option<String>,
    /// The image dedicated planes run (default: env CULVERT_IMAGE).
    #[arg(long)]
    image: Option<String>,
    /// When the kubelet pulls that image.
    #[arg(long, default_value = "IfNotPresent", value_parser = parse_pull_policy)]
    image_pull_policy: PullPolicy,
    /// A label of the controller's own pods, `key=value` (repeatable): a plane's
    /// config API admits only pods with all of them in the controller's namespace.
    #[arg(long = "controller-pod-label", value_parser = parse_label,
          default_value = "app.kubernetes.io/name=culvert-controller")]
    controller_pod_labels: Vec<(String, String)>,
    /// Tunnel edge address (`host:port`, repeatable) planes with a tunnel dial.
    #[arg(long = "tunnel-edge")]
    tunnel_edges: Vec<String>,
    /// Longest time between two reconciles of every plane.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    resync: Duration,
    /// The Cloudflare v4 API (`http://` only on loopback, for
    /// `culvert-edge-sim`).
    #[arg(long, default_value = culvert_cloudflare::DEFAULT_BASE_URL)]
    cloudflare_api_url: String,
    /// The owner ID the DNS ownership (TXT) records carry: give each cluster
    /// sharing a zone its own.
    #[arg(long, default_value = culvert_controller::run::DEFAULT_OWNER_ID)]
    dns_owner_id: String,
    /// Log the DNS and tunnel ingress changes instead of making them.
    #[arg(long)]
    cloudflare_dry_run: bool,
    /// Print what would be applied for the manifests at this path (file or
    /// directory) and exit, without a cluster.
    #[arg(long, value_name = "FILE|DIR")]
    render: Option<PathBuf>,
}

fn parse_pull_policy(text: &str) -> Result<PullPolicy, String> {
    match text {
        "Always" => Ok(PullPolicy::Always),
        "IfNotPresent" => Ok(PullPolicy::IfNotPresent),
        "Never" => Ok(PullPolicy::Never),
        other => Err(format!("{other:?} is not Always, IfNotPresent or Never")),
    }
}

fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("{text:?} is not key=value")),
    }
}

pub(crate) fn run(args: &ControllerArgs) -> anyhow::Result<Outcome> {
    let namespace = super::pod_namespace(args.namespace.as_deref(), "culvert-system");
    let image = args
        .image
        .clone()
        .or_else(|| std::env::var("CULVERT_IMAGE").ok())
        .context("no data-plane image: pass --image or set CULVERT_IMAGE")?;
    let settings = Settings {
        namespace: namespace.clone(),
        image: Image {
            name: image,
            pull_policy: args.image_pull_policy,
        },
        controller_pods: PodPeer {
            namespace: namespace.clone(),
            labels: args
                .controller_pod_labels
                .iter()
                .cloned()
                .collect::<BTreeMap<_, _>>(),
        },
        tunnel_edges: args.tunnel_edges.clone(),
        resync: args.resync,
        cloudflare: CloudflareSettings {
            api_url: args.cloudflare_api_url.clone(),
            owner_id: args.dns_owner_id.clone(),
            dry_run: args.cloudflare_dry_run,
        },
    };
    if let Some(path) = &args.render {
        return super::render_planes::run(path, &args.controller_name, &settings);
    }

    let mut config = SourceConfig::new(&args.controller_name);
    config.kubeconfig.clone_from(&args.kubeconfig);
    config.lease = Some(super::lease_config(
        &namespace,
        &args.lease_name,
        args.identity.as_deref(),
        args.lease_duration,
    ));

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the controller runtime")?;
    runtime.block_on(async {
        let mut signals = Signals::new()?;
        let controller = serve::start(settings, config).await?;
        eprintln!("culvert: controller watching Kubernetes");
        let (stop_tx, stop) = watch::channel(false);
        let running = controller.run(stop);
        tokio::pin!(running);
        tokio::select! {
            () = &mut running => {}
            () = signals.next() => {
                stop_tx.send_replace(true);
                running.await;
            }
        }
        anyhow::Ok(())
    })?;
    Ok(Outcome::success(String::new()))
}
