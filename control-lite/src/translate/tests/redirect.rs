//! The HTTPS redirect a Gateway asks for with `culvert.dev/https-redirect`: plain
//! route config on its HTTP listeners, out of the way of the routes that name them.

use super::*;
use culvert_router::config::{HttpFilterConfig, HttpRouteConfig, RequestRedirectConfig};

const PEM: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

/// `edge` with a plain HTTP listener, HTTPS on 443 for `*.example.com` and on 8443
/// for `api.example.com`, asking for the redirect with `code`.
fn redirecting(code: Option<&str>) -> Vec<Value> {
    let mut objects = base();
    let all = json!({"namespaces": {"from": "All"}});
    let tls = json!({"certificateRefs": [{"name": "cert"}]});
    objects[2]["spec"]["listeners"] = json!([
        {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": all},
        {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
         "tls": tls, "allowedRoutes": all},
        {"name": "api", "port": 8443, "protocol": "HTTPS", "hostname": "api.example.com",
         "tls": tls, "allowedRoutes": all},
    ]);
    if let Some(code) = code {
        objects[2]["metadata"]["annotations"] = json!({HTTPS_REDIRECT_ANNOTATION: code});
    }
    objects.push(
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                        "metadata": {"name": "cert", "namespace": "infra"},
                        "stringData": {"tls.crt": PEM, "tls.key": KEY}}),
    );
    objects
}

fn served<'c>(t: &'c Translation, name: &str) -> Vec<&'c HttpRouteConfig> {
    plane(t)
        .http_routes
        .iter()
        .filter(|r| r.name == name)
        .collect()
}

fn redirect_of(route: &HttpRouteConfig) -> &RequestRedirectConfig {
    match &route.rules[0].filters[..] {
        [HttpFilterConfig::RequestRedirect { request_redirect }] => request_redirect,
        other => panic!("not a redirect: {other:?}"),
    }
}

#[test]
fn the_redirect_is_route_config_on_the_http_listener_per_https_port() {
    let t = run(redirecting(Some("301")));
    let to_443 = served(&t, "edge:https-redirect:http:443");
    let to_8443 = served(&t, "edge:https-redirect:http:8443");
    assert_eq!((to_443.len(), to_8443.len()), (1, 1));
    for (route, hostname, port) in [
        (to_443[0], "*.example.com", 443),
        (to_8443[0], "api.example.com", 8443),
    ] {
        assert_eq!(route.namespace, "infra");
        assert_eq!(route.listeners, ["infra/edge/http"]);
        assert_eq!(route.hostnames, [hostname]);
        assert_eq!(route.creation_timestamp, None);
        assert!(route.rules[0].matches.is_empty(), "one rule for every path");
        assert!(route.rules[0].backends.is_empty());
        assert_eq!(
            *redirect_of(route),
            RequestRedirectConfig {
                scheme: Some("https".to_owned()),
                port: Some(port),
                status_code: Some(301),
                ..Default::default()
            }
        );
    }
    // 308 keeps the method and body of what is redirected.
    let t = run(redirecting(Some("308")));
    let route = served(&t, "edge:https-redirect:http:443")[0];
    assert_eq!(redirect_of(route).status_code, Some(308));
    // Without the annotation there is no redirect.
    let t = run(redirecting(None));
    assert!(plane(&t).http_routes.is_empty());
}

#[test]
fn routes_naming_the_whole_gateway_keep_on_http_only_what_is_not_redirected() {
    let mut objects = redirecting(Some("301"));
    objects.push(route(
        "infra",
        "app",
        "2026-01-02T00:00:00Z",
        &["shop.example.com", "plain.test"],
        backend_rule(),
    ));
    objects.push(route(
        "infra",
        "secure",
        "2026-01-02T00:00:00Z",
        &["pay.example.com"],
        backend_rule(),
    ));
    let t = run(objects);
    let app: Vec<(Vec<String>, Vec<String>)> = served(&t, "app")
        .into_iter()
        .map(|r| (r.listeners.clone(), r.hostnames.clone()))
        .collect();
    assert_eq!(
        app,
        [
            (
                vec!["infra/edge/http".to_owned()],
                vec!["plain.test".to_owned()]
            ),
            (
                vec!["infra/edge/https".to_owned()],
                vec!["shop.example.com".to_owned(), "plain.test".to_owned()]
            ),
        ],
        "split: every hostname over HTTPS, only the unredirected one over HTTP"
    );
    // A route whose hostnames are all redirected leaves the HTTP listener.
    let secure: Vec<&Vec<String>> = served(&t, "secure").iter().map(|r| &r.listeners).collect();
    assert_eq!(secure, [&vec!["infra/edge/https".to_owned()]]);
    // Attachment is the spec's: both routes still count on the HTTP listener.
    let status = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    assert_eq!(status.listeners[0].attached_routes, 2);
    assert_eq!(
        route_condition(&t, "infra", "secure", "Accepted"),
        ("True".into(), "Accepted".into())
    );
}

