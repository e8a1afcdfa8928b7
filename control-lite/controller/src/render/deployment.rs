//! The plane's Deployment: `culvert serve` waiting for config pushes.
//!
//! The pod is the DaemonSet's (`deploy/kubernetes/templates/daemonset.yaml`) minus
//! what only the Kubernetes source needs: no `--kubernetes`, no Lease, no host
//! ports, and no service account token, since a pushed plane never calls the API
//! server. The rest is the same on purpose: non-root 65532, read-only root file
//! system, every capability dropped but `NET_BIND_SERVICE` (listeners on 80 and
//! 443), seccomp `RuntimeDefault`, the same requests and memory limit, probes on the
//! config API over HTTPS, the `culvert drain --wait` preStop hook and its 45 s
//! grace period. The bearer token reaches `culvert serve` as `CULVERT_TOKEN` from
//! the Secret (`serve` takes no token file), the certificate and the tunnel token as
//! read-only files. Start at `deployment`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, ExecAction, HTTPGetAction,
    KeyToPath, Lifecycle, LifecycleHandler, ObjectFieldSelector, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile, SecretKeySelector,
    SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{CONFIG_API_PORT, CONFIG_API_PORT_NAME, Plane, SECRETS_HASH_ANNOTATION, Scaling};
use crate::Error;

/// Prometheus discovery annotations on the pod template (the DaemonSet's).
pub const PROMETHEUS_SCRAPE: &str = "prometheus.io/scrape";
/// The port `/metrics` is served on.
pub const PROMETHEUS_PORT: &str = "prometheus.io/port";
/// `https`: `/metrics` shares the config API's TLS port.
pub const PROMETHEUS_SCHEME: &str = "prometheus.io/scheme";
/// `/metrics`.
pub const PROMETHEUS_PATH: &str = "prometheus.io/path";

/// The container's name.
pub const CONTAINER: &str = "culvert";

/// The binary in the image (the preStop hook runs it; the image has no shell).
const BINARY: &str = "/culvert";

/// Where the config API certificate is mounted.
pub const CONTROL_TLS_DIR: &str = "/etc/culvert/control-tls";

/// Where the tunnel token is mounted; the file is [`TUNNEL_TOKEN_FILE`].
pub const TUNNEL_DIR: &str = "/etc/culvert/tunnel";

/// The tunnel token file `--tunnel-token-file` reads.
pub const TUNNEL_TOKEN_FILE: &str = "/etc/culvert/tunnel/token";

/// The user and group the image runs as (distroless `nonroot`).
const NON_ROOT: i64 = 65532;

/// Above `--drain-grace` and the drain hook's timeout, so requests in flight
/// finish before the kubelet's SIGKILL.
pub const TERMINATION_GRACE_SECONDS: i64 = 45;

/// How long `culvert serve` lets requests finish once draining.
const DRAIN_GRACE: &str = "30s";

/// How long the preStop hook waits for the drain.
const DRAIN_TIMEOUT: &str = "40s";

/// 0440: the owner and the fsGroup read the mounted Secrets.
const SECRET_MODE: i32 = 0o440;

/// The plane's Deployment.
pub(super) fn deployment(plane: &Plane<'_>) -> Result<Deployment, Error> {
    Ok(Deployment {
        metadata: plane.metadata(&plane.names.workload),
        spec: Some(DeploymentSpec {
            // Left out when autoscaling: a value here would fight the HPA on every
            // apply.
            replicas: match plane.scaling {
                Scaling::Fixed(replicas) => Some(replicas),
                Scaling::Auto(_) => None,
            },
            selector: plane.pod_selector(),
            // A new pod is ready (pushed and, with a tunnel, registered) before an
            // old one goes, so a rollout never lowers the number of connectors.
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            template: pod_template(plane)?,
            ..DeploymentSpec::default()
        }),
        status: None,
    })
}

