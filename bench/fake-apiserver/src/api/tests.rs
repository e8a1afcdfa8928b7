use super::target;
use crate::registry::Registry;

#[test]
fn paths_resolve_to_targets_as_the_api_server_routes_them() {
    let registry = Registry::builtin();
    let cases = [
        (
            "/api/v1/namespaces",
            Some(("namespaces", None, None, false)),
        ),
        (
            "/api/v1/namespaces/demo",
            Some(("namespaces", None, Some("demo"), false)),
        ),
        (
            "/api/v1/namespaces/demo/status",
            Some(("namespaces", None, Some("demo"), true)),
        ),
        (
            "/api/v1/namespaces/demo/services",
            Some(("services", Some("demo"), None, false)),
        ),
        (
            "/api/v1/namespaces/demo/services/web/status",
            Some(("services", Some("demo"), Some("web"), true)),
        ),
        ("/api/v1/services", Some(("services", None, None, false))),
        (
            "/apis/coordination.k8s.io/v1/namespaces/d/leases/l",
            Some(("leases", Some("d"), Some("l"), false)),
        ),
        // No status subresource on ConfigMaps; no such group; a namespaced kind by
        // name outside a namespace; nonsense.
        ("/api/v1/namespaces/d/configmaps/c/status", None),
        ("/apis/gateway.networking.k8s.io/v1/httproutes", None),
        ("/api/v1/services/web", None),
        ("/api/v2/services", None),
        ("/healthz", None),
    ];
    for (path, expected) in cases {
        let got = target(&registry, path).map(|t| (t.kind.plural, t.namespace, t.name, t.status));
        let expected = expected.map(
            |(p, ns, name, status): (&str, Option<&str>, Option<&str>, bool)| {
                (
                    p.to_owned(),
                    ns.map(str::to_owned),
                    name.map(str::to_owned),
                    status,
                )
            },
        );
        assert_eq!(got, expected, "{path}");
    }
}
