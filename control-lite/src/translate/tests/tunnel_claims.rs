//! Tunnel claims: the arbitration as a table over `tunnel_claims::arbitrate`, then
//! whole translations checking what a refused or shared Gateway and its routes say.

use super::*;
use crate::translate::admission::Seniority;
use crate::translate::admission::tunnel_claims::{Claim, Outcome, arbitrate};
use culvert_tunnel_proto::{TunnelToken, Uuid};
use std::collections::BTreeSet;

fn tunnel(n: u8) -> Uuid {
    Uuid::from_bytes([n; 16])
}

/// A first-time, unchecked claim of `namespace/name` on tunnel `n`, created on
/// `day` of January 2026.
fn claim(namespace: &str, name: &str, day: u32, n: u8) -> Claim {
    let key = (namespace.to_owned(), name.to_owned());
    let created = format!("2026-01-{day:02}T00:00:00Z");
    let metadata = crate::model::ObjectMeta {
        creation_timestamp: Some(created),
        uid: Some(format!("uid-{name}")),
        ..Default::default()
    };
    Claim {
        seniority: Seniority::of(&key, &metadata),
        gateway: key,
        deleting: false,
        share_across: false,
        tunnel: Ok(tunnel(n)),
        advertised: None,
        proof: Proof::Unchecked,
    }
}

fn holding(mut claim: Claim) -> Claim {
    claim.advertised = claim.tunnel.as_ref().ok().copied();
    claim
}

fn proven(mut claim: Claim, proof: Proof) -> Claim {
    claim.proof = proof;
    claim
}

