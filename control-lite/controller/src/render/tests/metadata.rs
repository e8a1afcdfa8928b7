//! Infrastructure labels and annotations: propagation, precedence, what is
//! dropped; the Secrets' hash on the pod template.

use std::collections::BTreeMap;

use super::{autoscaling_spec, map, own_labels, render, selector, template};
use crate::render::labels::MAX_INFRASTRUCTURE_ANNOTATIONS;
use crate::render::{DropReason, Dropped, GatewayRef, MetadataKind, OwnerKind, Rendered};

/// An object's labels and annotations.
type Maps<'a> = (
    Option<&'a BTreeMap<String, String>>,
    Option<&'a BTreeMap<String, String>>,
);

/// Labels and annotations of every object and of the pod template.
fn everywhere(rendered: &Rendered) -> Vec<Maps<'_>> {
    let mut all = vec![
        &rendered.deployment.metadata,
        &rendered.config_service.metadata,
        &rendered.network_policy.metadata,
        &rendered.disruption_budget.metadata,
    ];
    if let Some(hpa) = &rendered.autoscaler {
        all.push(&hpa.metadata);
    }
    all.push(template(rendered).metadata.as_ref().unwrap());
    all.into_iter()
        .map(|m| (m.labels.as_ref(), m.annotations.as_ref()))
        .collect()
}

#[test]
fn infrastructure_labels_and_annotations_reach_every_object_and_the_pods() {
    let mut spec = autoscaling_spec();
    spec.gateway.labels = map(&[("team", "payments"), ("example.com/tier", "edge")]);
    spec.gateway.annotations = map(&[("example.com/owner", "ops@example.com")]);
    let rendered = render(&spec);
    assert!(rendered.dropped.is_empty(), "{:?}", rendered.dropped);
    let seen = everywhere(&rendered);
    assert_eq!(seen.len(), 6);
    let mut labels = own_labels();
    labels.extend(map(&[("team", "payments"), ("example.com/tier", "edge")]));
    for (got_labels, got_annotations) in seen {
        assert_eq!(got_labels, Some(&labels));
        let annotations = got_annotations.unwrap();
        assert_eq!(
            annotations.get("example.com/owner").map(String::as_str),
            Some("ops@example.com")
        );
    }
    // Only the pod template carries Culvert's pod annotations.
    assert_eq!(
        rendered.deployment.metadata.annotations,
        Some(map(&[("example.com/owner", "ops@example.com")]))
    );
}

#[test]
fn culvert_labels_win_over_infrastructure_labels() {
    let mut spec = autoscaling_spec();
    spec.gateway.labels = map(&[
        ("app.kubernetes.io/name", "hijack"),
        ("app.kubernetes.io/instance", "other-gateway"),
        ("gateway.networking.k8s.io/gateway-name", "other"),
        ("app.kubernetes.io/version", "1.2.3"),
    ]);
    spec.gateway.annotations = map(&[
        ("culvert.dev/secrets-hash", "pinned"),
        ("prometheus.io/scrape", "false"),
    ]);
    let rendered = render(&spec);

    // The selector, the Service's and the policy's selectors are untouched.
    let deployment = rendered.deployment.spec.as_ref().unwrap();
    assert_eq!(deployment.selector.match_labels.as_ref(), Some(&selector()));
    assert_eq!(
        rendered
            .config_service
            .spec
            .as_ref()
            .unwrap()
            .selector
            .as_ref(),
        Some(&selector())
    );
    let mut labels = own_labels();
    labels.insert("app.kubernetes.io/version".to_owned(), "1.2.3".to_owned());
    for (got, _) in everywhere(&rendered) {
        assert_eq!(got, Some(&labels));
    }
    let pod_annotations = template(&rendered)
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .as_ref()
        .unwrap();
    assert_eq!(pod_annotations["culvert.dev/secrets-hash"], "3b1f0c9a");
    assert_eq!(pod_annotations["prometheus.io/scrape"], "true");
    assert_eq!(rendered.deployment.metadata.annotations, None);

    let reserved: Vec<(MetadataKind, &str)> = rendered
        .dropped
        .iter()
        .inspect(|d| assert_eq!(d.reason, DropReason::Reserved))
        .map(|d| (d.kind, d.key.as_str()))
        .collect();
    assert_eq!(
        reserved,
        [
            (MetadataKind::Label, "app.kubernetes.io/instance"),
            (MetadataKind::Label, "app.kubernetes.io/name"),
            (
                MetadataKind::Label,
                "gateway.networking.k8s.io/gateway-name"
            ),
            (MetadataKind::Annotation, "culvert.dev/secrets-hash"),
            (MetadataKind::Annotation, "prometheus.io/scrape"),
        ]
    );
}

