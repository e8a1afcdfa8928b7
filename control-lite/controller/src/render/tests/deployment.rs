//! The Deployment, field by field.

use k8s_openapi::api::core::v1::{
    Capabilities, EnvVar, KeyToPath, PodSecurityContext, SeccompProfile, SecurityContext,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    autoscaling_spec, container, map, own_labels, pod, render, selector, spec, strings, template,
    tunnel_spec,
};
use crate::Error;

#[test]
fn plain_gateway_deployment() {
    let rendered = render(&spec());
    let deployment = &rendered.deployment;
    let meta = &deployment.metadata;
    assert_eq!(meta.name.as_deref(), Some("culvert-edge"));
    assert_eq!(meta.namespace.as_deref(), Some("tenant-a"));
    assert_eq!(meta.labels.as_ref(), Some(&own_labels()));
    assert_eq!(meta.annotations, None);

    let spec = deployment.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.selector.match_labels.as_ref(), Some(&selector()));
    assert_eq!(spec.selector.match_expressions, None);
    let strategy = spec.strategy.as_ref().unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let rolling = strategy.rolling_update.as_ref().unwrap();
    assert_eq!(rolling.max_surge, Some(IntOrString::Int(1)));
    assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(0)));

    let template_meta = template(&rendered).metadata.as_ref().unwrap();
    assert_eq!(template_meta.labels.as_ref(), Some(&own_labels()));
    assert_eq!(
        template_meta.annotations.as_ref(),
        Some(&map(&[
            ("culvert.dev/secrets-hash", "3b1f0c9a"),
            ("prometheus.io/scrape", "true"),
            ("prometheus.io/port", "8081"),
            ("prometheus.io/scheme", "https"),
            ("prometheus.io/path", "/metrics"),
        ]))
    );
}

#[test]
fn plain_gateway_pod_is_hardened_like_the_daemonset() {
    let rendered = render(&spec());
    let pod = pod(&rendered);
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(pod.service_account_name, None);
    assert_eq!(pod.enable_service_links, Some(false));
    assert_eq!(pod.termination_grace_period_seconds, Some(45));
    assert_eq!(pod.host_network, None);
    let runtime_default = SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        localhost_profile: None,
    };
    assert_eq!(
        pod.security_context,
        Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(65532),
            run_as_group: Some(65532),
            fs_group: Some(65532),
            seccomp_profile: Some(runtime_default.clone()),
            ..PodSecurityContext::default()
        })
    );
    let container = container(&rendered);
    assert_eq!(
        container.security_context,
        Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            run_as_user: Some(65532),
            run_as_group: Some(65532),
            seccomp_profile: Some(runtime_default),
            capabilities: Some(Capabilities {
                drop: Some(strings(&["ALL"])),
                add: Some(strings(&["NET_BIND_SERVICE"])),
            }),
            ..SecurityContext::default()
        })
    );
    let resources = container.resources.as_ref().unwrap();
    let requests = resources.requests.as_ref().unwrap();
    assert_eq!(requests.get("cpu"), Some(&Quantity("100m".to_owned())));
    assert_eq!(requests.get("memory"), Some(&Quantity("64Mi".to_owned())));
    let limits = resources.limits.as_ref().unwrap();
    assert_eq!(limits.get("memory"), Some(&Quantity("512Mi".to_owned())));
    assert_eq!(limits.get("cpu"), None);
}

