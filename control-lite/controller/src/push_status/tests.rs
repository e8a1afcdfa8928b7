#![allow(
    clippy::disallowed_methods,
    reason = "tests give the state machine real instants"
)]
use super::*;
use crate::push::{Failure, PodFailure};
use culvert_control_lite::model::{
    GatewayStatus, ObjectKey, ParentReference, RouteParentStatus, RouteStatus,
};
use std::time::{Duration, Instant};

fn condition(kind: &str, status: bool, reason: &str) -> Condition {
    Condition::new(kind, status, reason, "", 4)
}

/// Gateways `team/edge` (dedicated) and `team/shared`, each Accepted and
/// Programmed, and a route accepted by both.
fn translation() -> Translation {
    let mut t = Translation::default();
    for (name, plane) in [
        (
            "edge",
            DataPlaneId::Dedicated(("team".to_owned(), "edge".to_owned())),
        ),
        ("shared", DataPlaneId::Shared("culvert".to_owned())),
    ] {
        let key = ("team".to_owned(), name.to_owned());
        t.gateway_planes.insert(key.clone(), plane);
        t.gateways.insert(
            key,
            GatewayStatus {
                conditions: vec![
                    condition("Accepted", true, "Accepted"),
                    condition("Programmed", true, "Programmed"),
                ],
                ..GatewayStatus::default()
            },
        );
    }
    let parent = |name: &str| RouteParentStatus {
        parent_ref: ParentReference {
            group: None,
            kind: None,
            namespace: None,
            name: name.to_owned(),
            section_name: None,
            port: None,
        },
        controller_name: "culvert.dev/gateway-controller".to_owned(),
        conditions: vec![condition("Accepted", true, "Accepted")],
    };
    t.routes.insert(
        ObjectKey::new("HTTPRoute", "team", "web"),
        RouteStatus {
            parents: vec![parent("edge"), parent("shared")],
        },
    );
    t
}

/// A plane of `pods` pods, `serving` of which serve some config, `failing` of
/// which fail (for longer than the threshold when `sustained`).
fn summary(pods: usize, serving: usize, failing: usize, sustained: bool) -> PlaneSummary {
    let now = Instant::now();
    PlaneSummary {
        version: 3,
        hash: "abc".to_owned(),
        pods,
        current: serving.saturating_sub(1),
        serving,
        tunnel_pods: 0,
        reachable: serving,
        failing: (0..failing)
            .map(|i| PodFailure {
                pod: format!("10.0.0.{i}:8081").parse().unwrap(),
                error: Failure::Unauthorized,
                since: now - Duration::from_secs(90),
                attempts: 7,
                sustained,
            })
            .collect(),
        sustained,
    }
}

fn with(summary: Option<PlaneSummary>) -> Translation {
    let mut t = translation();
    let mut summaries = Summaries::new();
    if let Some(summary) = summary {
        summaries.insert(PlaneKey::new("team", "edge"), summary);
    }
    overlay(&mut t, &summaries, None);
    t
}

