#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any error"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use culvert_cloudflare::{AccountId, ApiToken, ClaimProver, Client};
use culvert_control_lite::model::Resource;
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{
    ClaimChecker, FixedAddresses, NoClaimChecks, Options, Proof, translate,
};
use culvert_edge_sim::{EdgeSim, SimConfig};
use culvert_tunnel_proto::{TunnelToken, Uuid};
use serde_json::{Value, json};

use super::*;
use crate::cloudflare_sync::CredentialRef;
use crate::render::SecretKey;

const CONTROLLER: &str = "culvert.dev/gateway-controller";

fn token(account: &str, tunnel: u128, secret: u8) -> TunnelToken {
    TunnelToken {
        account_tag: account.to_owned(),
        tunnel_secret: vec![secret; 32],
        tunnel_id: Uuid::from_bytes(tunnel.to_be_bytes()),
        endpoint: None,
    }
}

fn key(namespace: &str, name: &str) -> NamespacedName {
    (namespace.to_owned(), name.to_owned())
}

/// A dedicated Gateway `namespace/name` whose GatewayConfig's tunnel token is
/// `token` (`None`: no token Secret), with `credentials` as its GatewayConfig's
/// `cloudflareCredentialsSecretRef`.
fn tenant(
    namespace: &str,
    name: &str,
    token: Option<&TunnelToken>,
    credentials: Option<Value>,
) -> Vec<Value> {
    let mut spec = json!({"tunnel": {"tokenRef": {"name": format!("{name}-tunnel")}}});
    if let Some(credentials) = credentials {
        spec["cloudflareCredentialsSecretRef"] = credentials;
    }
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
               "metadata": {"name": name, "namespace": namespace}, "spec": spec}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}")},
               "spec": {"gatewayClassName": "culvert",
                        "infrastructure": {"parametersRef": {"group": "culvert.dev",
                            "kind": "GatewayConfig", "name": name}},
                        "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
    ];
    if let Some(token) = token {
        objects.push(
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": format!("{name}-tunnel"), "namespace": namespace},
            "data": {"token": STANDARD.encode(token.encode())}}),
        );
    }
    objects
}

fn store(objects: Vec<Value>, class_credentials: bool) -> Store {
    let mut class_config = json!({"apiVersion": "culvert.dev/v1alpha1",
        "kind": "GatewayClassConfig", "metadata": {"name": "policy"}, "spec": {}});
    if class_credentials {
        class_config["spec"]["cloudflareCredentialsSecretRef"] =
            json!({"name": "cloudflare", "namespace": "ops", "key": "api"});
    }
    let base = [
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": "culvert"},
               "spec": {"controllerName": CONTROLLER,
                        "parametersRef": {"group": "culvert.dev",
                            "kind": "GatewayClassConfig", "name": "policy"}}}),
        class_config,
    ];
    Store::from_resources(
        base.into_iter()
            .chain(objects)
            .map(|o| Resource::from_value(o).unwrap()),
    )
}

fn inputs_of(store: &Store) -> ClaimInputs {
    let options = Options {
        controller_name: CONTROLLER.to_owned(),
        privileged_namespace_prefixes: Vec::new(),
        addresses: Box::new(FixedAddresses(vec!["192.0.2.1".to_owned()])),
        claims: Box::new(NoClaimChecks),
    };
    inputs(store, &translate(store, &options))
}

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn each_readable_claim_with_where_its_credential_lives() {
    let a = token(ACCOUNT, 1, 1);
    let b = token(ACCOUNT, 2, 2);
    let c = token(ACCOUNT, 3, 3);
    let mut objects = Vec::new();
    objects.extend(tenant("team-a", "a", Some(&a), Some(json!({"name": "cf"}))));
    objects.extend(tenant("team-b", "b", Some(&b), None));
    objects.extend(tenant(
        "team-c",
        "c",
        Some(&c),
        Some(json!({"name": "cf", "namespace": "ops"})),
    ));
    objects.extend(tenant("team-d", "d", None, Some(json!({"name": "cf"}))));
    let bad = token("not-an-account", 5, 5);
    objects.extend(tenant("team-e", "e", Some(&bad), None));
    // A Gateway of another controller's class is not this translation's.
    let mut foreign = tenant("team-f", "f", Some(&token(ACCOUNT, 6, 6)), None);
    foreign[2]["spec"]["gatewayClassName"] = json!("other");
    objects.extend(foreign);
    let got = inputs_of(&store(objects, true));
    assert!(got.configured);
    let claims: Vec<_> = got
        .claims
        .iter()
        .map(|c| (c.gateway.clone(), c.token.tunnel_id, c.credential.clone()))
        .collect();
    let own = |namespace: &str| CredentialRef {
        namespace: namespace.to_owned(),
        secret: SecretKey {
            name: "cf".to_owned(),
            key: "token".to_owned(),
        },
    };
    let class = CredentialRef {
        namespace: "ops".to_owned(),
        secret: SecretKey {
            name: "cloudflare".to_owned(),
            key: "api".to_owned(),
        },
    };
    assert_eq!(
        claims,
        [
            (key("team-a", "a"), a.tunnel_id, Some(own("team-a"))),
            (key("team-b", "b"), b.tunnel_id, Some(class)),
            // A GatewayConfig's credential is always its Gateway's namespace's,
            // whatever namespace the reference names.
            (key("team-c", "c"), c.tunnel_id, Some(own("team-c"))),
        ],
        "no claim for an unreadable token, one whose account tag is not an \
         account ID, or another class's Gateway"
    );
    assert_eq!(got.claims[0].token, a, "the token as the Secret holds it");
}

