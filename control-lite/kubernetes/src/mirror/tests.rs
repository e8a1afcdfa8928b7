use super::*;
use crate::kinds::by_kind;
use serde_json::json;

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn route(name: &str, rv: &str) -> DynamicObject {
    // List items of any kind may arrive without apiVersion and kind.
    object(json!({
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv, "generation": 2},
        "spec": {"parentRefs": [{"name": "edge"}]},
        "status": {"parents": []}
    }))
}

fn list(mirror: &mut Mirror, kind: &'static WatchedKind, objects: Vec<DynamicObject>) {
    mirror.handle(kind, Event::Init);
    for o in objects {
        mirror.handle(kind, Event::InitApply(o));
    }
    mirror.handle(kind, Event::InitDone);
}

#[test]
fn ready_only_once_every_kind_is_listed() {
    let mut mirror = Mirror::new();
    for kind in &WATCHED[..WATCHED.len() - 1] {
        list(&mut mirror, kind, Vec::new());
    }
    assert!(!mirror.ready());
    assert_eq!(mirror.unlisted(), vec!["gatewayconfigs"]);
    // A CRD that is not installed counts as listed and empty.
    assert!(mirror.absent(by_kind("GatewayConfig").unwrap()));
    assert!(mirror.ready());
}

#[test]
fn a_relist_drops_objects_deleted_while_away() {
    let kind = by_kind("HTTPRoute").unwrap();
    let mut mirror = Mirror::new();
    list(&mut mirror, kind, vec![route("a", "1"), route("b", "2")]);
    assert_eq!(mirror.store().http_routes.len(), 2);
    // Objects applied during a relist are not visible until it is done.
    mirror.handle(kind, Event::Init);
    mirror.handle(kind, Event::InitApply(route("b", "5")));
    assert_eq!(mirror.store().http_routes.len(), 2);
    mirror.handle(kind, Event::InitDone);
    let names: Vec<_> = mirror
        .store()
        .http_routes
        .keys()
        .map(|k| k.1.clone())
        .collect();
    assert_eq!(names, vec!["b"]);
    let key = ObjectKey::new("HTTPRoute", "default", "b");
    assert_eq!(mirror.observed()[&key].resource_version, "5");
    assert_eq!(mirror.observed()[&key].generation, 2);
    assert!(
        !mirror
            .observed()
            .contains_key(&ObjectKey::new("HTTPRoute", "default", "a"))
    );
}

#[test]
fn a_malformed_object_is_left_out_and_reported() {
    let kind = by_kind("HTTPRoute").unwrap();
    let mut mirror = Mirror::new();
    list(&mut mirror, kind, vec![route("good", "1")]);
    let bad = object(json!({
        "metadata": {"name": "bad", "namespace": "default", "resourceVersion": "3"},
        "spec": {"parentRefs": "not a list"}
    }));
    assert!(mirror.handle(kind, Event::Apply(bad)));
    let key = ObjectKey::new("HTTPRoute", "default", "bad");
    assert!(
        mirror.malformed().contains_key(&key),
        "{:?}",
        mirror.malformed()
    );
    assert_eq!(mirror.store().http_routes.len(), 1);
    // Fixed: back in the store, no longer reported.
    mirror.handle(kind, Event::Apply(route("bad", "4")));
    assert!(mirror.malformed().is_empty());
    assert_eq!(mirror.store().http_routes.len(), 2);
    mirror.handle(kind, Event::Delete(route("bad", "5")));
    assert_eq!(mirror.store().http_routes.len(), 1);
    assert!(!mirror.observed().contains_key(&key));
}

#[test]
fn namespaces_carry_their_name_label() {
    let kind = by_kind("Namespace").unwrap();
    let mut mirror = Mirror::new();
    list(
        &mut mirror,
        kind,
        vec![object(
            json!({"metadata": {"name": "team-a", "resourceVersion": "1"}}),
        )],
    );
    let labels = &mirror.store().namespaces["team-a"].metadata.labels;
    assert_eq!(
        labels
            .get(culvert_control_lite::store::NAME_LABEL)
            .map(String::as_str),
        Some("team-a")
    );
}

#[test]
fn a_status_write_keeps_the_store_and_refreshes_what_was_observed() {
    let kind = by_kind("HTTPRoute").unwrap();
    let mut mirror = Mirror::new();
    list(&mut mirror, kind, vec![route("web", "1")]);
    let mut written = serde_json::to_value(route("web", "2")).unwrap();
    written["status"] = json!({"parents": [{"controllerName": "x"}]});
    let written: DynamicObject = serde_json::from_value(written).unwrap();
    assert!(
        !mirror.handle(kind, Event::Apply(written)),
        "nothing translation reads changed"
    );
    let key = ObjectKey::new("HTTPRoute", "default", "web");
    assert_eq!(mirror.observed()[&key].resource_version, "2");
    assert_eq!(
        mirror.observed()[&key].status["parents"][0]["controllerName"],
        "x"
    );
    let mut edited = serde_json::to_value(route("web", "3")).unwrap();
    edited["metadata"]["labels"] = json!({"team": "a"});
    assert!(mirror.handle(kind, Event::Apply(serde_json::from_value(edited).unwrap())));
}