#[test]
fn plain_gateway_container_serves_pushes_over_tls() {
    let rendered = render(&spec());
    let container = container(&rendered);
    assert_eq!(container.name, "culvert");
    assert_eq!(
        container.image.as_deref(),
        Some("ghcr.io/culvert-proxy/culvert:0.1.0")
    );
    assert_eq!(container.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(container.command, None);
    let args = container.args.as_ref().unwrap();
    assert_eq!(
        args,
        &strings(&[
            "serve",
            "--control",
            "$(POD_IP):8081",
            "--control-tls-cert",
            "/etc/culvert/control-tls/tls.crt",
            "--control-tls-key",
            "/etc/culvert/control-tls/tls.key",
            "--drain-grace",
            "30s",
        ])
    );
    for push_mode_never in ["--config", "--kubernetes", "--token", "--tunnel-token-file"] {
        assert!(
            !args.iter().any(|a| a == push_mode_never),
            "{push_mode_never}"
        );
    }

    let env = container.env.as_ref().unwrap();
    let names: Vec<&str> = env.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "POD_IP",
            "POD_NAME",
            "POD_NAMESPACE",
            "CULVERT_CONTROL",
            "CULVERT_TOKEN"
        ]
    );
    let field = |e: &EnvVar| {
        e.value_from
            .as_ref()
            .and_then(|f| f.field_ref.as_ref())
            .map(|f| f.field_path.clone())
    };
    assert_eq!(field(&env[0]).as_deref(), Some("status.podIP"));
    assert_eq!(field(&env[1]).as_deref(), Some("metadata.name"));
    assert_eq!(field(&env[2]).as_deref(), Some("metadata.namespace"));
    assert_eq!(env[3].value.as_deref(), Some("https://$(POD_IP):8081"));
    let token = env[4]
        .value_from
        .as_ref()
        .and_then(|f| f.secret_key_ref.as_ref())
        .unwrap();
    assert_eq!(token.name, "culvert-edge-token");
    assert_eq!(token.key, "token");
    assert_eq!(token.optional, Some(false));
    assert_eq!(env[4].value, None);

    let ports = container.ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name.as_deref(), Some("control"));
    assert_eq!(ports[0].container_port, 8081);
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
    assert_eq!(ports[0].host_port, None);
}

#[test]
fn plain_gateway_probes_and_drain() {
    let rendered = render(&spec());
    let container = container(&rendered);
    for (probe, path, period, failures) in [
        (container.readiness_probe.as_ref(), "/readyz", 5, 1),
        (container.liveness_probe.as_ref(), "/healthz", 10, 3),
    ] {
        let probe = probe.unwrap();
        let get = probe.http_get.as_ref().unwrap();
        assert_eq!(get.path.as_deref(), Some(path));
        assert_eq!(get.port, IntOrString::String("control".to_owned()));
        assert_eq!(get.scheme.as_deref(), Some("HTTPS"));
        assert_eq!(probe.period_seconds, Some(period));
        assert_eq!(probe.timeout_seconds, Some(2));
        assert_eq!(probe.failure_threshold, Some(failures));
    }
    let pre_stop = container
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref())
        .and_then(|h| h.exec.as_ref())
        .and_then(|e| e.command.as_ref())
        .unwrap();
    assert_eq!(
        pre_stop,
        &strings(&[
            "/culvert",
            "drain",
            "--wait",
            "--timeout",
            "40s",
            "--ca-file",
            "/etc/culvert/control-tls/ca.crt",
            "--server-name",
            "culvert-edge-config.tenant-a.svc",
        ])
    );
}

#[test]
fn plain_gateway_mounts_only_the_certificate_read_only() {
    let rendered = render(&spec());
    let mounts = container(&rendered).volume_mounts.as_ref().unwrap();
    assert_eq!(
        mounts,
        &vec![VolumeMount {
            name: "control-tls".to_owned(),
            mount_path: "/etc/culvert/control-tls".to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]
    );
    let volumes = pod(&rendered).volumes.as_ref().unwrap();
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0].name, "control-tls");
    let secret = volumes[0].secret.as_ref().unwrap();
    assert_eq!(
        secret.secret_name.as_deref(),
        Some("culvert-edge-config-tls-1")
    );
    assert_eq!(secret.default_mode, Some(0o440));
    assert_eq!(secret.items, None);
    assert_eq!(secret.optional, Some(false));
}

#[test]
fn tunnel_gateway_serves_its_tunnel_from_a_file() {
    let rendered = render(&tunnel_spec());
    let container = container(&rendered);
    let args = container.args.as_ref().unwrap();
    assert_eq!(
        &args[9..],
        &strings(&[
            "--tunnel-token-file",
            "/etc/culvert/tunnel/token",
            "--tunnel-edge",
            "region1.v2.argotunnel.com:7844",
            "--tunnel-edge",
            "region2.v2.argotunnel.com:7844",
        ])
    );
    let mounts = container.volume_mounts.as_ref().unwrap();
    assert_eq!(mounts.len(), 2);
    assert_eq!(mounts[1].name, "tunnel");
    assert_eq!(mounts[1].mount_path, "/etc/culvert/tunnel");
    assert_eq!(mounts[1].read_only, Some(true));
    let volumes = pod(&rendered).volumes.as_ref().unwrap();
    let tunnel = volumes[1].secret.as_ref().unwrap();
    assert_eq!(volumes[1].name, "tunnel");
    assert_eq!(tunnel.secret_name.as_deref(), Some("edge-tunnel"));
    assert_eq!(tunnel.default_mode, Some(0o440));
    assert_eq!(
        tunnel.items,
        Some(vec![KeyToPath {
            key: "tunnel-token".to_owned(),
            path: "token".to_owned(),
            mode: None,
        }])
    );
    // The token never reaches the pod spec as a value.
    let env = container.env.as_ref().unwrap();
    assert!(env.iter().all(|e| e.name != "TUNNEL_TOKEN"));
}