#[test]
fn configured_when_any_credential_is_named() {
    let a = token(ACCOUNT, 1, 1);
    let none = inputs_of(&store(tenant("team-a", "a", Some(&a), None), false));
    assert!(!none.configured);
    assert_eq!(none.claims.len(), 1);
    assert_eq!(none.claims[0].credential, None);
    let own = inputs_of(&store(
        tenant("team-a", "a", Some(&a), Some(json!({"name": "cf"}))),
        false,
    ));
    assert!(own.configured);
    let class_only = inputs_of(&store(Vec::new(), true));
    assert!(class_only.configured && class_only.claims.is_empty());
}

#[tokio::test]
async fn the_adapter_answers_from_the_cache_with_each_gateways_credential() {
    let sim = EdgeSim::start(SimConfig::loopback()).await.unwrap();
    let credential = ApiToken::new(sim.api_token()).unwrap();
    let client = Client::builder(credential.clone())
        .base_url(sim.api_base())
        .build()
        .unwrap();
    let account: AccountId = sim.account_id().parse().unwrap();
    let tunnel = client.create_tunnel(&account, "a", None).await.unwrap();
    let real = tunnel.token.unwrap().parse().unwrap();
    let mut forged = real.clone();
    forged.tunnel_secret = vec![7; 32];

    let prover = Arc::new(ClaimProver::new(client));
    let proofs = ClaimProofs::new(Arc::clone(&prover));
    let (a, b) = (key("team-a", "a"), key("team-b", "b"));
    assert!(proofs.available(), "before credentials were looked at");
    assert_eq!(proofs.proof(&a, &real), Proof::Unchecked);

    proofs.set(false, BTreeMap::new());
    assert!(!proofs.available());
    proofs.set(true, BTreeMap::from([(a.clone(), credential.clone())]));
    assert!(proofs.available());
    assert_eq!(
        proofs.proof(&a, &real),
        Proof::Unchecked,
        "known only once checked"
    );

    assert_eq!(
        prover.check_now(&real, &credential).await,
        culvert_cloudflare::Proof::Confirmed
    );
    assert_eq!(
        prover.check_now(&forged, &credential).await,
        culvert_cloudflare::Proof::Refuted
    );
    assert_eq!(proofs.proof(&a, &real), Proof::Confirmed);
    assert_eq!(proofs.proof(&a, &forged), Proof::Refuted);
    assert_eq!(
        proofs.proof(&b, &real),
        Proof::Unchecked,
        "a Gateway without a readable credential"
    );

    let inputs = ClaimInputs {
        claims: vec![
            ClaimInput {
                gateway: a.clone(),
                token: real.clone(),
                credential: None,
            },
            ClaimInput {
                gateway: b.clone(),
                token: forged.clone(),
                credential: None,
            },
        ],
        configured: true,
    };
    assert_eq!(
        proofs.view(&inputs),
        (true, BTreeMap::from([(a.clone(), Proof::Confirmed)])),
        "unchecked claims are left out"
    );

    // Another credential is another claim.
    let other = ApiToken::new("another-token").unwrap();
    proofs.set(true, BTreeMap::from([(a.clone(), other)]));
    assert_eq!(proofs.proof(&a, &real), Proof::Unchecked);
    sim.shutdown().await;
}