fn gateway(t: &Translation, name: &str, kind: &str) -> (String, String, String) {
    let c = t.gateways[&("team".to_owned(), name.to_owned())]
        .conditions
        .iter()
        .find(|c| c.kind == kind)
        .unwrap_or_else(|| panic!("{name} has no {kind}"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[test]
fn pushes_decide_proxy_config_pushed_and_hold_programmed_until_a_pod_serves() {
    let cases = [
        (None, ("False", PENDING), ("False", PENDING)),
        (
            Some(summary(0, 0, 0, false)),
            ("False", PENDING),
            ("False", PENDING),
        ),
        (
            Some(summary(2, 0, 0, false)),
            ("False", PENDING),
            ("False", PENDING),
        ),
        (
            Some(summary(2, 1, 1, false)),
            ("False", PENDING),
            ("True", "Programmed"),
        ),
        (
            Some(summary(2, 2, 0, false)),
            ("True", PUSHED),
            ("True", "Programmed"),
        ),
        // A sustained failure says so without taking Programmed from a plane
        // that serves.
        (
            Some(summary(2, 1, 1, true)),
            ("False", PUSH_FAILED),
            ("True", "Programmed"),
        ),
    ];
    for (summary, pushed, programmed) in cases {
        let described = format!("{summary:?}");
        let t = with(summary);
        let (status, reason, message) = gateway(&t, "edge", PROXY_CONFIG_PUSHED);
        assert_eq!((status.as_str(), reason.as_str()), pushed, "{described}");
        let (status, reason, _) = gateway(&t, "edge", "Programmed");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            programmed,
            "{described}"
        );
        assert_eq!(
            gateway(&t, "edge", "Accepted").0,
            "True",
            "Accepted is never touched"
        );
        assert!(
            !message.contains("10.0.0"),
            "no addresses in the message: {message}"
        );
        // The route's entry for the dedicated Gateway says the same; the shared
        // Gateway's entry and the shared Gateway itself are left alone.
        let route = &t.routes[&ObjectKey::new("HTTPRoute", "team", "web")];
        let on = |name: &str| {
            route
                .parents
                .iter()
                .find(|p| p.parent_ref.name == name)
                .unwrap()
                .conditions
                .iter()
                .find(|c| c.kind == PROXY_CONFIG_PUSHED)
                .map(|c| (c.status.clone(), c.reason.clone()))
        };
        assert_eq!(on("edge"), Some((pushed.0.to_owned(), pushed.1.to_owned())));
        assert_eq!(on("shared"), None);
        let shared = &t.gateways[&("team".to_owned(), "shared".to_owned())];
        assert_eq!(shared.conditions.len(), 2);
    }
}

#[test]
fn messages_hold_counts_and_failure_kinds_only() {
    let t = with(Some(summary(3, 1, 2, true)));
    let (_, _, message) = gateway(&t, "edge", PROXY_CONFIG_PUSHED);
    assert_eq!(
        message,
        "pushes to 2 of 3 pods keep failing (unauthorized) (config version 3)"
    );
    // The routes' entries leave the version out, so a route change does not
    // rewrite every route's status.
    let route = &t.routes[&ObjectKey::new("HTTPRoute", "team", "web")];
    let on_route = route.parents[0]
        .conditions
        .iter()
        .find(|c| c.kind == PROXY_CONFIG_PUSHED)
        .unwrap();
    assert_eq!(
        on_route.message,
        "pushes to 2 of 3 pods keep failing (unauthorized)"
    );
    // The same state twice gives the same status: nothing to write.
    assert_eq!(with(Some(summary(3, 1, 2, true))).gateways, t.gateways);
}

#[test]
fn a_shared_plane_s_pushes_reach_its_gateways_without_the_version() {
    let mut t = translation();
    let mut summaries = Summaries::new();
    summaries.insert(
        PlaneKey::new("culvert-system", "gatewayclass/culvert"),
        summary(2, 0, 0, false),
    );
    overlay(&mut t, &summaries, Some("culvert-system"));
    assert_eq!(
        gateway(&t, "shared", "Programmed").0,
        "False",
        "no pod of the class's plane serves yet"
    );
    let (status, reason, message) = gateway(&t, "shared", PROXY_CONFIG_PUSHED);
    assert_eq!((status.as_str(), reason.as_str()), ("False", PENDING));

    summaries.insert(
        PlaneKey::new("culvert-system", "gatewayclass/culvert"),
        summary(2, 2, 0, false),
    );
    let mut t = translation();
    overlay(&mut t, &summaries, Some("culvert-system"));
    assert_eq!(gateway(&t, "shared", "Programmed").0, "True");
    let (status, reason, message_after) = gateway(&t, "shared", PROXY_CONFIG_PUSHED);
    assert_eq!((status.as_str(), reason.as_str()), ("True", PUSHED));
    assert!(
        !message_after.contains("version") && !message.contains("version"),
        "one route change must not rewrite every shared Gateway: {message_after}"
    );

    // Without shared planes (culvert serve --kubernetes), shared Gateways are left alone.
    let mut t = translation();
    overlay(&mut t, &summaries, None);
    assert!(
        t.gateways[&("team".to_owned(), "shared".to_owned())]
            .conditions
            .iter()
            .all(|c| c.kind != PROXY_CONFIG_PUSHED)
    );
}

#[test]
fn a_tunnel_plane_is_programmed_only_once_a_pod_has_a_registered_connection() {
    let mut unregistered = summary(2, 2, 0, false);
    unregistered.tunnel_pods = 2;
    unregistered.reachable = 0;
    let t = with(Some(unregistered.clone()));
    let (status, reason, message) = gateway(&t, "edge", "Programmed");
    assert_eq!((status.as_str(), reason.as_str()), ("False", PENDING));
    assert!(message.contains("tunnel"), "{message}");
    assert_eq!(
        gateway(&t, "edge", PROXY_CONFIG_PUSHED).0,
        "True",
        "the pushes themselves landed"
    );

    let mut registered = unregistered;
    registered.reachable = 1;
    let t = with(Some(registered));
    assert_eq!(gateway(&t, "edge", "Programmed").0, "True");
}