/// What a case expects of one claim: admitted, or refused with a message holding
/// this text.
#[derive(Debug)]
enum Expect {
    Admit,
    Refuse(&'static str),
}

struct Case {
    name: &'static str,
    claims: Vec<Claim>,
    class_tunnels: Vec<u8>,
    proof_available: bool,
    expect: Vec<Expect>,
}

fn cases() -> Vec<Case> {
    let mut same_instant = claim("b", "second", 3, 1);
    same_instant.seniority.uid = "uid-0".to_owned();
    let mut deleting = holding(claim("a", "leaving", 9, 1));
    deleting.deleting = true;
    let mut sharing_a = claim("a", "first", 1, 1);
    sharing_a.share_across = true;
    let mut sharing_b = claim("b", "second", 2, 1);
    sharing_b.share_across = true;
    let mut rotated = claim("a", "holder", 9, 1);
    rotated.tunnel = Err("Secret a/token with the tunnel token not found".to_owned());
    rotated.advertised = Some(tunnel(1));
    let mut unreadable = claim("a", "broken", 1, 1);
    unreadable.tunnel = Err("key \"token\" of Secret a/token is not base64".to_owned());
    vec![
        Case {
            name: "possession beats age among equal proof",
            claims: vec![claim("a", "old", 1, 1), holding(claim("b", "holder", 5, 1))],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![Expect::Refuse("served by Gateway b/holder"), Expect::Admit],
        },
        Case {
            name: "age decides between first-time claims",
            claims: vec![claim("b", "young", 5, 1), claim("a", "old", 1, 1)],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![Expect::Refuse("served by Gateway a/old"), Expect::Admit],
        },
        Case {
            name: "the UID decides between claims of the same instant",
            claims: vec![claim("a", "first", 3, 1), same_instant],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![Expect::Refuse("served by Gateway b/second"), Expect::Admit],
        },
        Case {
            name: "a confirmed claim beats an unchecked holder",
            claims: vec![
                holding(claim("a", "holder", 1, 1)),
                proven(claim("b", "owner", 5, 1), Proof::Confirmed),
            ],
            class_tunnels: vec![],
            proof_available: true,
            expect: vec![Expect::Refuse("served by Gateway b/owner"), Expect::Admit],
        },
        Case {
            name: "an unchecked holder keeps its tunnel against unchecked newcomers",
            claims: vec![holding(claim("a", "holder", 5, 1)), claim("b", "new", 1, 1)],
            class_tunnels: vec![],
            proof_available: true,
            expect: vec![Expect::Admit, Expect::Refuse("will be retried")],
        },
        Case {
            name: "a refuted claim contests nothing, however old and advertised",
            claims: vec![
                proven(holding(claim("a", "squatter", 1, 1)), Proof::Refuted),
                proven(claim("b", "owner", 5, 1), Proof::Confirmed),
            ],
            class_tunnels: vec![],
            proof_available: true,
            expect: vec![Expect::Refuse("did not confirm"), Expect::Admit],
        },
        Case {
            name: "an unchecked new claim waits for its check and contests nothing",
            claims: vec![
                claim("a", "early", 1, 1),
                proven(claim("b", "owner", 5, 1), Proof::Confirmed),
            ],
            class_tunnels: vec![],
            proof_available: true,
            expect: vec![Expect::Refuse("will be retried"), Expect::Admit],
        },
        Case {
            name: "Gateways of one namespace share a tunnel",
            claims: vec![claim("a", "one", 1, 1), claim("a", "two", 2, 1)],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![Expect::Admit, Expect::Admit],
        },
        Case {
            name: "other namespaces do not share without allowSharedTunnels",
            claims: vec![claim("a", "first", 1, 1), claim("b", "second", 2, 1)],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![Expect::Admit, Expect::Refuse("in another namespace")],
        },
        Case {
            name: "other namespaces share with allowSharedTunnels",
            claims: vec![sharing_a, sharing_b],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![Expect::Admit, Expect::Admit],
        },
        Case {
            name: "the class tunnel is the operator's",
            claims: vec![
                proven(claim("a", "first", 1, 1), Proof::Confirmed),
                claim("a", "other", 1, 2),
            ],
            class_tunnels: vec![1],
            proof_available: false,
            expect: vec![Expect::Refuse("GatewayClass's own tunnel"), Expect::Admit],
        },
        Case {
            name: "a Gateway being deleted keeps its tunnel until it is gone",
            claims: vec![
                deleting,
                proven(holding(claim("b", "owner", 1, 1)), Proof::Confirmed),
            ],
            class_tunnels: vec![],
            proof_available: true,
            expect: vec![Expect::Admit, Expect::Refuse("served by Gateway a/leaving")],
        },
        Case {
            name: "an advertised tunnel is held while the token cannot be read",
            claims: vec![rotated, claim("b", "newcomer", 1, 1)],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![
                Expect::Refuse("Secret a/token with the tunnel token not found"),
                Expect::Refuse("served by Gateway a/holder"),
            ],
        },
        Case {
            name: "an unreadable token without an address contests nothing",
            claims: vec![unreadable, claim("b", "newcomer", 5, 1)],
            class_tunnels: vec![],
            proof_available: false,
            expect: vec![Expect::Refuse("is not base64"), Expect::Admit],
        },
    ]
}

#[test]
fn arbitration_table() {
    for case in cases() {
        let class_tunnels: BTreeSet<Uuid> = case.class_tunnels.iter().map(|&n| tunnel(n)).collect();
        let outcomes = arbitrate(&case.claims, &class_tunnels, case.proof_available);
        assert_eq!(outcomes.len(), case.expect.len(), "{}", case.name);
        for ((outcome, expect), claim) in outcomes.iter().zip(&case.expect).zip(&case.claims) {
            match (outcome, expect) {
                (Outcome::Admit(t), Expect::Admit) => {
                    assert_eq!(Ok(*t), claim.tunnel, "{}", case.name);
                }
                (Outcome::Refuse(message), Expect::Refuse(text)) => {
                    assert!(message.contains(text), "{}: {message}", case.name);
                }
                (outcome, expect) => panic!(
                    "{}: {:?} got {outcome:?}, expected {expect:?}",
                    case.name, claim.gateway
                ),
            }
        }
    }
}

#[test]
fn a_refuted_claim_is_told_nothing_about_the_tunnel() {
    let claims = [
        proven(claim("a", "squatter", 1, 1), Proof::Refuted),
        proven(claim("b", "owner", 5, 1), Proof::Confirmed),
    ];
    let outcomes = arbitrate(&claims, &BTreeSet::new(), true);
    let Outcome::Refuse(message) = &outcomes[0] else {
        panic!("{outcomes:?}");
    };
    assert!(!message.contains(&tunnel(1).to_string()), "{message}");
    assert!(!message.contains("b/owner"), "{message}");
}

// --- Whole translations ---------------------------------------------------------

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
const SECRET_BYTES: &[u8] = b"the tunnel secret, 32 bytes long";

fn token(n: u8) -> String {
    TunnelToken {
        account_tag: ACCOUNT.to_owned(),
        tunnel_secret: SECRET_BYTES.to_vec(),
        tunnel_id: tunnel(n),
        endpoint: None,
    }
    .encode()
}

fn token_secret(namespace: &str, name: &str, token: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
           "type": "Opaque", "stringData": {"token": token}})
}

