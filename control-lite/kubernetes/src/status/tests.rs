use super::*;
use culvert_control_lite::model::{ParentReference, RouteParentStatus, RouteStatus};
use serde_json::json;

const OURS: &str = "culvert.dev/gateway-controller";
const NOW: &str = "2026-12-04T12:00:00Z";

fn condition(kind: &str, status: bool, reason: &str) -> Condition {
    Condition::new(kind, status, reason, "", 3)
}

fn route_translation(parent: &str, accepted: bool) -> (Translation, ObjectKey) {
    let key = ObjectKey::new("HTTPRoute", "default", "web");
    let mut translation = Translation::default();
    translation.routes.insert(
        key.clone(),
        RouteStatus {
            parents: vec![RouteParentStatus {
                parent_ref: ParentReference {
                    group: None,
                    kind: None,
                    namespace: None,
                    name: parent.to_owned(),
                    section_name: Some("http".to_owned()),
                    port: Some(8080),
                },
                controller_name: OURS.to_owned(),
                conditions: vec![condition(
                    "Accepted",
                    accepted,
                    if accepted {
                        "Accepted"
                    } else {
                        "NotAllowedByListeners"
                    },
                )],
            }],
        },
    );
    (translation, key)
}

fn observed(status: Value) -> Observed {
    Observed {
        resource_version: "7".to_owned(),
        generation: 3,
        status,
        uid: None,
    }
}

