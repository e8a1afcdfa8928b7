//! The Cloudflare side of a tunnel plane against the edge simulator's v4 API on
//! loopback: a tunnel's ingress and DNS records written from its routes'
//! hostnames, a name held by someone else's record reported and left alone,
//! records removed with their last route, a dry run that writes nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any error"
)]

use std::collections::BTreeSet;
use std::str::FromStr;

use culvert_cloudflare::dns::OwnerId;
use culvert_cloudflare::{AccountId, ApiToken, Client, NewDnsRecord, ZoneId};
use culvert_control_lite::model::ObjectKey;
use culvert_controller::cloudflare_sync::apply::sync_account;
use culvert_controller::cloudflare_sync::{RouteNames, TunnelSync};
use culvert_edge_sim::{EdgeSim, SimConfig};

async fn sim() -> (EdgeSim, Client, AccountId, ZoneId) {
    let sim = EdgeSim::start(SimConfig {
        zones: vec!["example.com".to_owned()],
        ..SimConfig::loopback()
    })
    .await
    .unwrap();
    let client = Client::builder(ApiToken::new(sim.api_token()).unwrap())
        .base_url(sim.api_base())
        .build()
        .unwrap();
    let account = AccountId::from_str(&sim.account_id()).unwrap();
    let zone = ZoneId::from_str(&sim.zones()[0].0).unwrap();
    (sim, client, account, zone)
}

fn tunnel_sync(account: &AccountId, tunnel: &str, routes: &[(&str, &[&str])]) -> TunnelSync {
    let gateway = ("team".to_owned(), "edge".to_owned());
    TunnelSync {
        account: account.to_string(),
        tunnel: tunnel.to_owned(),
        credential: None,
        service: "http://localhost:8080".to_owned(),
        gateways: BTreeSet::from([gateway.clone()]),
        routes: routes
            .iter()
            .map(|(name, hostnames)| RouteNames {
                route: ObjectKey::new("HTTPRoute", "team", name),
                gateway: gateway.clone(),
                hostnames: hostnames.iter().map(|h| (*h).to_owned()).collect(),
            })
            .collect(),
    }
}

/// `(type, name, content)` of every record of the zone, sorted.
async fn records(client: &Client, zone: &ZoneId) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = client
        .dns_records(zone, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.record_type, r.name, r.content))
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_tunnel_s_routes_become_ingress_and_owned_dns_records() {
    let (_sim, client, account, zone) = sim().await;
    let tunnel = client.create_tunnel(&account, "edge", None).await.unwrap();
    let tunnel_id = tunnel.id.to_string();
    let owner = OwnerId::new("cluster-a").unwrap();
    // Someone else's record already holds taken.example.com.
    client
        .create_dns_record(
            &zone,
            &NewDnsRecord {
                record_type: "A".to_owned(),
                name: "taken.example.com".to_owned(),
                content: "192.0.2.10".to_owned(),
                proxied: Some(false),
                ttl: 1,
                comment: None,
            },
        )
        .await
        .unwrap();

    let sync = tunnel_sync(
        &account,
        &tunnel_id,
        &[
            ("web", &["app.example.com"]),
            ("taken", &["taken.example.com"]),
        ],
    );
    let report = sync_account(&client, &owner, account.as_str(), &[&sync], false).await;
    assert!(report.failures.is_empty(), "{report:?}");
    assert_eq!(report.ingress_written, std::slice::from_ref(&tunnel_id));
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert_eq!(
        report.conflicts[0].route,
        ObjectKey::new("HTTPRoute", "team", "taken")
    );
    assert!(
        report.conflicts[0].message.contains('A'),
        "{}",
        report.conflicts[0].message
    );

    let target = format!("{tunnel_id}.cfargotunnel.com");
    let now = records(&client, &zone).await;
    assert!(
        now.contains(&(
            "CNAME".to_owned(),
            "app.example.com".to_owned(),
            target.clone()
        )),
        "{now:?}"
    );
    assert!(
        now.iter().any(|(kind, name, content)| kind == "TXT"
            && name.contains("app.example.com")
            && content.contains("culvert/owner=cluster-a")),
        "the CNAME has its ownership record: {now:?}"
    );
    assert!(
        now.contains(&(
            "A".to_owned(),
            "taken.example.com".to_owned(),
            "192.0.2.10".to_owned()
        )),
        "the foreign record is left alone: {now:?}"
    );
    assert!(
        !now.iter()
            .any(|(kind, name, _)| kind == "CNAME" && name == "taken.example.com")
    );
    let configuration = client
        .tunnel_configuration(&account, &tunnel.id)
        .await
        .unwrap();
    let rules: Vec<(Option<String>, String)> = configuration
        .ingress
        .unwrap()
        .into_iter()
        .map(|r| (r.hostname, r.service))
        .collect();
    assert_eq!(
        rules,
        [
            (
                Some("app.example.com".to_owned()),
                "http://localhost:8080".to_owned()
            ),
            (
                Some("taken.example.com".to_owned()),
                "http://localhost:8080".to_owned()
            ),
            (None, "http_status:404".to_owned()),
        ]
    );

    // A second sync with nothing changed writes nothing.
    let again = sync_account(&client, &owner, account.as_str(), &[&sync], false).await;
    assert!(again.ingress_written.is_empty(), "{again:?}");
    assert_eq!(again.dns_changes, 0, "{again:?}");

    // The route goes: its records go with it, the foreign one stays.
    let fewer = tunnel_sync(&account, &tunnel_id, &[("taken", &["taken.example.com"])]);
    let report = sync_account(&client, &owner, account.as_str(), &[&fewer], false).await;
    assert!(report.failures.is_empty(), "{report:?}");
    let now = records(&client, &zone).await;
    assert_eq!(
        now,
        [(
            "A".to_owned(),
            "taken.example.com".to_owned(),
            "192.0.2.10".to_owned()
        )],
        "only the foreign record is left"
    );
}

#[tokio::test]
async fn another_owner_s_records_and_a_dry_run_are_left_alone() {
    let (_sim, client, account, zone) = sim().await;
    let tunnel = client.create_tunnel(&account, "edge", None).await.unwrap();
    let tunnel_id = tunnel.id.to_string();
    let sync = tunnel_sync(&account, &tunnel_id, &[("web", &["app.example.com"])]);
    let ours = OwnerId::new("cluster-a").unwrap();
    let theirs = OwnerId::new("cluster-b").unwrap();

    let dry = sync_account(&client, &ours, account.as_str(), &[&sync], true).await;
    assert!(dry.failures.is_empty(), "{dry:?}");
    assert_eq!(dry.dns_changes, 2, "a CNAME and its TXT would be made");
    assert!(
        records(&client, &zone).await.is_empty(),
        "a dry run writes nothing"
    );
    let configuration = client
        .tunnel_configuration(&account, &tunnel.id)
        .await
        .unwrap();
    assert!(configuration.ingress.is_none(), "{configuration:?}");

    sync_account(&client, &theirs, account.as_str(), &[&sync], false).await;
    let before = records(&client, &zone).await;
    assert_eq!(before.len(), 2, "{before:?}");
    // Owner cluster-a wants the same name: cluster-b's records are not its to touch.
    let report = sync_account(&client, &ours, account.as_str(), &[&sync], false).await;
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    // Nothing desired any more for cluster-a: cluster-b's records stay.
    sync_account(&client, &ours, account.as_str(), &[], false).await;
    assert_eq!(records(&client, &zone).await, before);
}