#[test]
fn a_route_naming_the_http_listener_takes_what_it_covers_out_of_the_redirect() {
    // By sectionName, a wildcard: it covers both targets, so nothing is redirected.
    let mut objects = redirecting(Some("301"));
    let mut wide = route(
        "infra",
        "wide",
        "2026-01-02T00:00:00Z",
        &["*.example.com"],
        backend_rule(),
    );
    wide["spec"]["parentRefs"][0]["sectionName"] = json!("http");
    objects.push(wide);
    let t = run(objects);
    assert!(served(&t, "edge:https-redirect:http:443").is_empty());
    assert!(served(&t, "edge:https-redirect:http:8443").is_empty());
    assert_eq!(served(&t, "wide")[0].listeners, ["infra/edge/http"]);

    // By port, one name: only that name's redirect goes; a narrower name under the
    // wildcard (an ACME solver's) stays beside the wildcard redirect, and the router
    // gives it its exact host.
    let mut objects = redirecting(Some("301"));
    for (name, host) in [("api", "api.example.com"), ("solver", "cert.example.com")] {
        let mut pinned = route(
            "infra",
            name,
            "2026-01-02T00:00:00Z",
            &[host],
            backend_rule(),
        );
        pinned["spec"]["parentRefs"][0]["port"] = json!(80);
        objects.push(pinned);
    }
    let t = run(objects);
    assert!(served(&t, "edge:https-redirect:http:8443").is_empty());
    assert_eq!(
        served(&t, "edge:https-redirect:http:443")[0].hostnames,
        ["*.example.com"]
    );
    assert_eq!(served(&t, "solver")[0].listeners, ["infra/edge/http"]);
}

#[test]
fn only_https_listeners_that_serve_are_redirected_to() {
    let mut objects = redirecting(Some("301"));
    // `api` names a Secret that does not exist: not programmed, not a target.
    objects[2]["spec"]["listeners"][2]["tls"] = json!({"certificateRefs": [{"name": "missing"}]});
    let t = run(objects);
    assert!(served(&t, "edge:https-redirect:http:8443").is_empty());
    assert_eq!(served(&t, "edge:https-redirect:http:443").len(), 1);
}

#[test]
fn a_value_culvert_cannot_honour_refuses_the_gateway() {
    let gateway_accepted = |t: &Translation| {
        let c = t.gateways[&("infra".to_owned(), "edge".to_owned())]
            .conditions
            .iter()
            .find(|c| c.kind == "Accepted")
            .unwrap()
            .clone();
        (c.status, c.reason, c.message)
    };
    let t = run(redirecting(Some("true")));
    let (status, reason, message) = gateway_accepted(&t);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "UnsupportedValue")
    );
    assert!(message.contains(HTTPS_REDIRECT_ANNOTATION), "{message}");
    assert!(t.data_planes.is_empty());
    // A tunnel's requests arrive on the HTTP listener already over TLS at the edge:
    // redirecting them would never end.
    let mut objects = redirecting(Some("301"));
    objects[2]["spec"]["infrastructure"] =
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    objects.push(
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
                        "metadata": {"name": "own", "namespace": "infra"},
                        "spec": {"tunnel": {"tokenRef": {"name": "tunnel"}}}}),
    );
    let t = run(objects);
    let (status, reason, message) = gateway_accepted(&t);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "UnsupportedValue")
    );
    assert!(message.contains("tunnel"), "{message}");
}
