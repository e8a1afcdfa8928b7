//! Names within Kubernetes' limits, whatever the Gateway is called.

use std::collections::BTreeSet;

use super::{render, spec};
use crate::render::labels::{check_key, check_label_value};
use crate::render::names::{MAX_NAME, PlaneNames, base_name, label_value};

/// A DNS-1035 label: what a Service name must be.
fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_NAME
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

#[test]
fn short_names_are_kept() {
    let names = PlaneNames::new("edge");
    assert_eq!(names.workload, "culvert-edge");
    assert_eq!(names.config_service, "culvert-edge-config");
    assert_eq!(names.instance_label, "edge");
    assert_eq!(
        names.config_server_name("tenant-a"),
        "culvert-edge-config.tenant-a.svc"
    );
}

#[test]
fn a_name_that_just_fits_is_kept() {
    let gateway = "g".repeat(MAX_NAME - "culvert-".len() - "-config".len());
    let names = PlaneNames::new(&gateway);
    assert_eq!(names.config_service, format!("culvert-{gateway}-config"));
    assert_eq!(names.config_service.len(), MAX_NAME);
    assert_eq!(names.instance_label, gateway);
    // One more character and both names take the hash.
    let longer = format!("{gateway}g");
    let names = PlaneNames::new(&longer);
    assert_eq!(names.config_service.len(), MAX_NAME);
    assert_eq!(names.config_service, format!("{}-config", names.workload));
    assert_ne!(names.workload, format!("culvert-{longer}"));
}

#[test]
fn long_names_are_cut_with_a_hash() {
    let gateway = "a-very-long-gateway-name-".repeat(10);
    let gateway = gateway.trim_end_matches('-');
    let names = PlaneNames::new(gateway);
    for name in [&names.workload, &names.config_service] {
        assert!(is_dns_label(name), "{name}");
        assert!(name.len() <= MAX_NAME);
        assert!(
            name.starts_with("culvert-a-very-long-gateway-name-"),
            "{name}"
        );
    }
    assert!(names.config_service.ends_with("-config"));
    assert_eq!(names.workload.len(), MAX_NAME - "-config".len());
    assert_eq!(names.config_service.len(), MAX_NAME);
    // One stem for every object of the plane.
    assert_eq!(names.config_service, format!("{}-config", names.workload));
    assert!(check_label_value(&names.instance_label).is_ok());
    assert_eq!(names.instance_label.len(), MAX_NAME);

    // Two names sharing the first 200 characters still differ.
    let other = format!("{}-b", &gateway[..200]);
    let mine = format!("{}-a", &gateway[..200]);
    assert_ne!(PlaneNames::new(&other), PlaneNames::new(&mine));
}

#[test]
fn dotted_and_upper_case_names_become_dns_labels_without_colliding() {
    let dotted = PlaneNames::new("edge.example");
    let dashed = PlaneNames::new("edge-example");
    assert!(
        is_dns_label(&dotted.config_service),
        "{}",
        dotted.config_service
    );
    assert_eq!(dashed.config_service, "culvert-edge-example-config");
    assert_ne!(dotted.config_service, dashed.config_service);
    assert!(dotted.config_service.starts_with("culvert-edge-example-"));
    // Dots are fine in a label value.
    assert_eq!(dotted.instance_label, "edge.example");
    assert!(is_dns_label(&base_name("EDGE")));
    assert_ne!(base_name("EDGE"), base_name("edge"));
}

#[test]
fn hostile_names_never_panic_and_stay_valid() {
    let long = "é".repeat(300);
    let cases = [
        "",
        "-",
        ".",
        "---",
        "...",
        "é",
        "名前",
        "a/b",
        "a b",
        "UPPER",
        "-edge-",
        "edge-",
        long.as_str(),
        "\u{0}",
        "a\u{301}",
    ];
    let mut seen = BTreeSet::new();
    for gateway in cases {
        let names = PlaneNames::new(gateway);
        assert!(
            is_dns_label(&names.workload),
            "{gateway:?}: {}",
            names.workload
        );
        assert!(
            is_dns_label(&names.config_service),
            "{gateway:?}: {}",
            names.config_service
        );
        assert!(!names.instance_label.is_empty(), "{gateway:?}");
        assert!(
            check_label_value(&names.instance_label).is_ok(),
            "{gateway:?}: {}",
            names.instance_label
        );
        seen.insert(names.workload);
    }
    assert_eq!(seen.len(), cases.len(), "hostile names collided: {seen:?}");
    assert!(check_label_value(&label_value(&long)).is_ok());
}

#[test]
fn a_long_gateway_renders_valid_objects() {
    let mut spec = spec();
    spec.gateway.name = format!("{}.example", "x".repeat(240));
    spec.gateway.class_name = "c".repeat(100);
    let rendered = render(&spec);
    let names = &rendered.names;
    assert_eq!(
        rendered.deployment.metadata.name.as_ref(),
        Some(&names.workload)
    );
    assert_eq!(
        rendered.config_service.metadata.name.as_ref(),
        Some(&names.config_service)
    );
    for (key, value) in rendered.deployment.metadata.labels.as_ref().unwrap() {
        assert!(check_key(key).is_ok(), "{key}");
        assert!(check_label_value(value).is_ok(), "{key}={value}");
    }
    // The owner reference keeps the real name.
    let owner = &rendered
        .deployment
        .metadata
        .owner_references
        .as_ref()
        .unwrap()[0];
    assert_eq!(owner.name, spec.gateway.name);
    // The drain hook names the certificate's server name.
    let hook = super::container(&rendered)
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref())
        .and_then(|h| h.exec.as_ref())
        .and_then(|e| e.command.as_ref())
        .unwrap();
    assert_eq!(
        hook.last(),
        Some(&format!("{}.tenant-a.svc", names.config_service))
    );
}