/// A dedicated Gateway with one HTTP listener, its GatewayConfig (named like it)
/// naming Secret `secret`, and an HTTPRoute `<name>-route` attached to it.
fn dedicated(namespace: &str, name: &str, created: &str, secret: &str) -> Vec<Value> {
    let mut objects = dedicated_plane(namespace, name, created);
    objects[1]["spec"] = json!({"tunnel": {"tokenRef": {"name": secret}}});
    objects
}

/// A dedicated Gateway with one HTTP listener, its GatewayConfig (named like it, no
/// tunnel), a grant to the backend, and an HTTPRoute `<name>-route` attached to it.
pub(super) fn dedicated_plane(namespace: &str, name: &str, created: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created,
                            "uid": format!("uid-{name}")},
               "spec": {"gatewayClassName": "culvert",
                        "infrastructure": {"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": name}},
                        "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
               "metadata": {"name": name, "namespace": namespace},
               "spec": {"replicas": 1}}),
        grant_all_to_web(namespace),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": format!("{name}-route"), "namespace": namespace, "creationTimestamp": created},
               "spec": {"parentRefs": [{"name": name}], "hostnames": [format!("{name}.example.com")],
                        "rules": [backend_rule()]}}),
    ]
}

/// The class's parameters: a GatewayClassConfig with this spec.
fn class_policy(objects: &mut Vec<Value>, spec: Value) {
    objects[1]["spec"]["parametersRef"] =
        json!({"group": "culvert.dev", "kind": "GatewayClassConfig", "name": "policy"});
    objects.push(
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayClassConfig",
                        "metadata": {"name": "policy"}, "spec": spec}),
    );
}

fn key(namespace: &str, name: &str) -> NamespacedName {
    (namespace.to_owned(), name.to_owned())
}

/// `(status, reason, message)` of a Gateway's `Accepted` condition.
pub(super) fn accepted(t: &Translation, namespace: &str, name: &str) -> (String, String, String) {
    let condition = t.gateways[&key(namespace, name)]
        .conditions
        .iter()
        .find(|c| c.kind == "Accepted")
        .unwrap();
    (
        condition.status.clone(),
        condition.reason.clone(),
        condition.message.clone(),
    )
}

pub(super) fn route_conditions(
    t: &Translation,
    namespace: &str,
    gateway: &str,
) -> Vec<crate::model::Condition> {
    let route = ObjectKey::new("HTTPRoute", namespace, &format!("{gateway}-route"));
    t.routes[&route].parents[0].conditions.clone()
}

pub(super) fn served(t: &Translation, namespace: &str, name: &str) -> bool {
    let id = DataPlaneId::Dedicated(key(namespace, name));
    t.data_planes.contains_key(&id) && t.gateway_planes.get(&key(namespace, name)) == Some(&id)
}

fn tunnel_hostname(n: u8) -> String {
    format!("{}.cfargotunnel.com", tunnel(n))
}