#[test]
fn invalid_infrastructure_entries_are_dropped_and_reported() {
    let mut spec = super::spec();
    let long = "x".repeat(64);
    spec.gateway.labels = map(&[
        ("ok", "fine"),
        ("empty-value", ""),
        ("bad key", "v"),
        ("Upper.Case/name", "v"),
        ("a/b/c", "v"),
        ("/name", "v"),
        ("prefix/", "v"),
        ("-leading", "v"),
        (&long, "v"),
        ("long-value", &long),
        ("bad-value", "white space"),
        ("trailing-dash", "value-"),
        ("unicode", "é"),
    ]);
    spec.gateway.annotations = map(&[
        ("free/text", "any value at all: é, spaces, \"quotes\""),
        ("not a key", "v"),
    ]);
    let rendered = render(&spec);
    let kept = rendered.deployment.metadata.labels.unwrap();
    assert_eq!(kept.get("ok").map(String::as_str), Some("fine"));
    assert_eq!(kept.get("empty-value").map(String::as_str), Some(""));
    assert_eq!(kept.len(), own_labels().len() + 2);
    assert_eq!(
        rendered.deployment.metadata.annotations,
        Some(map(&[(
            "free/text",
            "any value at all: é, spaces, \"quotes\""
        )]))
    );

    let dropped: Vec<(MetadataKind, &str, bool)> = rendered
        .dropped
        .iter()
        .map(|d| {
            (
                d.kind,
                d.key.as_str(),
                matches!(d.reason, DropReason::InvalidKey(_)),
            )
        })
        .collect();
    let mut expected = vec![
        (MetadataKind::Label, "-leading", true),
        (MetadataKind::Label, "/name", true),
        (MetadataKind::Label, "Upper.Case/name", true),
        (MetadataKind::Label, "a/b/c", true),
        (MetadataKind::Label, "bad key", true),
        (MetadataKind::Label, "bad-value", false),
        (MetadataKind::Label, "long-value", false),
        (MetadataKind::Label, "prefix/", true),
        (MetadataKind::Label, "trailing-dash", false),
        (MetadataKind::Label, "unicode", false),
        (MetadataKind::Annotation, "not a key", true),
    ];
    expected.insert(10, (MetadataKind::Label, long.as_str(), true));
    assert_eq!(dropped, expected);
    for d in &rendered.dropped {
        let message = d.to_string();
        assert!(message.starts_with("infrastructure "), "{message}");
        assert!(message.contains("dropped: "), "{message}");
    }
}

#[test]
fn oversized_annotations_are_dropped() {
    let mut spec = super::spec();
    let big = "v".repeat(MAX_INFRASTRUCTURE_ANNOTATIONS / 2);
    spec.gateway.annotations = map(&[("a", &big), ("b", &big), ("c", "small")]);
    let rendered = render(&spec);
    let kept = rendered.deployment.metadata.annotations.unwrap();
    assert!(kept.contains_key("a"));
    assert!(!kept.contains_key("b"));
    assert!(kept.contains_key("c"));
    assert_eq!(
        rendered.dropped,
        vec![Dropped {
            kind: MetadataKind::Annotation,
            key: "b".to_owned(),
            reason: DropReason::TooLarge,
        }]
    );
}

#[test]
fn a_hostile_key_is_reported_shortened() {
    let mut spec = super::spec();
    let key = "k".repeat(10_000);
    spec.gateway.labels = map(&[(&key, "v")]);
    let rendered = render(&spec);
    let message = rendered.dropped[0].to_string();
    assert!(message.len() < 200, "{message}");
}

#[test]
fn the_secrets_hash_changes_only_the_pod_template_annotation() {
    let before = render(&autoscaling_spec());
    let mut spec = autoscaling_spec();
    spec.secrets.content_hash = "9e77aa01".to_owned();
    let after = render(&spec);

    let annotations = |r: &Rendered| {
        template(r)
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .clone()
            .unwrap()
    };
    assert_eq!(annotations(&before)["culvert.dev/secrets-hash"], "3b1f0c9a");
    assert_eq!(annotations(&after)["culvert.dev/secrets-hash"], "9e77aa01");

    // Put the old hash back into the new render: everything else is identical.
    let mut restored = after.clone();
    let template = &mut restored.deployment.spec.as_mut().unwrap().template;
    template
        .metadata
        .as_mut()
        .unwrap()
        .annotations
        .as_mut()
        .unwrap()
        .insert("culvert.dev/secrets-hash".to_owned(), "3b1f0c9a".to_owned());
    assert_eq!(restored, before);
}

#[test]
fn gateway_ref_reads_a_gateway() {
    let gateway = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "edge", "namespace": "tenant-a", "uid": "u-1"},
        "spec": {
            "gatewayClassName": "culvert",
            "infrastructure": {
                "labels": {"team": "payments"},
                "annotations": {"example.com/owner": "ops"},
                "parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "edge"}
            },
            "listeners": []
        }
    }))
    .unwrap();
    let read = GatewayRef::from_gateway(&gateway);
    assert_eq!(
        read,
        GatewayRef {
            owner: OwnerKind::Gateway,
            namespace: "tenant-a".to_owned(),
            name: "edge".to_owned(),
            uid: "u-1".to_owned(),
            class_name: "culvert".to_owned(),
            labels: map(&[("team", "payments")]),
            annotations: map(&[("example.com/owner", "ops")]),
        }
    );
}