#[test]
fn tunnel_secret_is_ignored_without_a_tunnel() {
    let mut spec = tunnel_spec();
    spec.config.tunnel = None;
    let rendered = render(&spec);
    assert_eq!(pod(&rendered).volumes.as_ref().unwrap().len(), 1);
    assert!(
        !container(&rendered)
            .args
            .as_ref()
            .unwrap()
            .iter()
            .any(|a| a.starts_with("--tunnel"))
    );
}

#[test]
fn tunnel_without_secret_is_refused_and_without_edges_discovers_them() {
    let mut spec = tunnel_spec();
    spec.secrets.tunnel_token = None;
    assert_eq!(super::super::render(&spec), Err(Error::MissingTunnelSecret));

    let mut spec = tunnel_spec();
    spec.tunnel_edges.clear();
    let rendered = super::super::render(&spec).unwrap();
    let args = rendered
        .deployment
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap();
    assert!(args.iter().any(|a| a == "--tunnel-token-file"), "{args:?}");
    assert!(
        !args.iter().any(|a| a == "--tunnel-edge"),
        "the pods discover the edge: {args:?}"
    );

    let mut spec = tunnel_spec();
    if let Some(secret) = spec.secrets.tunnel_token.as_mut() {
        secret.key.clear();
    }
    assert_eq!(
        super::super::render(&spec),
        Err(Error::MissingSecret("tunnel token"))
    );
}

#[test]
fn replicas_come_from_the_gateway_config() {
    let mut spec = spec();
    spec.config.replicas = Some(3);
    let rendered = render(&spec);
    assert_eq!(rendered.deployment.spec.as_ref().unwrap().replicas, Some(3));

    spec.config.replicas = Some(0);
    let rendered = render(&spec);
    assert_eq!(rendered.deployment.spec.as_ref().unwrap().replicas, Some(0));

    spec.config.replicas = Some(u32::MAX);
    assert_eq!(
        super::super::render(&spec),
        Err(Error::TooManyReplicas(u32::MAX))
    );
}

#[test]
fn autoscaling_leaves_replicas_to_the_autoscaler() {
    let rendered = render(&autoscaling_spec());
    let deployment = rendered.deployment.spec.as_ref().unwrap();
    assert_eq!(deployment.replicas, None);
    // Nothing else about the pod changes.
    let plain = render(&spec());
    assert_eq!(
        deployment.template,
        plain.deployment.spec.as_ref().unwrap().template
    );
}

#[test]
fn missing_inputs_are_refused() {
    let mut spec = spec();
    spec.image.name.clear();
    assert_eq!(super::super::render(&spec), Err(Error::NoImage));

    for (field, clear) in [
        (
            "namespace",
            (|s: &mut crate::render::PlaneSpec| s.gateway.namespace.clear()) as fn(&mut _),
        ),
        ("name", |s| s.gateway.name.clear()),
        ("uid", |s| s.gateway.uid.clear()),
    ] {
        let mut spec = super::spec();
        clear(&mut spec);
        assert_eq!(
            super::super::render(&spec),
            Err(Error::MissingGatewayField(field))
        );
    }

    let mut spec = super::spec();
    spec.secrets.config_token.name.clear();
    assert_eq!(
        super::super::render(&spec),
        Err(Error::MissingSecret("config API token"))
    );
    let mut spec = super::spec();
    spec.secrets.config_tls.clear();
    assert_eq!(
        super::super::render(&spec),
        Err(Error::MissingSecret("config API TLS"))
    );
}

#[test]
fn pull_policy_is_the_controllers() {
    let mut spec = spec();
    spec.image.pull_policy = crate::render::PullPolicy::Always;
    let rendered = render(&spec);
    assert_eq!(
        container(&rendered).image_pull_policy.as_deref(),
        Some("Always")
    );
}
