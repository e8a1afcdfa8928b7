//! `culvert controller`: the control plane alone, for clusters that give Gateways
//! dedicated data planes. It watches the Gateway API objects as `serve
//! --kubernetes` does, writes their status while it holds its Lease, and for each
//! Gateway whose `spec.infrastructure.parametersRef` names a `GatewayConfig`
//! renders, applies, heals and removes that plane's objects and credentials
//! (`culvert_controller`), and pushes each plane's config to its pods over their
//! config API. It serves no traffic itself; until SIGINT or SIGTERM.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use culvert_controller::cluster::Cluster;
use culvert_controller::planes;
use culvert_controller::push::{PushSettings, Pusher, Summaries};
use culvert_controller::push_status;
use culvert_controller::render::{Image, PodPeer, PullPolicy};
use culvert_controller::run::{Desired, Feeder, Settings, run as reconcile_loop};
use culvert_kubernetes::{
    KubernetesSource, LeaseConfig, SourceConfig, StatusOverlay, TranslationHook,
};
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
}

/// Bumps `wake` whenever what status says about the pushes changes (not on every
/// push attempt), so the source writes it.
async fn wake_on_status_change(
    mut summaries: watch::Receiver<Summaries>,
    wake: watch::Sender<u64>,
) {
    let mut last = push_status::view(&summaries.borrow_and_update());
    while summaries.changed().await.is_ok() {
        let view = push_status::view(&summaries.borrow_and_update());
        if view != last {
            last = view;
            wake.send_modify(|n| *n += 1);
        }
    }
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
    let namespace = args
        .namespace
        .clone()
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .unwrap_or_else(|| "culvert-system".to_owned());
    let image = args
        .image
        .clone()
        .or_else(|| std::env::var("CULVERT_IMAGE").ok())
        .context("no data-plane image: pass --image or set CULVERT_IMAGE")?;
    let identity = args
        .identity
        .clone()
        .or_else(|| std::env::var("POD_NAME").ok())
        .unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            format!("{}-{}", host.trim(), std::process::id())
        });
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
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the controller runtime")?;
    // The pusher's plane tasks run on this runtime, driven below.
    let entered = runtime.enter();
    let pusher = Pusher::new(PushSettings::default()).context("starting the config pushes")?;
    let summaries = pusher.subscribe();
    drop(entered);

    let (desired_tx, desired) = watch::channel::<Desired>(None);
    let (wake_tx, wake) = watch::channel(0_u64);
    let mut config = SourceConfig::new(&args.controller_name);
    config.kubeconfig.clone_from(&args.kubeconfig);
    let mut lease = LeaseConfig::new(&namespace, &args.lease_name, &identity);
    lease.duration = args.lease_duration;
    lease.retry = (args.lease_duration / 7).max(Duration::from_millis(200));
    config.lease = Some(lease);
    config.on_translation = Some(TranslationHook(Arc::new(move |store, translation| {
        desired_tx.send_replace(Some(Arc::new(planes::wanted(store, translation))));
    })));
    let overlay_summaries = summaries.clone();
    config.status_overlay = Some(StatusOverlay(Arc::new(move |translation| {
        push_status::overlay(translation, &overlay_summaries.borrow());
    })));
    config.status_wake = Some(wake);
    let source = KubernetesSource::start(config).context("connecting to Kubernetes")?;
    let leader = source.leader();

    runtime.block_on(async {
        let mut signals = Signals::new()?;
        let client = culvert_kubernetes::client::connect(args.kubeconfig.as_deref())
            .await
            .context("connecting to Kubernetes")?;
        tokio::spawn(wake_on_status_change(summaries, wake_tx));
        let (stop_tx, stop) = watch::channel(false);
        let mut feeder = Feeder::new(pusher);
        let reconcile = reconcile_loop(
            Cluster::new(client),
            settings,
            desired,
            leader,
            stop,
            move |applied, pass| {
                tracing::debug!(
                    planes = applied.len(),
                    deleted = pass.deleted,
                    failed = pass.failed.len(),
                    "reconciled"
                );
                for (plane, error) in feeder.feed(applied, pass) {
                    tracing::warn!(%plane, %error, "plane not pushed to");
                }
            },
        );
        eprintln!("culvert: controller watching Kubernetes");
        tokio::pin!(reconcile);
        tokio::select! {
            () = &mut reconcile => {}
            () = signals.next() => {
                stop_tx.send_replace(true);
                reconcile.await;
            }
        }
        anyhow::Ok(())
    })?;
    // Stops the watches and hands the Lease on.
    drop(source);
    Ok(Outcome::success(String::new()))
}