#[test]
fn a_contested_tunnel_is_refused_and_its_routes_say_why() {
    let mut objects = base();
    objects.extend(dedicated(
        "team-a",
        "owner",
        "2026-01-01T00:00:00Z",
        "tunnel",
    ));
    objects.push(token_secret("team-a", "tunnel", &token(1)));
    objects.extend(dedicated(
        "team-b",
        "claimant",
        "2026-01-02T00:00:00Z",
        "tunnel",
    ));
    objects.push(token_secret("team-b", "tunnel", &token(1)));
    let t = run(objects);

    assert_eq!(accepted(&t, "team-a", "owner").0, "True");
    assert!(served(&t, "team-a", "owner"));
    let address = &t.gateways[&key("team-a", "owner")].addresses;
    assert_eq!(address.len(), 1);
    assert_eq!(address[0].kind.as_deref(), Some("Hostname"));
    assert_eq!(
        address[0].value.as_deref(),
        Some(tunnel_hostname(1).as_str())
    );

    let (status, reason, message) = accepted(&t, "team-b", "claimant");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidParameters")
    );
    assert!(message.contains("team-a/owner"), "{message}");
    assert!(!served(&t, "team-b", "claimant"));
    assert!(!t.gateway_planes.contains_key(&key("team-b", "claimant")));
    assert_eq!(
        t.refused_planes.get(&key("team-b", "claimant")),
        Some(&PlaneRefusal::TunnelClaimRejected)
    );
    let route = route_conditions(&t, "team-b", "claimant");
    let route_accepted = route.iter().find(|c| c.kind == "Accepted").unwrap();
    assert_eq!(route_accepted.status, "False");
    assert_eq!(route_accepted.reason, "TunnelClaimRejected");
    assert!(
        route_accepted.message.contains("team-a/owner"),
        "{}",
        route_accepted.message
    );
    // One Gateway on the tunnel: nothing is shared.
    assert!(
        route_conditions(&t, "team-a", "owner")
            .iter()
            .all(|c| c.kind != "TunnelShared")
    );
}

#[test]
fn possession_keeps_a_tunnel_and_a_refused_holder_keeps_its_address() {
    let mut objects = base();
    objects.extend(dedicated(
        "team-a",
        "older",
        "2026-01-01T00:00:00Z",
        "tunnel",
    ));
    objects.push(token_secret("team-a", "tunnel", &token(1)));
    let mut holder = dedicated("team-b", "holder", "2026-01-05T00:00:00Z", "tunnel");
    holder[0]["status"] = json!({"addresses": [{"type": "Hostname", "value": tunnel_hostname(1)}]});
    objects.extend(holder);
    objects.push(token_secret("team-b", "tunnel", &token(1)));
    let t = run(objects.clone());
    assert_eq!(accepted(&t, "team-b", "holder").0, "True");
    assert_eq!(accepted(&t, "team-a", "older").1, "InvalidParameters");

    // The holder's token becomes unreadable: it is refused, yet keeps advertising
    // (and so holding) its tunnel.
    objects.retain(|o| !(o["kind"] == "Secret" && o["metadata"]["namespace"] == "team-b"));
    let t = run(objects);
    let (status, reason, message) = accepted(&t, "team-b", "holder");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidParameters")
    );
    assert!(message.contains("Secret team-b/tunnel"), "{message}");
    assert_eq!(
        t.gateways[&key("team-b", "holder")].addresses[0]
            .value
            .as_deref(),
        Some(tunnel_hostname(1).as_str())
    );
    assert_eq!(accepted(&t, "team-a", "older").1, "InvalidParameters");
}