/// The pod template: the plane's labels, and its annotations with the Secrets'
/// hash and Prometheus discovery.
fn pod_template(plane: &Plane<'_>) -> Result<PodTemplateSpec, Error> {
    let own = BTreeMap::from([
        (
            SECRETS_HASH_ANNOTATION.to_owned(),
            plane.spec.secrets.content_hash.clone(),
        ),
        (PROMETHEUS_SCRAPE.to_owned(), "true".to_owned()),
        (PROMETHEUS_PORT.to_owned(), CONFIG_API_PORT.to_string()),
        (PROMETHEUS_SCHEME.to_owned(), "https".to_owned()),
        (PROMETHEUS_PATH.to_owned(), "/metrics".to_owned()),
    ]);
    Ok(PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(plane.labels.clone()),
            annotations: Some(super::labels::under(&own, &plane.annotations)),
            ..ObjectMeta::default()
        }),
        spec: Some(pod_spec(plane)?),
    })
}

/// The pod: hardening, the one container, the Secret volumes.
fn pod_spec(plane: &Plane<'_>) -> Result<PodSpec, Error> {
    let tunnel = tunnel(plane)?;
    let mut volumes = vec![secret_volume(
        "control-tls",
        secret_name("config API TLS", &plane.spec.secrets.config_tls)?,
        None,
    )];
    if let Some(tunnel) = &tunnel {
        volumes.push(secret_volume(
            "tunnel",
            tunnel.secret.name.clone(),
            Some(tunnel.secret.key.clone()),
        ));
    }
    Ok(PodSpec {
        // A pushed plane never calls the API server.
        automount_service_account_token: Some(false),
        // The plane reaches nothing by Service environment variables.
        enable_service_links: Some(false),
        termination_grace_period_seconds: Some(TERMINATION_GRACE_SECONDS),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(NON_ROOT),
            run_as_group: Some(NON_ROOT),
            fs_group: Some(NON_ROOT),
            seccomp_profile: Some(runtime_default()),
            ..PodSecurityContext::default()
        }),
        containers: vec![container(plane, tunnel.as_ref())?],
        volumes: Some(volumes),
        ..PodSpec::default()
    })
}

/// The tunnel the plane serves: its token Secret and the edges to dial.
struct Tunnel<'a> {
    secret: &'a super::SecretKey,
    edges: &'a [String],
}

/// `Some` when the GatewayConfig has a tunnel, or a shared plane is given its
/// class's tunnel token; refused without a token Secret, which `culvert serve`
/// would exit on. Without edge addresses the pods discover the edge as
/// cloudflared does (SRV records of argotunnel.com).
fn tunnel<'a>(plane: &Plane<'a>) -> Result<Option<Tunnel<'a>>, Error> {
    if !plane.has_tunnel() {
        return Ok(None);
    }
    let secret = plane
        .spec
        .secrets
        .tunnel_token
        .as_ref()
        .ok_or(Error::MissingTunnelSecret)?;
    secret_key("tunnel token", secret)?;
    Ok(Some(Tunnel {
        secret,
        edges: &plane.spec.tunnel_edges,
    }))
}

