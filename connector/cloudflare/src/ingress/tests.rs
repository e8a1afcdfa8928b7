use serde_json::json;

use super::*;

const SERVICE: &str = "http://culvert-edge.edge.svc:8080";

fn hostnames(ingress: &Ingress) -> Vec<Option<&str>> {
    ingress
        .rules
        .iter()
        .map(|rule| rule.hostname.as_deref())
        .collect()
}

#[test]
fn rules_ordered_specific_first_deduplicated_catch_all_last() {
    let ingress = build(
        [
            "*.example.com",
            "b.example.com",
            "*.a.example.com",
            "a.example.com",
            "b.example.com",
            "x.y.example.com",
            "*.a.example.com",
            "example.com",
        ],
        SERVICE,
    )
    .expect("valid service");
    assert_eq!(
        hostnames(&ingress),
        [
            Some("x.y.example.com"),
            Some("a.example.com"),
            Some("b.example.com"),
            Some("example.com"),
            Some("*.a.example.com"),
            Some("*.example.com"),
            None,
        ]
    );
    assert!(ingress.rejected.is_empty());
    assert!(
        ingress.rules[..6]
            .iter()
            .all(|rule| rule.service == SERVICE && rule.path.is_none())
    );
    assert_eq!(ingress.rules.last(), Some(&IngressRule::catch_all()));
}

#[test]
fn order_does_not_depend_on_input_order() {
    let names = [
        "*.example.com",
        "a.example.com",
        "*.b.example.com",
        "c.example.com",
    ];
    let forward = build(names, SERVICE).expect("valid service");
    let backward = build(names.iter().rev(), SERVICE).expect("valid service");
    assert_eq!(forward, backward);
}

#[test]
fn invalid_hostnames_are_rejected_alone() {
    let ingress = build(
        [
            "App.example.com",
            "a.example.com:443",
            "a.*.example.com",
            "ok.example.com",
            "",
            "x.example.com.",
        ],
        SERVICE,
    )
    .expect("valid service");
    assert_eq!(hostnames(&ingress), [Some("ok.example.com"), None]);
    assert_eq!(ingress.rejected.len(), 5);
    assert!(
        ingress
            .rejected
            .iter()
            .all(|error| matches!(error, PlanError::InvalidHostname { .. }))
    );
}

#[test]
fn no_hostnames_is_catch_all_only() {
    let ingress = build(Vec::<String>::new(), SERVICE).expect("valid service");
    assert_eq!(ingress.rules, catch_all_only());
    assert_eq!(
        to_config(&catch_all_only()),
        json!({"ingress": [{"service": "http_status:404"}]})
    );
}

#[test]
fn service_must_be_an_origin_url() {
    for good in [
        SERVICE,
        "https://10.0.0.1:8443",
        "http://[::1]:80",
        "http://plane/",
    ] {
        assert!(build(["a.example.com"], good).is_ok(), "{good}");
    }
    let long = format!("http://{}", "a".repeat(2100));
    for bad in [
        "",
        "tcp://x:1",
        "http://",
        "http://x/path",
        "http://x?q",
        "http://u@x",
        "http://x y",
        &long,
    ] {
        assert!(
            matches!(
                build(["a.example.com"], bad),
                Err(PlanError::InvalidService { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn serialised_as_the_api_takes_it() {
    let mut origin = Map::new();
    origin.insert("noTLSVerify".into(), Value::Bool(true));
    let rule = IngressRule {
        hostname: Some("a.example.com".into()),
        path: Some("^/api".into()),
        service: SERVICE.into(),
        origin_request: Some(origin),
    };
    let want = json!({"hostname": "a.example.com", "path": "^/api", "service": SERVICE, "originRequest": {"noTLSVerify": true}});
    assert_eq!(serde_json::to_value(&rule).expect("serialisable"), want);
    assert_eq!(to_config(&[rule]), json!({"ingress": [want]}));
    assert_eq!(
        serde_json::to_value(IngressRule::catch_all()).expect("serialisable"),
        json!({"service": "http_status:404"})
    );
}

#[test]
fn unchanged_ignores_key_order_and_added_fields() {
    let desired = build(["b.example.com", "a.example.com"], SERVICE)
        .expect("valid")
        .rules;
    let current = json!({
        "tunnel_id": "6ff42ae2-765d-4adf-8112-31c55c1551ef",
        "version": 3,
        "config": {
            "warp-routing": {"enabled": false},
            "originRequest": {},
            "ingress": [
                {"service": SERVICE, "hostname": "a.example.com", "originRequest": {}},
                {"originRequest": {}, "path": "", "hostname": "b.example.com", "service": SERVICE},
                {"service": "http_status:404", "originRequest": {}, "hostname": null}
            ]
        },
        "source": "cloudflare"
    });
    assert!(!changed(&current, &desired));
    assert!(!changed(&current["config"], &desired));
    assert!(!changed(&to_config(&desired), &desired));
}

#[test]
fn changes_are_noticed() {
    let desired = build(["a.example.com", "b.example.com"], SERVICE)
        .expect("valid")
        .rules;
    let base = to_config(&desired);
    let mut cases = vec![
        Value::Null,
        json!({"config": null}),
        json!({}),
        json!({"ingress": {}}),
        json!({"ingress": []}),
    ];
    let mut edit = |f: &dyn Fn(&mut Vec<Value>)| {
        let mut value = base.clone();
        f(value["ingress"].as_array_mut().expect("an array"));
        cases.push(value);
    };
    edit(&|rules| rules.swap(0, 1));
    edit(&|rules| {
        rules.pop();
    });
    edit(&|rules| rules[0]["service"] = json!("http://other:8080"));
    edit(&|rules| rules[0]["hostname"] = json!("c.example.com"));
    edit(&|rules| rules[0]["path"] = json!("^/x"));
    edit(&|rules| rules[0]["path"] = json!(7));
    edit(&|rules| rules[0]["originRequest"] = json!({"noTLSVerify": true}));
    edit(&|rules| rules[0]["originRequest"] = json!("x"));
    edit(&|rules| rules[1] = json!("not a rule"));
    edit(&|rules| rules.push(json!({"service": "http_status:404"})));
    for current in &cases {
        assert!(changed(current, &desired), "{current}");
    }
}

#[test]
fn removal_compares_against_catch_all_only() {
    let written = to_config(&build(["a.example.com"], SERVICE).expect("valid").rules);
    assert!(changed(&written, &catch_all_only()));
    assert!(!changed(
        &json!({"ingress": [{"service": "http_status:404"}]}),
        &catch_all_only()
    ));
}