#[test]
fn a_missing_or_broken_token_names_the_secret_and_never_the_token() {
    let mut objects = base();
    objects.extend(dedicated(
        "team-a",
        "missing",
        "2026-01-01T00:00:00Z",
        "nowhere",
    ));
    objects.extend(dedicated(
        "team-a",
        "broken",
        "2026-01-01T00:00:00Z",
        "garbage",
    ));
    let garbage = "bm90IGEgdG9rZW4gYXQgYWxs-secret-material";
    objects.push(token_secret("team-a", "garbage", garbage));
    let mut foreign = dedicated("team-a", "foreign", "2026-01-01T00:00:00Z", "elsewhere");
    foreign[1]["spec"]["tunnel"]["tokenRef"]["namespace"] = json!("team-b");
    objects.extend(foreign);
    objects.push(token_secret("team-b", "elsewhere", &token(1)));
    let t = run(objects);
    for (name, text) in [
        ("missing", "Secret team-a/nowhere"),
        ("broken", "Secret team-a/garbage"),
        ("foreign", "the Gateway's namespace"),
    ] {
        let (status, reason, message) = accepted(&t, "team-a", name);
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "InvalidParameters"),
            "{name}"
        );
        assert!(message.contains(text), "{name}: {message}");
        assert!(
            !message.contains(garbage) && !message.contains("secret-material"),
            "{message}"
        );
        assert!(!served(&t, "team-a", name), "{name}");
        // Its own parameters are at fault, not a contest: the routes say so, and
        // the refusal lets a plane already running keep its last config.
        let route = route_conditions(&t, "team-a", name);
        assert_eq!(route[0].reason, "InvalidParameters", "{name}");
        assert_eq!(
            t.refused_planes[&("team-a".to_owned(), name.to_owned())],
            PlaneRefusal::ConfigUnresolved,
            "{name}"
        );
    }
}

#[test]
fn the_class_tunnel_is_not_claimable() {
    let mut objects = base();
    class_policy(
        &mut objects,
        json!({"tunnel": {"tokenRef": {"name": "class-tunnel", "namespace": "culvert-system"}}}),
    );
    objects.push(token_secret("culvert-system", "class-tunnel", &token(7)));
    objects.extend(dedicated(
        "team-a",
        "claimant",
        "2026-01-01T00:00:00Z",
        "tunnel",
    ));
    objects.push(token_secret("team-a", "tunnel", &token(7)));
    let t = run(objects);
    assert_eq!(t.gateway_classes["culvert"].conditions[0].status, "True");
    let (status, reason, message) = accepted(&t, "team-a", "claimant");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidParameters")
    );
    assert!(message.contains("GatewayClass"), "{message}");
    assert!(!served(&t, "team-a", "claimant"));
    let route = route_conditions(&t, "team-a", "claimant");
    assert_eq!(
        (route[0].status.as_str(), route[0].reason.as_str()),
        ("False", "TunnelClaimRejected")
    );
    // The shared plane serves on: infra/edge is not a dedicated Gateway.
    assert_eq!(accepted(&t, "infra", "edge").0, "True");
}

/// A checker with Cloudflare credentials that knows these verdicts.
struct Known(Vec<(&'static str, Proof)>);

impl ClaimChecker for Known {
    fn available(&self) -> bool {
        true
    }

    fn proof(&self, gateway: &NamespacedName, token: &TunnelToken) -> Proof {
        assert_eq!(
            token.tunnel_secret, SECRET_BYTES,
            "the checker sees the whole token"
        );
        self.0
            .iter()
            .find(|(name, _)| *name == gateway.1)
            .map_or(Proof::Unchecked, |(_, proof)| *proof)
    }
}

#[test]
fn unproven_claims_are_refused_and_contest_nothing() {
    let mut objects = base();
    for (namespace, name, created) in [
        ("team-a", "squatter", "2026-01-01T00:00:00Z"),
        ("team-b", "owner", "2026-01-03T00:00:00Z"),
        ("team-c", "early", "2026-01-02T00:00:00Z"),
    ] {
        let mut gateway = dedicated(namespace, name, created, "tunnel");
        if name == "squatter" {
            gateway[0]["status"] =
                json!({"addresses": [{"type": "Hostname", "value": tunnel_hostname(1)}]});
        }
        objects.extend(gateway);
        objects.push(token_secret(namespace, "tunnel", &token(1)));
    }
    let mut options = options();
    options.claims = Box::new(Known(vec![
        ("squatter", Proof::Refuted),
        ("owner", Proof::Confirmed),
    ]));
    let store = Store::from_resources(
        objects
            .into_iter()
            .map(|v| Resource::from_value(v).unwrap()),
    );
    let t = translate(&store, &options);

    assert!(served(&t, "team-b", "owner"));
    assert_eq!(
        t.gateways[&key("team-b", "owner")].addresses[0]
            .value
            .as_deref(),
        Some(tunnel_hostname(1).as_str())
    );
    let (status, reason, message) = accepted(&t, "team-a", "squatter");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidParameters")
    );
    assert!(message.contains("did not confirm"), "{message}");
    assert!(!message.contains(&tunnel(1).to_string()), "{message}");
    assert!(!message.contains("team-b"), "{message}");
    let route = route_conditions(&t, "team-a", "squatter");
    assert_eq!(route[0].reason, "TunnelClaimRejected");
    assert!(
        !route[0].message.contains(&tunnel(1).to_string()),
        "{}",
        route[0].message
    );
    let (status, _, message) = accepted(&t, "team-c", "early");
    assert_eq!(status, "False");
    assert!(message.contains("will be retried"), "{message}");
    assert!(!served(&t, "team-c", "early"));
}

#[test]
fn an_unreadable_class_tunnel_refuses_the_class() {
    let mut objects = base();
    class_policy(
        &mut objects,
        json!({"tunnel": {"tokenRef": {"name": "absent", "namespace": "culvert-system", "key": "cf"}}}),
    );
    let t = run(objects);
    let condition = &t.gateway_classes["culvert"].conditions[0];
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "InvalidParameters")
    );
    assert!(
        condition.message.contains("Secret culvert-system/absent"),
        "{}",
        condition.message
    );
}

