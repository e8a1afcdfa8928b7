use super::*;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

fn corpus() -> Vec<(PathBuf, VectorFile)> {
    vector_paths(&corpus_dir())
        .unwrap()
        .into_iter()
        .map(|path| {
            let file = load_vector(&path).unwrap_or_else(|err| panic!("{err}"));
            (path, file)
        })
        .collect()
}

fn file(name: &str) -> VectorFile {
    load_vector(&corpus_dir().join(format!("{name}.json"))).unwrap()
}

/// Makes every number an `f64`, so `20` and `20.0` compare equal.
fn normalize(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                *value = serde_json::json!(f);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::Object(map) => map.values_mut().for_each(normalize),
        _ => {}
    }
}

#[test]
fn every_file_loads_and_the_totals_match() {
    let files = corpus();
    assert_eq!(files.len(), 76);
    let sum = |f: fn(&VectorFile) -> usize| files.iter().map(|(_, v)| f(v)).sum::<usize>();
    assert_eq!(sum(|v| v.resources.len()), 629);
    assert_eq!(sum(|v| v.requests.len()), 253);
    assert_eq!(sum(|v| v.conditions.len()), 426);
    assert_eq!(sum(|v| v.status_checks.len()), 100);
    assert_eq!(sum(|v| v.steps.len()), 8);
    assert_eq!(sum(|v| v.steps.iter().map(|s| s.apply.len()).sum()), 7);
    assert_eq!(sum(|v| v.steps.iter().map(|s| s.delete.len()).sum()), 1);
    assert_eq!(sum(|v| v.steps.iter().map(|s| s.requests.len()).sum()), 1);
    assert_eq!(
        sum(|v| v.steps.iter().map(|s| s.conditions.len()).sum()),
        15
    );
    assert_eq!(
        sum(|v| v.steps.iter().map(|s| s.status_checks.len()).sum()),
        11
    );
    assert_eq!(
        files
            .iter()
            .filter(|(_, v)| v.needs_live_backends())
            .count(),
        4
    );
    assert_eq!(
        files
            .iter()
            .filter(|(_, v)| !v.skip_if_features.is_empty())
            .count(),
        2
    );
    assert_eq!(files.iter().filter(|(_, v)| v.provisional).count(), 10);
    for (path, v) in &files {
        assert_eq!(path.file_stem().unwrap().to_str().unwrap(), v.name);
        assert!(v.features.iter().any(|f| f == "Gateway"), "{}", v.name);
    }
}

/// Serializing the typed file gives back the JSON it was read from: no key the
/// format defines is dropped, renamed or retyped, and meaningful `null`s survive.
#[test]
fn typed_files_round_trip_without_losing_a_key() {
    for (path, typed) in corpus() {
        let mut original: Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let mut again = serde_json::to_value(&typed).unwrap();
        normalize(&mut original);
        normalize(&mut again);
        assert!(original == again, "{} does not round-trip", path.display());
    }
}

