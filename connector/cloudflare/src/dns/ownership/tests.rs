use super::*;

fn owner() -> OwnerId {
    OwnerId::new("cluster-a").expect("valid owner")
}

fn gateway() -> GatewayRef {
    GatewayRef::new("edge", "public.gw").expect("valid gateway")
}

const CONTENT: &str = "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1\"";

#[test]
fn content_format() {
    assert_eq!(Ownership::new(owner(), gateway()).content(), CONTENT);
}

#[test]
fn parse_round_trips_format() {
    let record = Ownership::new(owner(), gateway());
    assert_eq!(Ownership::parse(&record.content()), Some(record));
    let other = Ownership {
        owner: OwnerId::new("A_b.9").expect("valid"),
        gateway: GatewayRef::new("n", "g").expect("valid"),
        version: 7,
    };
    assert_eq!(Ownership::parse(&other.content()), Some(other));
}

#[test]
fn parse_tolerates_order_unknown_keys_and_no_quotes() {
    let want = Some(Ownership::new(owner(), gateway()));
    let cases = [
        "heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1",
        "\"culvert/version=1,culvert/resource=gateway/edge/public.gw,culvert/owner=cluster-a,heritage=culvert\"",
        "\"heritage=culvert,extra=x=y,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1,culvert/new=\"",
    ];
    for content in cases {
        assert_eq!(Ownership::parse(content), want, "{content}");
    }
}

#[test]
fn malformed_content_is_not_ours() {
    let long = format!(
        "\"{}{}\"",
        &CONTENT[1..CONTENT.len() - 1],
        ",x=".to_owned() + &"y".repeat(2048)
    );
    let cases: &[&str] = &[
        "",
        "\"\"",
        "\"",
        "v=spf1 include:_spf.example.com ~all",
        // external-dns's own records
        "\"heritage=external-dns,external-dns/owner=default,external-dns/resource=ingress/a/b\"",
        // a wrong heritage or a missing key
        "\"heritage=Culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        "\"culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw\"",
        // a key twice
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/owner=cluster-b,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        // a pair without `=`, an empty key, an empty pair
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1,junk\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1,=x\"",
        "\"heritage=culvert,,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        // invalid values
        "\"heritage=culvert,culvert/owner=,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=a b,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=route/edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/Edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/a/b,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=+1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=99999999999\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version= 1\"",
        // quoting: one side only, quotes or escapes inside, two strings
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1",
        "heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a\" \"culvert/resource=gateway/edge/public.gw,culvert/version=1\"",
        "\"heritage=culvert,culvert/owner=cluster-a,culvert/resource=gateway/edge/public.gw,culvert/version=1,x=\\\"\"",
        // too long
        &long,
    ];
    for content in cases {
        assert_eq!(Ownership::parse(content), None, "{content}");
    }
}

#[test]
fn owner_and_gateway_validation() {
    assert!(OwnerId::new("cluster-a.prod_1").is_ok());
    for owner in ["", "a,b", "a=b", "a\"b", "a/b", &"x".repeat(64)] {
        assert!(
            matches!(OwnerId::new(owner), Err(PlanError::InvalidOwnerId { .. })),
            "{owner}"
        );
    }
    assert!(GatewayRef::new("default", "a.b-c").is_ok());
    for (namespace, name) in [
        ("", "gw"),
        ("ns", ""),
        ("a.b", "gw"),
        ("NS", "gw"),
        ("ns", "gw/x"),
        ("ns", "gw,x"),
        ("ns", "-gw"),
        ("ns", "a..b"),
    ] {
        assert!(
            matches!(
                GatewayRef::new(namespace, name),
                Err(PlanError::InvalidGatewayRef { .. })
            ),
            "{namespace}/{name}"
        );
    }
}

#[test]
fn txt_names_never_collide_and_invert() {
    let cases = [
        ("app.example.com", "_culvert-owner.app.example.com"),
        ("example.com", "_culvert-owner.example.com"),
        ("*.example.com", "_culvert-owner-wildcard.example.com"),
        ("*.a.example.com", "_culvert-owner-wildcard.a.example.com"),
    ];
    for (hostname, want) in cases {
        let hostname = Hostname::parse(hostname).expect("valid");
        let name = txt_name(&hostname).expect("short enough");
        assert_eq!(name, want);
        assert_ne!(name, hostname.as_str());
        // A TXT name is no hostname, so no CNAME of ours is ever on it.
        assert!(Hostname::parse(&name).is_err(), "{name}");
        assert_eq!(hostname_for_txt_name(&name), Some(hostname.clone()));
        assert_eq!(
            hostname_for_txt_name(&format!("{}.", name.to_uppercase())),
            Some(hostname)
        );
    }
}

#[test]
fn other_names_are_no_txt_names() {
    for name in [
        "app.example.com",
        "_culvert-owner",
        "_culvert-owner.",
        "_culvert-ownerx.example.com",
        "_culvert-owner-wildcard",
        "_culvert-owner-wildcardx.example.com",
        "_culvert-owner._culvert-owner.example.com",
        "_culvert-owner.*.example.com",
        "_other.example.com",
    ] {
        assert_eq!(hostname_for_txt_name(name), None, "{name}");
    }
}

#[test]
fn txt_name_too_long_is_refused() {
    let hostname =
        Hostname::parse(&format!("{}.com", vec!["a".repeat(61); 4].join("."))).expect("valid");
    assert!(hostname.as_str().len() <= 253);
    assert!(matches!(
        txt_name(&hostname),
        Err(PlanError::InvalidHostname { .. })
    ));
}
