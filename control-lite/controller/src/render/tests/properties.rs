//! Properties over generated Gateways: whatever the names, labels and annotations,
//! rendering never panics, names are valid, Culvert's labels and the selector are
//! untouched, and every entry is either kept as given or reported.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{own_labels, selector, spec, template};
use crate::render::labels::{check_key, check_label_value};
use crate::render::names::{MAX_NAME, PlaneNames};
use crate::render::{DropReason, MetadataKind};

/// Strings that are often almost valid: name characters plus a few hostile ones.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Z0-9./_ é-]{{0,{max}}}")).expect("a valid regex")
}

fn entries() -> impl Strategy<Value = BTreeMap<String, String>> {
    let key = prop_oneof![
        text(80),
        Just("app.kubernetes.io/name".to_owned()),
        Just("app.kubernetes.io/instance".to_owned()),
        Just("culvert.dev/secrets-hash".to_owned()),
    ];
    proptest::collection::btree_map(key, text(80), 0..8)
}

fn dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_NAME
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

proptest! {
    #[test]
    fn names_are_always_valid_and_stable(gateway in any::<String>()) {
        let names = PlaneNames::new(&gateway);
        prop_assert!(dns_label(&names.workload), "{}", names.workload);
        prop_assert!(dns_label(&names.config_service), "{}", names.config_service);
        prop_assert_eq!(&names.config_service, &format!("{}-config", names.workload));
        prop_assert!(!names.instance_label.is_empty());
        prop_assert!(check_label_value(&names.instance_label).is_ok());
        prop_assert_eq!(names, PlaneNames::new(&gateway));
    }

    #[test]
    fn infrastructure_entries_are_kept_or_reported(
        name in text(300),
        labels in entries(),
        annotations in entries(),
    ) {
        let mut spec = spec();
        // A Gateway always has a name; an empty one is refused, not rendered.
        spec.gateway.name = format!("g{name}");
        spec.gateway.labels = labels.clone();
        spec.gateway.annotations = annotations.clone();
        let rendered = crate::render::render(&spec).expect("renders");
        let meta = &rendered.deployment.metadata;
        let got = meta.labels.clone().unwrap_or_default();
        for (key, value) in &got {
            prop_assert!(check_key(key).is_ok(), "{key}");
            prop_assert!(check_label_value(value).is_ok(), "{key}={value}");
        }
        // Culvert's labels are all there; only the Gateway-derived values vary.
        for key in own_labels().keys() {
            prop_assert!(got.contains_key(key), "{key}");
        }
        prop_assert_eq!(&got[crate::render::label::NAME], &selector()[crate::render::label::NAME]);
        let match_labels = rendered.deployment.spec.as_ref().unwrap().selector.match_labels.clone().unwrap();
        prop_assert_eq!(match_labels.len(), 2);
        for (key, value) in &match_labels {
            prop_assert_eq!(got.get(key), Some(value));
        }
        // Every infrastructure entry is kept as given, or reported and left off
        // (a reserved label keeps Culvert's value).
        let got_annotations = meta.annotations.clone().unwrap_or_default();
        for (map, kept, kind) in [
            (&labels, &got, MetadataKind::Label),
            (&annotations, &got_annotations, MetadataKind::Annotation),
        ] {
            for (key, value) in map {
                match rendered.dropped.iter().find(|d| d.kind == kind && &d.key == key) {
                    None => prop_assert_eq!(kept.get(key), Some(value)),
                    Some(d) if d.reason == DropReason::Reserved => {
                        if kind == MetadataKind::Label {
                            prop_assert!(kept.contains_key(key));
                        }
                    }
                    Some(_) => prop_assert!(!kept.contains_key(key), "{key:?}"),
                }
            }
        }
        // The pod template's labels are the object's.
        prop_assert_eq!(template(&rendered).metadata.as_ref().unwrap().labels.as_ref(), Some(&got));
    }
}
