//! Data-plane caps: the slot order as a table over `caps::over_cap`, then whole
//! translations checking what a Gateway over the cap and its routes say.

use super::tunnel_claims::{accepted, dedicated_plane, route_conditions, served};
use super::*;
use crate::model::ObjectMeta;
use crate::translate::admission::Seniority;
use crate::translate::admission::caps::{Request, over_cap};

fn request(namespace: &str, class: &str, day: u32, uid: &str, cap: Option<u32>) -> Request {
    let key = (namespace.to_owned(), format!("gw-{uid}"));
    let metadata = ObjectMeta {
        creation_timestamp: Some(format!("2026-01-{day:02}T00:00:00Z")),
        uid: Some(uid.to_owned()),
        ..Default::default()
    };
    Request {
        namespace: namespace.to_owned(),
        class: class.to_owned(),
        seniority: Seniority::of(&key, &metadata),
        cap,
    }
}

#[test]
fn slots_go_oldest_first_per_class_and_namespace() {
    let cases: Vec<(&str, Vec<Request>, Vec<bool>)> = vec![
        (
            "no cap",
            vec![
                request("a", "c", 1, "1", None),
                request("a", "c", 2, "2", None),
            ],
            vec![false, false],
        ),
        (
            "the newest past the cap is refused, whatever the input order",
            vec![
                request("a", "c", 3, "3", Some(2)),
                request("a", "c", 1, "1", Some(2)),
                request("a", "c", 2, "2", Some(2)),
                request("b", "c", 9, "9", Some(2)),
            ],
            vec![true, false, false, false],
        ),
        (
            "the UID orders Gateways of the same instant",
            vec![
                request("a", "c", 1, "b", Some(1)),
                request("a", "c", 1, "a", Some(1)),
            ],
            vec![true, false],
        ),
        (
            "0 allows none",
            vec![
                request("a", "c", 1, "1", Some(0)),
                request("b", "c", 1, "2", Some(0)),
            ],
            vec![true, true],
        ),
        (
            "each class counts its own Gateways",
            vec![
                request("a", "c", 1, "1", Some(1)),
                request("a", "d", 2, "2", Some(1)),
            ],
            vec![false, false],
        ),
    ];
    for (name, requests, expected) in cases {
        let refused: Vec<bool> = over_cap(&requests).iter().map(Option::is_some).collect();
        assert_eq!(refused, expected, "{name}");
    }
    let zero = over_cap(&[request("a", "c", 1, "1", Some(0))]);
    assert!(
        zero[0]
            .as_deref()
            .unwrap()
            .contains("no dedicated data plane")
    );
}

fn capped(cap: u32) -> Translation {
    let mut objects = base();
    objects[1]["spec"]["parametersRef"] =
        json!({"group": "culvert.dev", "kind": "GatewayClassConfig", "name": "policy"});
    objects.push(json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayClassConfig",
                        "metadata": {"name": "policy"}, "spec": {"maxDataPlanesPerNamespace": cap}}));
    objects.extend(dedicated_plane("team-a", "first", "2026-01-01T00:00:00Z"));
    objects.extend(dedicated_plane("team-a", "second", "2026-01-02T00:00:00Z"));
    // Another namespace has slots of its own.
    objects.extend(dedicated_plane("team-b", "other", "2026-01-03T00:00:00Z"));
    run(objects)
}

fn assert_over_cap(t: &Translation, namespace: &str, name: &str) {
    let (status, reason, message) = accepted(t, namespace, name);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "DataPlaneQuotaExceeded"),
        "{name}"
    );
    assert!(message.contains("maxDataPlanesPerNamespace"), "{message}");
    assert!(!served(t, namespace, name), "{name}");
    assert_eq!(
        t.refused_planes
            .get(&(namespace.to_owned(), name.to_owned())),
        Some(&PlaneRefusal::DataPlaneQuotaExceeded)
    );
    let route = route_conditions(t, namespace, name);
    assert_eq!(
        (route[0].status.as_str(), route[0].reason.as_str()),
        ("False", "DataPlaneQuotaExceeded")
    );
    assert!(route[0].message.contains("maxDataPlanesPerNamespace"));
}

#[test]
fn a_gateway_past_the_cap_gets_no_plane_and_its_routes_say_why() {
    let t = capped(2);
    for (namespace, name) in [
        ("team-a", "first"),
        ("team-a", "second"),
        ("team-b", "other"),
    ] {
        assert!(served(&t, namespace, name), "{name}");
    }
    // Lowering the cap refuses the newest plane above it.
    let t = capped(1);
    assert!(served(&t, "team-a", "first"));
    assert_over_cap(&t, "team-a", "second");
    assert!(served(&t, "team-b", "other"));
    // 0 allows no dedicated plane; the shared plane serves on.
    let t = capped(0);
    for (namespace, name) in [
        ("team-a", "first"),
        ("team-a", "second"),
        ("team-b", "other"),
    ] {
        assert_over_cap(&t, namespace, name);
    }
    assert_eq!(accepted(&t, "infra", "edge").0, "True");
}

#[test]
fn a_gateway_whose_parameters_do_not_resolve_still_holds_its_slot() {
    let mut objects = base();
    objects[1]["spec"]["parametersRef"] =
        json!({"group": "culvert.dev", "kind": "GatewayClassConfig", "name": "policy"});
    objects.push(
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayClassConfig",
                        "metadata": {"name": "policy"}, "spec": {"maxDataPlanesPerNamespace": 1}}),
    );
    let mut broken = dedicated_plane("team-a", "broken", "2026-01-01T00:00:00Z");
    broken.remove(1); // its GatewayConfig
    objects.extend(broken);
    objects.extend(dedicated_plane("team-a", "newer", "2026-01-02T00:00:00Z"));
    let t = run(objects);
    assert_eq!(accepted(&t, "team-a", "broken").1, "InvalidParameters");
    assert_over_cap(&t, "team-a", "newer");
}
