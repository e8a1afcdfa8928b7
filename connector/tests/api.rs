//! The simulated Cloudflare v4 API over real loopback sockets: envelope,
//! pagination, auth, error codes and the fault knob; then a tunnel created through
//! the API registering a real connector and its DNS records routing the front door.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::rc::Rc;

use culvert_connector::io::Tunnel;
use culvert_connector::proto::{RegistrationError, TunnelToken};
use culvert_edge_sim::{ApiFault, EdgeSim, SimConfig};
use http::{Request, StatusCode};
use serde_json::{Value, json};
use support::*;

async fn start(zones: &[&str]) -> EdgeSim {
    EdgeSim::start(SimConfig {
        zones: zones.iter().map(|z| (*z).to_owned()).collect(),
        ..SimConfig::loopback()
    })
    .await
    .unwrap()
}

fn error_code(got: &ApiGot) -> u64 {
    assert_eq!(got.json["success"], false, "{:#}", got.json);
    assert!(got.json["result"].is_null(), "{:#}", got.json);
    got.json["errors"][0]["code"].as_u64().unwrap()
}

fn ok(got: &ApiGot) -> &Value {
    assert_eq!(got.status, StatusCode::OK, "{:#}", got.json);
    assert_eq!(got.json["success"], true, "{:#}", got.json);
    assert_eq!(got.json["errors"], json!([]));
    assert_eq!(got.json["messages"], json!([]));
    &got.json["result"]
}

#[tokio::test]
async fn the_envelope_auth_and_route_errors() {
    let sim = start(&["example.com"]).await;
    let got = api(&sim, "GET", "/user/tokens/verify", None).await;
    assert_eq!(ok(&got)["status"], "active");
    assert_eq!(ok(&got)["id"].as_str().unwrap().len(), 32);
    assert!(got.json.get("result_info").is_none());

    for token in [None, Some("wrong")] {
        let got = api_call(&sim, "GET", "/user/tokens/verify", token, None).await;
        assert_eq!(got.status, StatusCode::UNAUTHORIZED);
        assert_eq!(error_code(&got), 10000);
    }
    let got = api(&sim, "GET", "/no/such/route", None).await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&got), 7003);
    let other = "0123456789abcdef0123456789abcdef";
    let got = api(&sim, "GET", &format!("/accounts/{other}/cfd_tunnel"), None).await;
    assert_eq!(got.status, StatusCode::FORBIDDEN);
    assert_eq!(error_code(&got), 9109);

    // A malformed body.
    let account = sim.account_id();
    let got = request(
        sim.api_addr(),
        Request::post(format!("/client/v4/accounts/{account}/cfd_tunnel"))
            .header("host", "api")
            .header("authorization", format!("Bearer {}", sim.api_token()))
            .body(http_body_util::Full::new(bytes::Bytes::from_static(
                b"{nope",
            )))
            .unwrap(),
    )
    .await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);
    let json: Value = serde_json::from_slice(&got.body.unwrap()).unwrap();
    assert_eq!(json["errors"][0]["code"], 1001);
    sim.shutdown().await;
}

