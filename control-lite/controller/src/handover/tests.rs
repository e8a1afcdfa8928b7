#![allow(
    clippy::disallowed_methods,
    reason = "tests give the state machine real instants"
)]
use super::*;
use crate::planes::wanted;
use crate::push::PlaneSummary;
use serde_json::json;

const SHARED_IN: &str = "culvert-system";

/// Gateway `team/edge` (listener 8080, a route to `www.example.com`), on a
/// dedicated plane when `dedicated`, else on the class's shared plane.
fn translated(dedicated: bool) -> (Wanted, Translation) {
    let mut gateway = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "edge", "namespace": "team", "uid": "u-1"},
        "spec": {"gatewayClassName": "culvert",
                 "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}});
    if dedicated {
        gateway["spec"]["infrastructure"] = json!({"parametersRef":
            {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    }
    let objects = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": "culvert", "uid": "c-1"},
               "spec": {"controllerName": "culvert.dev/gateway-controller"}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
               "metadata": {"name": "own", "namespace": "team"}, "spec": {}}),
        gateway,
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "web", "namespace": "team"},
               "spec": {"parentRefs": [{"name": "edge"}], "hostnames": ["www.example.com"],
                        "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team"},
               "spec": {"ports": [{"port": 80}]}}),
    ];
    let store = crate::testing::store(objects);
    let translation = crate::testing::translated(&store);
    (wanted(&store, &translation, Some(SHARED_IN)), translation)
}

fn shared_key() -> NamespacedName {
    (SHARED_IN.to_owned(), "gatewayclass/culvert".to_owned())
}

fn dedicated_key() -> NamespacedName {
    ("team".to_owned(), "edge".to_owned())
}

/// A plane whose one pod serves its current config and is reachable, or not.
fn summaries(entries: &[(NamespacedName, bool)]) -> Summaries {
    entries
        .iter()
        .map(|(key, serving)| {
            let n = usize::from(*serving);
            (
                PlaneKey::new(&key.0, &key.1),
                PlaneSummary {
                    version: 1,
                    hash: "h".to_owned(),
                    pods: 1,
                    current: n,
                    serving: n,
                    tunnel_pods: 0,
                    reachable: n,
                    failing: Vec::new(),
                    sustained: false,
                },
            )
        })
        .collect()
}

#[test]
fn a_gateway_stays_on_the_shared_plane_until_its_dedicated_plane_serves() {
    let mut handover = Handover::default();
    let t0 = Instant::now();

    // On the shared plane (translated before its pods reported anything).
    let (mut planes, translation) = translated(false);
    let nothing = Summaries::new();
    assert!(
        handover
            .adjust(&mut planes, &translation, &nothing, SHARED_IN, t0)
            .is_empty()
    );

    // It asks for a dedicated plane, which serves nothing yet: the shared plane,
    // which the translation dropped (it served this Gateway alone), is kept and
    // still serves the Gateway's routes.
    let (mut planes, translation) = translated(true);
    assert!(!planes.planes.contains_key(&shared_key()));
    let pending = summaries(&[(shared_key(), true), (dedicated_key(), false)]);
    let held = handover.adjust(&mut planes, &translation, &pending, SHARED_IN, t0);
    assert_eq!(held, Held::from([(dedicated_key(), shared_key())]));
    let shared = &planes.planes[&shared_key()].data_plane;
    assert_eq!(shared.listeners.len(), 1);
    assert_eq!(shared.http_routes[0].hostnames, ["www.example.com"]);
    assert!(
        planes.planes.contains_key(&dedicated_key()),
        "the new plane starts meanwhile"
    );

    // The dedicated plane serves: the move completes.
    let (mut planes, translation) = translated(true);
    let done = summaries(&[(shared_key(), true), (dedicated_key(), true)]);
    assert!(
        handover
            .adjust(&mut planes, &translation, &done, SHARED_IN, t0)
            .is_empty()
    );
    assert!(!planes.planes.contains_key(&shared_key()));
}

#[test]
fn a_hold_ends_after_the_longest_handover() {
    let mut handover = Handover::default();
    let t0 = Instant::now();
    let (mut planes, translation) = translated(false);
    handover.adjust(
        &mut planes,
        &translation,
        &summaries(&[(shared_key(), true)]),
        SHARED_IN,
        t0,
    );
    let pending = summaries(&[(shared_key(), true), (dedicated_key(), false)]);
    let (mut planes, translation) = translated(true);
    assert_eq!(
        handover
            .adjust(&mut planes, &translation, &pending, SHARED_IN, t0)
            .len(),
        1
    );
    let (mut planes, translation) = translated(true);
    let later = t0 + MAX_HANDOVER;
    assert!(
        handover
            .adjust(&mut planes, &translation, &pending, SHARED_IN, later)
            .is_empty()
    );
}

#[test]
fn a_gateway_never_served_anywhere_is_not_held() {
    let mut handover = Handover::default();
    let (mut planes, translation) = translated(true);
    let pending = summaries(&[(dedicated_key(), false)]);
    let before = planes.clone();
    assert!(
        handover
            .adjust(
                &mut planes,
                &translation,
                &pending,
                SHARED_IN,
                Instant::now()
            )
            .is_empty()
    );
    assert_eq!(planes, before);
}