/// The `culvert serve` container.
fn container(plane: &Plane<'_>, tunnel: Option<&Tunnel<'_>>) -> Result<Container, Error> {
    let token = secret_key("config API token", &plane.spec.secrets.config_token)?;
    let mut mounts = vec![VolumeMount {
        name: "control-tls".to_owned(),
        mount_path: CONTROL_TLS_DIR.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }];
    if tunnel.is_some() {
        mounts.push(VolumeMount {
            name: "tunnel".to_owned(),
            mount_path: TUNNEL_DIR.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    Ok(Container {
        name: CONTAINER.to_owned(),
        image: Some(plane.spec.image.name.clone()),
        image_pull_policy: Some(plane.spec.image.pull_policy.as_str().to_owned()),
        args: Some(serve_args(tunnel)),
        env: Some(env(token)),
        ports: Some(vec![ContainerPort {
            name: Some(CONFIG_API_PORT_NAME.to_owned()),
            container_port: CONFIG_API_PORT,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        liveness_probe: Some(probe("/healthz", 10, 3)),
        readiness_probe: Some(probe("/readyz", 5, 1)),
        lifecycle: Some(Lifecycle {
            pre_stop: Some(LifecycleHandler {
                exec: Some(ExecAction {
                    command: Some(drain_command(plane)),
                }),
                ..LifecycleHandler::default()
            }),
            ..Lifecycle::default()
        }),
        resources: Some(resources()),
        security_context: Some(container_security()),
        volume_mounts: Some(mounts),
        ..Container::default()
    })
}

/// `culvert serve` in push mode: config API on the pod IP over TLS, the tunnel
/// when there is one.
fn serve_args(tunnel: Option<&Tunnel<'_>>) -> Vec<String> {
    let mut args: Vec<String> = [
        "serve".to_owned(),
        "--control".to_owned(),
        format!("$(POD_IP):{CONFIG_API_PORT}"),
        "--control-tls-cert".to_owned(),
        format!("{CONTROL_TLS_DIR}/tls.crt"),
        "--control-tls-key".to_owned(),
        format!("{CONTROL_TLS_DIR}/tls.key"),
        "--drain-grace".to_owned(),
        DRAIN_GRACE.to_owned(),
    ]
    .into();
    if let Some(tunnel) = tunnel {
        args.extend([
            "--tunnel-token-file".to_owned(),
            TUNNEL_TOKEN_FILE.to_owned(),
        ]);
        for edge in tunnel.edges {
            args.extend(["--tunnel-edge".to_owned(), edge.clone()]);
        }
    }
    args
}

/// The pod's addresses from the downward API, and where `culvert drain` finds the
/// config API and its token (exec hooks get the environment but no `$(VAR)`
/// expansion of their own command).
fn env(token: &super::SecretKey) -> Vec<EnvVar> {
    vec![
        field_env("POD_IP", "status.podIP"),
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        EnvVar {
            name: "CULVERT_CONTROL".to_owned(),
            value: Some(format!("https://$(POD_IP):{CONFIG_API_PORT}")),
            value_from: None,
        },
        EnvVar {
            name: "CULVERT_TOKEN".to_owned(),
            value: None,
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: token.name.clone(),
                    key: token.key.clone(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
        },
    ]
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: path.to_owned(),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// An HTTPS probe of the config API (the kubelet does not verify the certificate).
fn probe(path: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String(CONFIG_API_PORT_NAME.to_owned()),
            scheme: Some("HTTPS".to_owned()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        timeout_seconds: Some(2),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

/// The preStop hook: drain and wait, trusting the CA that issued the config API
/// certificate for the config Service's name.
fn drain_command(plane: &Plane<'_>) -> Vec<String> {
    [
        BINARY.to_owned(),
        "drain".to_owned(),
        "--wait".to_owned(),
        "--timeout".to_owned(),
        DRAIN_TIMEOUT.to_owned(),
        "--ca-file".to_owned(),
        format!("{CONTROL_TLS_DIR}/ca.crt"),
        "--server-name".to_owned(),
        plane
            .names
            .config_server_name(&plane.spec.gateway.namespace),
    ]
    .into()
}

/// The DaemonSet's requests and memory limit.
fn resources() -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_owned(), Quantity("100m".to_owned())),
            ("memory".to_owned(), Quantity("64Mi".to_owned())),
        ])),
        limits: Some(BTreeMap::from([(
            "memory".to_owned(),
            Quantity("512Mi".to_owned()),
        )])),
        ..ResourceRequirements::default()
    }
}

/// The DaemonSet's container hardening.
fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        run_as_user: Some(NON_ROOT),
        run_as_group: Some(NON_ROOT),
        seccomp_profile: Some(runtime_default()),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            add: Some(vec!["NET_BIND_SERVICE".to_owned()]),
        }),
        ..SecurityContext::default()
    }
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        localhost_profile: None,
    }
}

/// A read-only Secret volume; with `key`, only that key, as the file `token`.
fn secret_volume(name: &str, secret: String, key: Option<String>) -> Volume {
    Volume {
        name: name.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret),
            default_mode: Some(SECRET_MODE),
            items: key.map(|key| {
                vec![KeyToPath {
                    key,
                    path: "token".to_owned(),
                    mode: None,
                }]
            }),
            optional: Some(false),
        }),
        ..Volume::default()
    }
}

fn secret_name(what: &'static str, name: &str) -> Result<String, Error> {
    if name.is_empty() {
        Err(Error::MissingSecret(what))
    } else {
        Ok(name.to_owned())
    }
}

fn secret_key<'a>(
    what: &'static str,
    secret: &'a super::SecretKey,
) -> Result<&'a super::SecretKey, Error> {
    if secret.name.is_empty() || secret.key.is_empty() {
        Err(Error::MissingSecret(what))
    } else {
        Ok(secret)
    }
}