#[test]
fn known_values() {
    let matching = file("httproute-matching");
    assert_eq!(matching.short_name, "HTTPRouteMatching");
    assert_eq!(matching.source.repository, "kubernetes-sigs/gateway-api");
    assert_eq!(matching.source.git_ref, "v1.6.1");
    assert_eq!((matching.resources.len(), matching.requests.len()), (8, 9));
    let first = &matching.requests[0];
    assert_eq!(
        first.request.gateway,
        "gateway-conformance-infra/same-namespace"
    );
    assert_eq!(first.request.port, 80);
    assert_eq!(first.request.path.as_deref(), Some("/"));
    assert_eq!(first.expect.status, [200]);
    assert_eq!(
        first.expect.backend,
        Some(Some(
            "gateway-conformance-infra/infra-backend-v1".to_owned()
        ))
    );
    let condition = &matching.conditions[0];
    assert_eq!(condition.condition_type, "Accepted");
    assert_eq!(condition.status.as_deref(), Some("True"));
    let parent = condition.parent_ref.as_ref().unwrap();
    assert_eq!(
        (parent.name.as_str(), parent.section_name.as_deref()),
        ("same-namespace", None)
    );

    let redirect = file("httproute-redirect-port");
    let expect = &redirect.requests[0].expect;
    assert_eq!(expect.backend, Some(None), "null means no backend");
    assert_eq!(expect.redirect.as_ref().unwrap().port, Some(8083));

    let mirror = file("httproute-request-percentage-mirror");
    assert_eq!(mirror.requests[0].request.repeat, Some(500));
    assert_eq!(mirror.requests[0].expect.mirrored_to[0].percent, Some(20.0));

    let modify = file("gateway-modify-listeners");
    let check = &modify.steps[0].status_checks[0];
    assert_eq!(check.check, CheckKind::Listeners);
    assert_eq!(check.listener_count, Some(2));
    assert_eq!(
        check.listeners[1].supported_kinds_include[0].kind,
        "HTTPRoute"
    );

    let statics = file("gateway-static-addresses");
    let exactly = statics
        .steps
        .iter()
        .flat_map(|s| &s.status_checks)
        .find(|c| c.check == CheckKind::StatusAddressesExactly)
        .unwrap();
    assert_eq!(
        exactly.value.as_deref(),
        Some(&["PLACEHOLDER_USABLE_ADDRS".to_owned()][..])
    );

    let grant = file("httproute-reference-grant");
    assert_eq!(grant.steps[0].delete[0].kind, "ReferenceGrant");
    assert_eq!(grant.steps[0].requests.len(), 1);

    // Corpus-wide: `null` keeps its meaning where the format gives it one.
    let files = corpus();
    let exchanges = || {
        files.iter().flat_map(|(_, v)| {
            v.requests
                .iter()
                .chain(v.steps.iter().flat_map(|s| &s.requests))
        })
    };
    assert_eq!(
        exchanges().filter(|e| e.expect.backend.is_none()).count(),
        26
    );
    assert_eq!(
        exchanges()
            .filter(|e| e.expect.backend == Some(None))
            .count(),
        102
    );
    let conditions = || {
        files.iter().flat_map(|(_, v)| {
            v.conditions
                .iter()
                .chain(v.steps.iter().flat_map(|s| &s.conditions))
        })
    };
    assert_eq!(conditions().filter(|c| c.status.is_none()).count(), 2);
    assert_eq!(conditions().filter(|c| c.reason.is_none()).count(), 247);
}

#[test]
fn feature_gating() {
    let mut v = file("httproute-matching");
    assert!(v.runs_with(|f| f == "Gateway" || f == "HTTPRoute"));
    assert!(!v.runs_with(|f| f == "Gateway"));
    v.skip_if_features = vec!["TLSRouteModeTerminate".to_owned()];
    assert!(!v.runs_with(|_| true));
}

const MINIMAL: &str = r#"{
  "format": "gateway-api-conformance-vectors/v1",
  "name": "minimal",
  "futureTopLevelKey": {"anything": 1},
  "requests": [{
    "name": "r",
    "request": {"gateway": "ns/gw", "port": 80, "scheme": "http", "futureRequestKey": true},
    "expect": {"status": [200], "futureExpectKey": "x", "redirect": {"port": 8443}}
  }],
  "statusChecks": [{"kind": "Gateway", "namespace": "ns", "name": "gw", "check": "somethingNew"}]
}"#;

#[test]
fn unknown_keys_and_checks_are_tolerated() {
    let v = parse_vector(MINIMAL, Path::new("minimal.json")).unwrap();
    assert_eq!(v.requests[0].expect.backend, None);
    assert_eq!(
        v.requests[0].expect.redirect.as_ref().unwrap().port,
        Some(8443)
    );
    assert_eq!(
        v.status_checks[0].check,
        CheckKind::Other("somethingNew".to_owned())
    );
    assert_eq!(v.status_checks[0].check.to_string(), "somethingNew");
    assert!(v.steps.is_empty() && v.conditions.is_empty());
}

#[test]
fn errors_name_the_file_and_the_field() {
    let bad = MINIMAL.replace(r#""port": 80"#, r#""port": "eighty""#);
    let err = parse_vector(&bad, Path::new("minimal.json")).unwrap_err();
    let Error::Parse { field, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(field, "requests[0].request.port");
    assert!(
        err.to_string()
            .starts_with("minimal.json: requests[0].request.port: invalid type"),
        "{err}"
    );

    let bad = MINIMAL.replace(r#""port": 8443"#, r#""port": "http""#);
    let err = parse_vector(&bad, Path::new("m.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("requests[0].expect.redirect.port"), "{err}");

    let other = MINIMAL.replace("vectors/v1", "vectors/v2");
    let err = parse_vector(&other, Path::new("m.json")).unwrap_err();
    assert!(matches!(err, Error::Format { .. }), "{err:?}");

    let err = load_vector(Path::new("/nonexistent/vector.json")).unwrap_err();
    assert!(matches!(err, Error::Read { .. }), "{err:?}");
}