#[test]
fn a_gateway_keeps_its_advertised_addresses_and_nothing_else_of_its_status() {
    let kind = by_kind("Gateway").unwrap();
    let gateway = |rv: &str, address: &str, reason: &str| {
        object(json!({
            "metadata": {"name": "edge", "namespace": "default", "resourceVersion": rv},
            "spec": {"gatewayClassName": "culvert", "listeners": []},
            "status": {"addresses": [{"type": "Hostname", "value": address}],
                       "conditions": [{"type": "Accepted", "status": "True", "reason": reason}]}
        }))
    };
    let mut mirror = Mirror::new();
    list(
        &mut mirror,
        kind,
        vec![gateway("1", "a.cfargotunnel.com", "Accepted")],
    );
    let key = ("default".to_owned(), "edge".to_owned());
    let advertised = |mirror: &Mirror| {
        mirror.store().gateways[&key]
            .status
            .as_ref()
            .map(|s| s.addresses[0].value.clone())
    };
    assert_eq!(
        advertised(&mirror),
        Some(Some("a.cfargotunnel.com".to_owned()))
    );
    // A status write that changes only conditions costs no translation.
    assert!(!mirror.handle(
        kind,
        Event::Apply(gateway("2", "a.cfargotunnel.com", "Other"))
    ));
    // One that changes the advertised address does.
    assert!(mirror.handle(
        kind,
        Event::Apply(gateway("3", "b.cfargotunnel.com", "Other"))
    ));
    assert_eq!(
        advertised(&mirror),
        Some(Some("b.cfargotunnel.com".to_owned()))
    );
    assert_eq!(
        mirror.observed()[&ObjectKey::new("Gateway", "default", "edge")].status["conditions"][0]["reason"],
        "Other"
    );
}

#[test]
fn a_kind_watched_twice_loses_an_object_only_when_neither_watch_holds_it() {
    let watches: Vec<&'static WatchedKind> =
        WATCHED.iter().filter(|w| w.kind == "Secret").collect();
    let [tls, tokens] = watches[..] else {
        panic!("Secrets are watched twice");
    };
    let secret = |name: &str| {
        object(
            json!({"metadata": {"name": name, "namespace": "team"}, "type": "Opaque",
                      "data": {"token": "dG9rZW4="}}),
        )
    };
    let mut mirror = Mirror::new();
    list(&mut mirror, tls, vec![secret("both")]);
    list(&mut mirror, tokens, vec![secret("both"), secret("token")]);
    assert_eq!(mirror.store().secrets.len(), 2);
    // The TLS watch relists without either: the token watch still holds both.
    list(&mut mirror, tls, Vec::new());
    assert_eq!(mirror.store().secrets.len(), 2);
    // Deleted through the token watch, the one only it held goes.
    mirror.handle(tokens, Event::Delete(secret("token")));
    let names: Vec<_> = mirror.store().secrets.keys().map(|k| k.1.clone()).collect();
    assert_eq!(names, ["both"]);
    list(&mut mirror, tokens, Vec::new());
    assert!(mirror.store().secrets.is_empty());
}

#[test]
fn a_service_keeps_its_load_balancer_and_nothing_else_of_its_status() {
    let kind = by_kind("Service").unwrap();
    let service = |ip: &str| {
        object(json!({
            "metadata": {"name": "culvert-edge", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
            "status": {"loadBalancer": {"ingress": [{"ip": ip}]},
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))
    };
    let mut mirror = Mirror::new();
    list(&mut mirror, kind, vec![service("203.0.113.7")]);
    let key = ("default".to_owned(), "culvert-edge".to_owned());
    let ingress = |mirror: &Mirror| {
        mirror.store().services[&key]
            .status
            .as_ref()
            .map(|s| s.load_balancer.ingress.clone())
    };
    assert_eq!(
        ingress(&mirror).unwrap()[0].ip.as_deref(),
        Some("203.0.113.7")
    );
    // A new load balancer address is a change translation sees.
    assert!(mirror.handle(kind, Event::Apply(service("203.0.113.8"))));
    assert_eq!(
        ingress(&mirror).unwrap()[0].ip.as_deref(),
        Some("203.0.113.8")
    );
}
