use super::*;
use crate::TunnelId;

#[test]
fn configuration_decodes_with_and_without_a_config() {
    let written = r#"{"tunnel_id":"f70ff985-a4ef-4643-bbbc-4a0ed4fc8415","version":3,
        "config":{"ingress":[
            {"hostname":"app.example.com","service":"https://10.0.0.1:8443",
             "originRequest":{"noTLSVerify":true}},
            {"service":"http_status:404"}],
          "warp-routing":{"enabled":false}},
        "source":"cloudflare","created_at":"2026-01-25T20:47:05Z"}"#;
    let configuration: TunnelConfiguration = serde_json::from_str(written).unwrap();
    assert_eq!(configuration.version, 3);
    let ingress = configuration.ingress.unwrap();
    assert_eq!(ingress.len(), 2);
    assert!(!ingress[0].is_catch_all() && ingress[1].is_catch_all());
    assert_eq!(
        ingress[0].origin_request.as_ref().unwrap()["noTLSVerify"],
        serde_json::Value::Bool(true)
    );

    let fresh = r#"{"tunnel_id":"f70ff985-a4ef-4643-bbbc-4a0ed4fc8415","version":0,"config":null,"source":"cloudflare","created_at":"2026-01-25T20:47:05Z"}"#;
    let configuration: TunnelConfiguration = serde_json::from_str(fresh).unwrap();
    assert_eq!(configuration.ingress, None);
}

#[test]
fn ingress_rules_serialize_in_cloudflare_spelling() {
    let rule = IngressRule {
        hostname: Some("app.example.com".to_owned()),
        path: None,
        service: "http://web:80".to_owned(),
        origin_request: Some(serde_json::Map::from_iter([(
            "httpHostHeader".to_owned(),
            serde_json::Value::from("web"),
        )])),
    };
    assert_eq!(
        serde_json::to_string(&rule).unwrap(),
        r#"{"hostname":"app.example.com","service":"http://web:80","originRequest":{"httpHostHeader":"web"}}"#
    );
    let body = ConfigurationBody {
        config: IngressBody { ingress: &[rule] },
    };
    assert!(
        serde_json::to_string(&body)
            .unwrap()
            .starts_with(r#"{"config":{"ingress":[{"hostname""#)
    );
}

#[test]
fn new_records_serialize_as_the_api_takes_them() {
    let tunnel: TunnelId = "f70ff985-a4ef-4643-bbbc-4a0ed4fc8415".parse().unwrap();
    let cname = NewDnsRecord::tunnel_cname("app.example.com", &tunnel).with_comment("culvert");
    assert_eq!(
        serde_json::to_string(&cname).unwrap(),
        r#"{"type":"CNAME","name":"app.example.com","content":"f70ff985-a4ef-4643-bbbc-4a0ed4fc8415.cfargotunnel.com","proxied":true,"ttl":1,"comment":"culvert"}"#
    );
    let txt = NewDnsRecord::txt("_culvert.app.example.com", "\"owner=a\"");
    assert_eq!(
        serde_json::to_string(&txt).unwrap(),
        r#"{"type":"TXT","name":"_culvert.app.example.com","content":"\"owner=a\"","ttl":1}"#
    );
}

#[test]
fn tunnel_status_keeps_values_it_does_not_know() {
    let status: TunnelStatus = serde_json::from_str(r#""healthy""#).unwrap();
    assert_eq!(status, TunnelStatus::Healthy);
    let status: TunnelStatus = serde_json::from_str(r#""sleeping""#).unwrap();
    assert_eq!(status, TunnelStatus::Other("sleeping".to_owned()));
}