#[test]
fn other_controllers_entries_stay_in_place_and_ours_are_replaced() {
    let (translation, key) = route_translation("edge", true);
    let stored = json!({"parents": [
        {"parentRef": {"name": "theirs"}, "controllerName": "example.com/other",
         "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                         "observedGeneration": 1, "lastTransitionTime": "2020-01-01T00:00:00Z"}]},
        {"parentRef": {"name": "old"}, "controllerName": OURS, "conditions": []}
    ]});
    let wanted = desired(&translation, &key, &observed(stored.clone()), OURS, NOW).unwrap();
    let parents = wanted["parents"].as_array().unwrap();
    assert_eq!(parents.len(), 2, "{wanted}");
    assert_eq!(
        parents[0], stored["parents"][0],
        "the other controller's entry is untouched"
    );
    // The parentRef is the spec's, as written: sectionName and port kept, no defaults added.
    assert_eq!(
        parents[1]["parentRef"],
        json!({"name": "edge", "sectionName": "http", "port": 8080})
    );
    assert_eq!(parents[1]["controllerName"], OURS);
    assert_eq!(parents[1]["conditions"][0]["observedGeneration"], 3);
    assert_eq!(parents[1]["conditions"][0]["lastTransitionTime"], NOW);
}

#[test]
fn an_unchanged_status_needs_no_write_and_keeps_its_transition_time() {
    let (translation, key) = route_translation("edge", true);
    let first = desired(&translation, &key, &observed(Value::Null), OURS, NOW).unwrap();
    // Written once; a later sync at a later time finds nothing to change.
    let later = "2026-12-04T13:00:00Z";
    assert_eq!(
        desired(&translation, &key, &observed(first.clone()), OURS, later),
        None
    );
    // A changed verdict gets a new transition time; the parent entry is replaced.
    let (refused, _) = route_translation("edge", false);
    let next = desired(&refused, &key, &observed(first), OURS, later).unwrap();
    assert_eq!(
        next["parents"][0]["conditions"][0]["lastTransitionTime"],
        later
    );
    assert_eq!(next["parents"][0]["conditions"][0]["status"], "False");
    assert_eq!(next["parents"].as_array().unwrap().len(), 1);
}

#[test]
fn a_route_that_left_our_gateways_loses_only_our_entries() {
    let key = ObjectKey::new("HTTPRoute", "default", "web");
    let translation = Translation::default();
    let stored = json!({"parents": [
        {"parentRef": {"name": "theirs"}, "controllerName": "example.com/other", "conditions": []},
        {"parentRef": {"name": "edge"}, "controllerName": OURS, "conditions": []}
    ]});
    let observed = observed(stored);
    let keys = candidates(&translation, [(&key, &observed)].into_iter(), OURS);
    assert_eq!(keys, vec![key.clone()]);
    let wanted = desired(&translation, &key, &observed, OURS, NOW).unwrap();
    assert_eq!(
        wanted,
        json!({"parents": [{"parentRef": {"name": "theirs"}, "controllerName": "example.com/other", "conditions": []}]})
    );
    // A route that never had an entry of ours is not a candidate.
    let foreign = self::observed(json!({"parents": []}));
    assert!(candidates(&translation, [(&key, &foreign)].into_iter(), OURS).is_empty());
}

#[test]
fn gateway_status_keeps_foreign_fields_and_listener_times() {
    use culvert_control_lite::model::{GatewayAddress, GatewayStatus, ListenerStatus};
    let key = ObjectKey::new("Gateway", "default", "edge");
    let mut translation = Translation::default();
    translation.gateways.insert(
        ("default".to_owned(), "edge".to_owned()),
        GatewayStatus {
            addresses: vec![GatewayAddress {
                kind: Some("IPAddress".to_owned()),
                value: Some("192.0.2.1".to_owned()),
            }],
            conditions: vec![condition("Accepted", true, "Accepted")],
            listeners: vec![ListenerStatus {
                name: "http".to_owned(),
                supported_kinds: Vec::new(),
                attached_routes: 2,
                conditions: vec![condition("Programmed", true, "Programmed")],
            }],
            attached_listener_sets: None,
        },
    );
    let stored = json!({
        "attachedListenerSets": 0,
        "listeners": [{"name": "http", "supportedKinds": [], "attachedRoutes": 1, "conditions": [
            {"type": "Programmed", "status": "True", "reason": "Programmed", "message": "",
             "observedGeneration": 2, "lastTransitionTime": "2020-01-01T00:00:00Z"}]}]
    });
    let wanted = desired(&translation, &key, &observed(stored), OURS, NOW).unwrap();
    assert_eq!(wanted["attachedListenerSets"], 0);
    assert_eq!(wanted["addresses"][0]["value"], "192.0.2.1");
    assert_eq!(wanted["listeners"][0]["attachedRoutes"], 2);
    assert_eq!(
        wanted["listeners"][0]["conditions"][0]["lastTransitionTime"],
        "2020-01-01T00:00:00Z"
    );
    assert_eq!(wanted["conditions"][0]["lastTransitionTime"], NOW);
}

#[test]
fn refusals_name_what_is_wrong() {
    let status = json!({"parents": [
        {"parentRef": {"name": "edge"}, "controllerName": OURS, "conditions": [
            {"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners", "message": "m"},
            {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "message": ""}]},
        {"parentRef": {"name": "x"}, "controllerName": "example.com/other", "conditions": [
            {"type": "Accepted", "status": "False", "reason": "Theirs", "message": ""}]}
    ]});
    assert_eq!(
        refusals(
            &Translation::default(),
            &ObjectKey::new("HTTPRoute", "default", "web"),
            &status,
            OURS
        ),
        vec![("NotAllowedByListeners".to_owned(), "m".to_owned())]
    );
    let gateway = json!({"conditions": [], "listeners": [{"name": "a", "conditions": [
        {"type": "Conflicted", "status": "True", "reason": "HostnameConflict", "message": "h"}]}]});
    assert_eq!(
        refusals(
            &Translation::default(),
            &ObjectKey::new("Gateway", "default", "edge"),
            &gateway,
            OURS
        ),
        vec![("HostnameConflict".to_owned(), "h".to_owned())]
    );
}

#[test]
fn refused_tcp_routes_and_listener_sets_are_written_like_their_kinds() {
    // A TCPRoute's entry is merged beside other controllers' like any route's, and
    // its refusal becomes an event.
    let (routes, _) = route_translation("edge", false);
    let tcp = ObjectKey::new("TCPRoute", "default", "web");
    let mut translation = Translation::default();
    translation
        .routes
        .insert(tcp.clone(), routes.routes.into_values().next().unwrap());
    let theirs = json!({"parentRef": {"name": "theirs"}, "controllerName": "example.com/other", "conditions": []});
    let wanted = desired(
        &translation,
        &tcp,
        &observed(json!({"parents": [theirs.clone()]})),
        OURS,
        NOW,
    )
    .unwrap();
    assert_eq!(wanted["parents"][0], theirs);
    assert_eq!(wanted["parents"][1]["conditions"][0]["status"], "False");
    assert_eq!(
        refusals(&translation, &tcp, &wanted, OURS),
        vec![("NotAllowedByListeners".to_owned(), String::new())]
    );
    // A ListenerSet's status is Culvert's whole when its Gateway is Culvert's.
    let set = ObjectKey::new("ListenerSet", "default", "extra");
    translation.listener_sets.insert(
        ("default".to_owned(), "extra".to_owned()),
        culvert_control_lite::model::ListenerSetStatus {
            conditions: vec![condition("Accepted", false, "NotAllowed")],
        },
    );
    let keys = candidates(&translation, std::iter::empty(), OURS);
    assert!(keys.contains(&tcp) && keys.contains(&set), "{keys:?}");
    let stored = json!({"conditions": [{"type": "Accepted", "status": "Unknown", "reason": "Pending",
                                        "message": "Waiting for controller", "lastTransitionTime": "1970-01-01T00:00:00Z"}]});
    let wanted = desired(&translation, &set, &observed(stored), OURS, NOW).unwrap();
    assert_eq!(wanted["conditions"].as_array().unwrap().len(), 1);
    assert_eq!(wanted["conditions"][0]["reason"], "NotAllowed");
    assert_eq!(wanted["conditions"][0]["lastTransitionTime"], NOW);
    assert_eq!(
        refusals(&translation, &set, &wanted, OURS),
        vec![("NotAllowed".to_owned(), String::new())]
    );
}

#[test]
fn policy_ancestors_are_merged_beside_other_controllers_and_dropped_when_unused() {
    use culvert_control_lite::model::{PolicyAncestorStatus, PolicyStatus};
    let key = ObjectKey::new("BackendTLSPolicy", "default", "web-tls");
    let mut translation = Translation::default();
    translation.backend_tls_policies.insert(
        ("default".to_owned(), "web-tls".to_owned()),
        PolicyStatus {
            ancestors: vec![PolicyAncestorStatus {
                ancestor_ref: ParentReference {
                    group: Some("gateway.networking.k8s.io".to_owned()),
                    kind: Some("Gateway".to_owned()),
                    namespace: Some("default".to_owned()),
                    name: "edge".to_owned(),
                    section_name: None,
                    port: None,
                },
                controller_name: OURS.to_owned(),
                conditions: vec![condition("Accepted", false, "NoValidCACertificate")],
            }],
        },
    );
    let theirs = json!({"ancestorRef": {"name": "mesh"}, "controllerName": "example.com/other", "conditions": []});
    let stored = json!({"ancestors": [theirs.clone(), {"ancestorRef": {"name": "old"}, "controllerName": OURS, "conditions": []}]});
    assert!(
        candidates(&translation, std::iter::empty(), OURS).contains(&key),
        "a policy translation covers is a candidate"
    );
    let wanted = desired(&translation, &key, &observed(stored.clone()), OURS, NOW).unwrap();
    let ancestors = wanted["ancestors"].as_array().unwrap();
    assert_eq!(ancestors.len(), 2, "{wanted}");
    assert_eq!(ancestors[0], theirs);
    assert_eq!(ancestors[1]["ancestorRef"]["name"], "edge");
    assert_eq!(
        ancestors[1]["conditions"][0]["reason"],
        "NoValidCACertificate"
    );
    assert_eq!(
        refusals(&translation, &key, &wanted, OURS),
        vec![("NoValidCACertificate".to_owned(), String::new())]
    );
    // Once no route of ours uses it, only our entries go.
    let empty = Translation::default();
    let observed = observed(stored);
    assert_eq!(
        candidates(&empty, [(&key, &observed)].into_iter(), OURS),
        vec![key.clone()]
    );
    let wanted = desired(&empty, &key, &observed, OURS, NOW).unwrap();
    assert_eq!(wanted, json!({"ancestors": [theirs]}));
}

#[test]
fn admission_refusals_and_shared_tunnels_are_warned_about() {
    use culvert_control_lite::translate::PlaneRefusal;
    let mut translation = Translation::default();
    let claimant = ObjectKey::new("Gateway", "team-b", "claimant");
    let capped = ObjectKey::new("Gateway", "team-a", "newer");
    let plain = ObjectKey::new("Gateway", "team-a", "plain");
    translation.refused_planes.insert(
        ("team-b".to_owned(), "claimant".to_owned()),
        PlaneRefusal::TunnelClaimRejected,
    );
    translation.refused_planes.insert(
        ("team-a".to_owned(), "newer".to_owned()),
        PlaneRefusal::DataPlaneQuotaExceeded,
    );
    let refused = |reason: &str, message: &str| {
        json!({"conditions": [
            {"type": "Accepted", "status": "False", "reason": reason, "message": message},
            {"type": "Programmed", "status": "False", "reason": "Invalid", "message": "gateway is not accepted"}],
               "listeners": [{"name": "http", "conditions": [
            {"type": "Accepted", "status": "False", "reason": "InvalidParameters", "message": "l"}]}]})
    };
    let served =
        "tunnel 01010101-0101-0101-0101-010101010101 is already served by Gateway team-a/owner";
    assert_eq!(
        refusals(
            &translation,
            &claimant,
            &refused("InvalidParameters", served),
            OURS
        ),
        vec![
            ("TunnelClaimRejected".to_owned(), served.to_owned()),
            ("Invalid".to_owned(), "gateway is not accepted".to_owned()),
            // A listener's own condition keeps its reason.
            ("InvalidParameters".to_owned(), "l".to_owned()),
        ]
    );
    let over = "namespace team-a already holds the 1 dedicated data plane(s)";
    assert_eq!(
        refusals(
            &translation,
            &capped,
            &refused("DataPlaneQuotaExceeded", over),
            OURS
        )[0],
        ("DataPlaneQuotaExceeded".to_owned(), over.to_owned())
    );
    // A Gateway refused for its spec keeps its condition's reason.
    assert_eq!(
        refusals(
            &translation,
            &plain,
            &refused("InvalidParameters", "m"),
            OURS
        )[0],
        ("InvalidParameters".to_owned(), "m".to_owned())
    );
    // A route on a shared tunnel, though accepted, is warned about.
    let route = ObjectKey::new("HTTPRoute", "team-a", "web");
    let shared = "tunnel 01010101-0101-0101-0101-010101010101 is also served by dedicated Gateway(s) team-a/two";
    let status = json!({"parents": [{"parentRef": {"name": "one"}, "controllerName": OURS, "conditions": [
        {"type": "Accepted", "status": "True", "reason": "Accepted", "message": ""},
        {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "message": ""},
        {"type": "TunnelShared", "status": "True", "reason": "TunnelSharedWithinNamespace", "message": shared}]}]});
    assert_eq!(
        refusals(&translation, &route, &status, OURS),
        vec![("TunnelShared".to_owned(), shared.to_owned())]
    );
}
