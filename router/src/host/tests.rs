use super::*;

fn pattern(text: &str) -> HostPattern {
    HostPattern::parse(text).unwrap()
}

#[test]
fn parse_lowercases_and_validates() {
    assert_eq!(
        pattern("Foo.Example.COM"),
        HostPattern::Exact("foo.example.com".into())
    );
    assert_eq!(
        pattern("*.Example.com"),
        HostPattern::Wildcard("example.com".into())
    );
    assert_eq!(
        pattern("xn--bcher-kva.example"),
        HostPattern::Exact("xn--bcher-kva.example".into())
    );
    for bad in [
        "",
        "*",
        "*.",
        "foo..com",
        "-foo.com",
        "foo-.com",
        "foo.*.com",
        "*.*.com",
        "bücher.example",
        "foo_bar.com",
        "1.2.3.4",
        "foo.com.",
        "a b.com",
    ] {
        assert!(HostPattern::parse(bad).is_err(), "{bad:?} accepted");
    }
    assert!(HostPattern::parse(&format!("{}.com", "a".repeat(64))).is_err());
}

#[test]
fn a_refused_hostname_says_what_is_wrong_with_it() {
    // These texts end up in Gateway API condition messages, which must not change.
    for (bad, problem, message) in [
        (
            "foo..com",
            HostnameProblem::EmptyLabel,
            r#"hostname "foo..com" has an empty label"#,
        ),
        (
            "1.2.3.4",
            HostnameProblem::IpAddress,
            r#"hostname "1.2.3.4" is an IP address, not a hostname"#,
        ),
        (
            "-foo.com",
            HostnameProblem::Hyphen,
            r#"hostname "-foo.com" has a label that starts or ends with '-'"#,
        ),
    ] {
        let error = HostPattern::parse(bad).unwrap_err();
        assert!(
            matches!(&error, Error::Hostname { text, problem: p } if text == bad && *p == problem),
            "{error:?}"
        );
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn wildcard_needs_at_least_one_more_label() {
    let wildcard = pattern("*.example.com");
    assert!(wildcard.matches("foo.example.com"));
    assert!(wildcard.matches("foo.bar.example.com"));
    assert!(!wildcard.matches("example.com"));
    assert!(!wildcard.matches("fooexample.com"));
    assert!(!wildcard.matches(".example.com"));
}

#[test]
fn intersection_keeps_the_more_specific_name() {
    let cases = [
        (
            "foo.example.com",
            "foo.example.com",
            Some("foo.example.com"),
        ),
        ("foo.example.com", "bar.example.com", None),
        ("*.example.com", "foo.example.com", Some("foo.example.com")),
        ("foo.example.com", "*.example.com", Some("foo.example.com")),
        (
            "*.example.com",
            "*.foo.example.com",
            Some("*.foo.example.com"),
        ),
        (
            "*.foo.example.com",
            "*.example.com",
            Some("*.foo.example.com"),
        ),
        ("*.example.com", "*.example.com", Some("*.example.com")),
        ("*.example.com", "example.com", None),
        ("*.example.com", "*.example.org", None),
    ];
    for (a, b, want) in cases {
        let got = pattern(a).intersect(&pattern(b)).map(|p| p.to_string());
        assert_eq!(got.as_deref(), want, "{a} ∩ {b}");
    }
}

#[test]
fn request_host_loses_port_trailing_dot_and_case() {
    assert_eq!(
        normalize_request_host("Foo.Example.com:8080"),
        "foo.example.com"
    );
    assert_eq!(
        normalize_request_host("foo.example.com."),
        "foo.example.com"
    );
    assert_eq!(
        normalize_request_host("foo.example.com.:443"),
        "foo.example.com"
    );
    assert_eq!(normalize_request_host("[::1]:8080"), "[::1]");
    assert_eq!(normalize_request_host("[::1]"), "[::1]");
    assert_eq!(normalize_request_host("127.0.0.1:80"), "127.0.0.1");
    assert!(matches!(
        normalize_request_host("already.lower"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn index_prefers_exact_then_longest_wildcard_then_any() {
    let mut index = HostIndex::default();
    *index.entry(Some(&pattern("*.example.com")), || 0) = 1;
    *index.entry(Some(&pattern("*.api.example.com")), || 0) = 2;
    *index.entry(Some(&pattern("v1.api.example.com")), || 0) = 3;
    *index.entry(None, || 0) = 4;
    assert_eq!(index.lookup("v1.api.example.com"), Some(&3));
    assert_eq!(index.lookup("v2.api.example.com"), Some(&2));
    assert_eq!(index.lookup("a.b.api.example.com"), Some(&2));
    assert_eq!(index.lookup("api.example.com"), Some(&1));
    assert_eq!(index.lookup("www.example.com"), Some(&1));
    assert_eq!(index.lookup("example.com"), Some(&4));
    assert_eq!(index.lookup("other.org"), Some(&4));
    assert_eq!(index.lookup(""), Some(&4));
}

#[test]
fn index_without_catch_all_misses() {
    let mut index = HostIndex::default();
    *index.entry(Some(&pattern("*.example.com")), || 0) = 1;
    assert_eq!(index.lookup("example.com"), None);
    assert_eq!(index.lookup("com"), None);
    assert_eq!(index.lookup("x.example.org"), None);
}