#[test]
fn routes_on_a_shared_tunnel_say_so() {
    // Two Gateways of one namespace share without asking.
    let mut objects = base();
    objects.extend(dedicated("team-a", "one", "2026-01-01T00:00:00Z", "tunnel"));
    objects.extend(dedicated("team-a", "two", "2026-01-02T00:00:00Z", "tunnel"));
    objects.push(token_secret("team-a", "tunnel", &token(1)));
    let t = run(objects);
    for (name, other) in [("one", "team-a/two"), ("two", "team-a/one")] {
        assert!(served(&t, "team-a", name));
        let route = route_conditions(&t, "team-a", name);
        let shared = route.iter().find(|c| c.kind == "TunnelShared").unwrap();
        assert_eq!(
            (shared.status.as_str(), shared.reason.as_str()),
            ("True", "TunnelSharedWithinNamespace")
        );
        assert!(shared.message.contains(other), "{}", shared.message);
    }

    // Across namespaces only with allowSharedTunnels, and then said so.
    let mut objects = base();
    objects.extend(dedicated("team-a", "one", "2026-01-01T00:00:00Z", "tunnel"));
    objects.push(token_secret("team-a", "tunnel", &token(1)));
    objects.extend(dedicated("team-b", "two", "2026-01-02T00:00:00Z", "tunnel"));
    objects.push(token_secret("team-b", "tunnel", &token(1)));
    let t = run(objects.clone());
    assert!(!served(&t, "team-b", "two"));
    class_policy(&mut objects, json!({"allowSharedTunnels": true}));
    let t = run(objects);
    for (namespace, name) in [("team-a", "one"), ("team-b", "two")] {
        assert!(served(&t, namespace, name));
        let route = route_conditions(&t, namespace, name);
        let shared = route.iter().find(|c| c.kind == "TunnelShared").unwrap();
        assert_eq!(shared.reason, "TunnelSharedAcrossNamespaces");
    }
}

#[test]
fn a_gateway_being_deleted_keeps_its_tunnel() {
    let mut objects = base();
    let mut leaving = dedicated("team-a", "leaving", "2026-01-05T00:00:00Z", "tunnel");
    leaving[0]["metadata"]["deletionTimestamp"] = json!("2026-02-01T00:00:00Z");
    objects.extend(leaving);
    objects.push(token_secret("team-a", "tunnel", &token(1)));
    objects.extend(dedicated(
        "team-b",
        "older",
        "2026-01-01T00:00:00Z",
        "tunnel",
    ));
    objects.push(token_secret("team-b", "tunnel", &token(1)));
    let t = run(objects);
    assert!(served(&t, "team-a", "leaving"));
    assert_eq!(accepted(&t, "team-b", "older").1, "InvalidParameters");
}