#[tokio::test]
async fn lists_really_paginate() {
    let zones = [
        "a.test", "b.test", "c.test", "d.test", "e.test", "f.test", "g.test",
    ];
    let sim = start(&zones).await;
    let mut seen = Vec::new();
    for page in 1..=2 {
        let got = api(
            &sim,
            "GET",
            &format!("/zones?page={page}&per_page=50"),
            None,
        )
        .await;
        let result = ok(&got).as_array().unwrap().clone();
        let info = &got.json["result_info"];
        // The simulator's maximum per_page (5) applies.
        assert_eq!(info["per_page"], 5, "{info}");
        assert_eq!(info["page"], page);
        assert_eq!(info["total_count"], 7);
        assert_eq!(info["total_pages"], 2);
        assert_eq!(info["count"], result.len());
        for zone in &result {
            assert_eq!(zone["status"], "active");
            assert_eq!(zone["account"]["id"], sim.account_id().as_str());
            assert_eq!(zone["id"].as_str().unwrap().len(), 32);
            seen.push(zone["name"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(seen, zones);
    let got = api(&sim, "GET", "/zones?page=3", None).await;
    assert_eq!(ok(&got), &json!([]));
    assert_eq!(got.json["result_info"]["count"], 0);
    let got = api(&sim, "GET", "/zones?name=c.test&status=active", None).await;
    assert_eq!(ok(&got).as_array().unwrap().len(), 1);
    assert_eq!(got.json["result_info"]["total_count"], 1);

    // Tunnels: the start-up one plus six, two per page; name filter; 409 on reuse.
    let account = sim.account_id();
    let base = format!("/accounts/{account}/cfd_tunnel");
    for i in 0..6 {
        let got = api(&sim, "POST", &base, Some(json!({"name": format!("t{i}")}))).await;
        ok(&got);
    }
    let got = api(&sim, "POST", &base, Some(json!({"name": "t3"}))).await;
    assert_eq!(got.status, StatusCode::CONFLICT);
    assert_eq!(error_code(&got), 1013);
    let mut names = Vec::new();
    for page in 1..=4 {
        let got = api(&sim, "GET", &format!("{base}?per_page=2&page={page}"), None).await;
        assert_eq!(got.json["result_info"]["total_pages"], 4);
        assert_eq!(got.json["result_info"]["total_count"], 7);
        for t in ok(&got).as_array().unwrap() {
            names.push(t["name"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(
        names,
        ["culvert-edge-sim", "t0", "t1", "t2", "t3", "t4", "t5"]
    );
    let got = api(
        &sim,
        "GET",
        &format!("{base}?name=t4&is_deleted=false"),
        None,
    )
    .await;
    let list = ok(&got).as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["status"], "inactive");
    assert!(list[0]["deleted_at"].is_null());
    sim.shutdown().await;
}

#[tokio::test]
async fn dns_conflicts_and_configuration_versions() {
    let sim = start(&["example.com"]).await;
    let (zone, _) = sim.zones()[0].clone();
    let records = format!("/zones/{zone}/dns_records");
    let cname = |name: &str| json!({"type": "CNAME", "name": name, "content": "x.cfargotunnel.com", "proxied": true, "ttl": 1});
    let got = api(&sim, "POST", &records, Some(cname("app.example.com"))).await;
    let record = ok(&got).clone();
    assert_eq!(record["zone_name"], "example.com");
    assert_eq!(record["proxied"], true);
    // Identical, then any A/AAAA/CNAME or anything next to the CNAME.
    let got = api(&sim, "POST", &records, Some(cname("app.example.com"))).await;
    assert_eq!(error_code(&got), 81058);
    for body in [
        json!({"type": "A", "name": "app.example.com", "content": "192.0.2.1"}),
        json!({"type": "CNAME", "name": "app.example.com", "content": "other.example.net"}),
        json!({"type": "TXT", "name": "app.example.com", "content": "\"owner\""}),
    ] {
        let got = api(&sim, "POST", &records, Some(body)).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST);
        assert_eq!(error_code(&got), 81053, "{:#}", got.json);
    }
    // A TXT record elsewhere keeps its quotes; a CNAME where only a TXT exists is fine.
    let txt =
        json!({"type": "TXT", "name": "_owner.app.example.com", "content": "\"heritage=culvert\""});
    let got = api(&sim, "POST", &records, Some(txt)).await;
    assert_eq!(ok(&got)["content"], "\"heritage=culvert\"");
    let got = api(
        &sim,
        "GET",
        &format!("{records}?type=TXT&name=_owner.app.example.com"),
        None,
    )
    .await;
    assert_eq!(ok(&got).as_array().unwrap().len(), 1);
    let got = api(&sim, "GET", &format!("{records}?type=CNAME"), None).await;
    assert_eq!(ok(&got).as_array().unwrap().len(), 1);
    let got = api(
        &sim,
        "GET",
        &format!("{records}?name.exact=APP.example.com&content=x.cfargotunnel.com"),
        None,
    )
    .await;
    assert_eq!(ok(&got).as_array().unwrap().len(), 1);
    let got = api(
        &sim,
        "GET",
        &format!("{records}?name=nope.example.com"),
        None,
    )
    .await;
    assert_eq!(ok(&got), &json!([]));
    let got = api(&sim, "GET", &format!("{records}?per_page=many"), None).await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);
    // PUT replaces, DELETE answers the ID; unknown IDs are 404.
    let id = record["id"].as_str().unwrap();
    let mut changed = cname("app.example.com");
    changed["content"] = json!("y.cfargotunnel.com");
    let got = api(&sim, "PUT", &format!("{records}/{id}"), Some(changed)).await;
    assert_eq!(ok(&got)["content"], "y.cfargotunnel.com");
    assert_eq!(ok(&got)["id"], id);
    let got = api(&sim, "DELETE", &format!("{records}/{id}"), None).await;
    assert_eq!(ok(&got), &json!({"id": id}));
    let got = api(&sim, "DELETE", &format!("{records}/{id}"), None).await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    let got = api(
        &sim,
        "GET",
        "/zones/ffffffffffffffffffffffffffffffff/dns_records",
        None,
    )
    .await;
    assert_eq!(error_code(&got), 7003);

    // Configuration versions.
    let tunnel = sim.token().tunnel_id;
    let path = format!(
        "/accounts/{}/cfd_tunnel/{tunnel}/configurations",
        sim.account_id()
    );
    let got = api(&sim, "GET", &path, None).await;
    assert_eq!(ok(&got)["version"], 0);
    assert!(ok(&got)["config"].is_null());
    for version in 1..=2 {
        let config = json!({"config": {"ingress": [
            {"hostname": "app.example.com", "service": "http://127.0.0.1:1"},
            {"service": "http_status:404"},
        ]}});
        let got = api(&sim, "PUT", &path, Some(config)).await;
        assert_eq!(ok(&got)["version"], version);
        assert_eq!(ok(&got)["tunnel_id"], tunnel.to_string());
        assert_eq!(
            ok(&got)["config"]["ingress"][1]["service"],
            "http_status:404"
        );
    }
    let bad =
        json!({"config": {"ingress": [{"hostname": "app.example.com", "service": "http://x"}]}});
    let got = api(&sim, "PUT", &path, Some(bad)).await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&got), 1055);
    assert!(
        got.json["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("last ingress rule")
    );
    let got = api(&sim, "GET", &path, None).await;
    assert_eq!(ok(&got)["version"], 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn the_fault_knob_answers_429_then_503_then_recovers() {
    let sim = EdgeSim::start(SimConfig {
        api_faults: vec![ApiFault {
            status: 503,
            retry_after: 0,
        }],
        ..SimConfig::loopback()
    })
    .await
    .unwrap();
    let got = api(&sim, "GET", "/user/tokens/verify", None).await;
    assert_eq!(got.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(error_code(&got) > 0);
    // Queue two 429s over HTTP.
    let got = request(
        sim.api_addr(),
        Request::post(culvert_edge_sim::FAULTS_PATH)
            .header("host", "api")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(
                br#"{"status":429,"count":2,"retry_after":3}"#,
            )))
            .unwrap(),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK);
    for _ in 0..2 {
        let got = api(&sim, "GET", "/user/tokens/verify", None).await;
        assert_eq!(got.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(got.headers["retry-after"], "3");
        assert_eq!(error_code(&got), 971);
    }
    let got = api(&sim, "GET", "/user/tokens/verify", None).await;
    ok(&got);
    sim.add_api_faults([ApiFault {
        status: 429,
        retry_after: 1,
    }]);
    let got = api(&sim, "GET", "/user/tokens/verify", None).await;
    assert_eq!(got.status, StatusCode::TOO_MANY_REQUESTS);
    sim.shutdown().await;
}

/// `GET /` at the front door with this `Host`: status and the serving tag (if a
/// connector answered) with the headers it saw.
async fn front(sim: &EdgeSim, host: &str) -> (StatusCode, Option<Value>) {
    let got = request(
        sim.http_addr(),
        Request::get("/")
            .header("host", host)
            .header("x-forwarded-for", "198.51.100.7")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap(),
    )
    .await;
    let body = got.body.unwrap();
    (got.status, serde_json::from_slice(&body).ok())
}

fn tag(answer: &(StatusCode, Option<Value>)) -> String {
    assert_eq!(answer.0, StatusCode::OK, "{answer:?}");
    answer.1.as_ref().unwrap()["tag"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_tunnel_created_through_the_api_serves_its_dns_names() {
    local(async {
        let sim = start(&["example.com"]).await;
        let account = sim.account_id();
        let (zone, _) = sim.zones()[0].clone();
        let records = format!("/zones/{zone}/dns_records");

        // The start-up tunnel serves hosts without records, as before.
        let startup = Tunnel::new(tunnel_config(&sim)).unwrap();
        startup.spawn_all_local(Rc::new(Tagged("startup")));
        startup.wait_registered(4).await.unwrap();

        let got = api(
            &sim,
            "POST",
            &format!("/accounts/{account}/cfd_tunnel"),
            Some(json!({"name": "second", "config_src": "cloudflare"})),
        )
        .await;
        let created = ok(&got).clone();
        let id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(created["account_tag"], account.as_str());
        assert_eq!(created["status"], "inactive");
        let token = TunnelToken::parse(created["token"].as_str().unwrap()).unwrap();
        assert_eq!(token.tunnel_id.to_string(), id);
        // The token endpoint hands out the same token.
        let got = api(&sim, "GET", &format!("/accounts/{account}/cfd_tunnel/{id}/token"), None).await;
        let fetched = TunnelToken::parse(ok(&got).as_str().unwrap()).unwrap();
        assert_eq!(fetched, token);

        let mut config = tunnel_config(&sim);
        config.token = token.clone();
        let second = Tunnel::new(config).unwrap();
        second.spawn_all_local(Rc::new(Tagged("second")));
        second.wait_registered(4).await.unwrap();
        wait_sim(&sim, "8 registrations", |s| s.registered() == 8).await;
        let got = api(&sim, "GET", &format!("/accounts/{account}/cfd_tunnel/{id}"), None).await;
        assert_eq!(ok(&got)["status"], "healthy");
        let connections = ok(&got)["connections"].as_array().unwrap();
        assert_eq!(connections.len(), 4);
        assert_eq!(connections[0]["origin_ip"], "127.0.0.1");
        assert_eq!(connections[0]["colo_name"], "SIM");

        // No record yet: the start-up tunnel.
        assert_eq!(tag(&front(&sim, "app.example.com").await), "startup");
        let cname = |name: &str, target: &str| {
            json!({"type": "CNAME", "name": name, "content": format!("{target}.cfargotunnel.com"), "proxied": true})
        };
        let got = api(&sim, "POST", &records, Some(cname("app.example.com", &id))).await;
        let record_id = ok(&got)["id"].as_str().unwrap().to_owned();
        let answer = front(&sim, "App.Example.com:8080").await;
        assert_eq!(tag(&answer), "second");
        let headers = &answer.1.as_ref().unwrap()["headers"];
        assert_eq!(headers["cf-connecting-ip"], "127.0.0.1");
        assert_eq!(headers["x-forwarded-for"], "198.51.100.7, 127.0.0.1");
        assert_eq!(headers["cf-visitor"], r#"{"scheme":"http"}"#);
        let ray = headers["cf-ray"].as_str().unwrap();
        assert!(ray.ends_with("-SIM") && ray.len() == 20, "{ray}");
        // A name without a record does not reach the second tunnel.
        assert_eq!(tag(&front(&sim, "other.example.com").await), "startup");

        // A wildcard covers any depth below it.
        let got = api(&sim, "POST", &records, Some(cname("*.wild.example.com", &id))).await;
        ok(&got);
        assert_eq!(tag(&front(&sim, "a.b.wild.example.com").await), "second");
        assert_eq!(tag(&front(&sim, "wild.example.com").await), "startup");

        // With a remote configuration, ingress decides: the catch-all answers 404.
        let config = json!({"config": {"ingress": [
            {"hostname": "app.example.com", "service": "http://127.0.0.1:1"},
            {"service": "http_status:404"},
        ]}});
        let path = format!("/accounts/{account}/cfd_tunnel/{id}/configurations");
        ok(&api(&sim, "PUT", &path, Some(config)).await);
        assert_eq!(tag(&front(&sim, "app.example.com").await), "second");
        let (status, _) = front(&sim, "x.wild.example.com").await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // A record pointing at a tunnel the account does not have: 530 (error 1033).
        let ghost = "6f1b5b8e-54c4-4f3c-9d0e-0123456789ab";
        ok(&api(&sim, "POST", &records, Some(cname("ghost.example.com", ghost))).await);
        let got = request(
            sim.http_addr(),
            Request::get("/")
                .header("host", "ghost.example.com")
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap(),
        )
        .await;
        assert_eq!(got.status.as_u16(), 530);
        assert!(String::from_utf8_lossy(&got.body.unwrap()).contains("1033"));

        // Deleting the record stops routing there.
        ok(&api(&sim, "DELETE", &format!("{records}/{record_id}"), None).await);
        assert_eq!(tag(&front(&sim, "app.example.com").await), "startup");

        // A stopped tunnel is `down`, and its names answer 530.
        second.shutdown();
        second.closed().await.unwrap();
        wait_sim(&sim, "4 registrations", |s| s.registered() == 4).await;
        let got = api(&sim, "GET", &format!("/accounts/{account}/cfd_tunnel/{id}"), None).await;
        assert_eq!(ok(&got)["status"], "down");
        ok(&api(&sim, "POST", &records, Some(cname("app.example.com", &id))).await);
        let (status, _) = front(&sim, "app.example.com").await;
        assert_eq!(status.as_u16(), 530);

        // A deleted tunnel's token is refused.
        let got = api(&sim, "DELETE", &format!("/accounts/{account}/cfd_tunnel/{id}"), None).await;
        assert!(ok(&got)["deleted_at"].is_string());
        let got = api(&sim, "GET", &format!("/accounts/{account}/cfd_tunnel/{id}/token"), None).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND);
        let mut config = tunnel_config(&sim);
        config.token = token;
        let again = Tunnel::new(config).unwrap();
        again.spawn_all_local(Rc::new(Tagged("again")));
        let error = again.closed().await.unwrap_err();
        assert!(error.to_string().contains("not known"), "{error}");
        assert!(matches!(
            error,
            culvert_connector::Error::Registration {
                error: RegistrationError::Permanent { .. },
                ..
            }
        ));

        startup.shutdown();
        startup.closed().await.unwrap();
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_connected_tunnel_is_deleted_only_with_cascade_which_disconnects_it() {
    local(async {
        let sim = start(&[]).await;
        let account = sim.account_id();
        let base = format!("/accounts/{account}/cfd_tunnel");
        let got = api(&sim, "POST", &base, Some(json!({"name": "doomed"}))).await;
        let id = ok(&got)["id"].as_str().unwrap().to_owned();
        let mut config = tunnel_config(&sim);
        config.token = TunnelToken::parse(ok(&got)["token"].as_str().unwrap()).unwrap();
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(Rc::new(Tagged("doomed")));
        tunnel.wait_registered(4).await.unwrap();

        let got = api(&sim, "DELETE", &format!("{base}/{id}"), None).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST);
        assert_eq!(error_code(&got), 1022);
        let got = api(&sim, "GET", &format!("{base}/{id}"), None).await;
        assert!(ok(&got)["deleted_at"].is_null());

        let got = api(&sim, "DELETE", &format!("{base}/{id}?cascade=true"), None).await;
        assert!(ok(&got)["deleted_at"].is_string());
        // Its connections are closed; reconnecting, the connector is refused for good
        // and stops, and says so.
        let error = tunnel.closed().await.unwrap_err();
        assert!(
            matches!(
                error,
                culvert_connector::Error::Registration {
                    error: RegistrationError::Permanent { .. },
                    ..
                }
            ),
            "{error}"
        );
        let events = sim.status().events;
        let closed = events
            .iter()
            .filter(|e| e.ends_with(": tunnel deleted"))
            .count();
        assert_eq!(closed, 4, "{events:#?}");
        assert!(
            events
                .iter()
                .any(|e| e.contains("is not known to this edge (shouldRetry false)")),
            "{events:#?}"
        );
        wait_sim(&sim, "no registrations", |s| s.registered() == 0).await;
        let got = api(&sim, "GET", &format!("{base}/{id}"), None).await;
        assert_eq!(ok(&got)["connections"], json!([]));
        assert_eq!(ok(&got)["status"], "down");
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_configured_account_owns_the_start_up_tunnel_and_bad_ids_are_refused() {
    let account = "0123456789abcdef0123456789abcdef";
    let sim = EdgeSim::start(SimConfig {
        account_id: Some(account.to_owned()),
        api_token: Some("sim-token".to_owned()),
        ..SimConfig::loopback()
    })
    .await
    .unwrap();
    assert_eq!(sim.account_id(), account);
    assert_eq!(sim.token().account_tag, account);
    assert_eq!(sim.api_token(), "sim-token");
    let got = api(
        &sim,
        "GET",
        &format!("/accounts/{account}/cfd_tunnel"),
        None,
    )
    .await;
    let list = ok(&got).as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], sim.token().tunnel_id.to_string());
    assert_eq!(list[0]["name"], "culvert-edge-sim");
    sim.shutdown().await;

    let error = EdgeSim::start(SimConfig {
        account_id: Some("NOT-HEX".to_owned()),
        ..SimConfig::loopback()
    })
    .await
    .unwrap_err();
    assert!(error.to_string().contains("32 lowercase hex"), "{error}");
}
