use super::*;

#[test]
fn parse_normalises_case_and_trailing_dot() {
    let cases = [
        ("app.example.com", "app.example.com"),
        ("App.Example.COM.", "app.example.com"),
        ("*.Example.com", "*.example.com"),
        ("example.com.", "example.com"),
        ("a-b.c1.example", "a-b.c1.example"),
    ];
    for (input, want) in cases {
        let hostname = Hostname::parse(input).expect(input);
        assert_eq!(hostname.as_str(), want, "{input}");
    }
}

#[test]
fn parse_refuses_what_is_not_a_hostname() {
    let long_label = format!("{}.example.com", "a".repeat(64));
    let long_name = format!("{}.com", vec!["a".repeat(60); 5].join("."));
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        (".", "empty"),
        ("*", "a wildcard needs a domain after it"),
        (
            "a.*.example.com",
            "a wildcard is allowed only as the whole leftmost label",
        ),
        (
            "*a.example.com",
            "a wildcard is allowed only as the whole leftmost label",
        ),
        (
            "*.*.example.com",
            "a wildcard is allowed only as the whole leftmost label",
        ),
        ("app.example.com:443", "a port is not allowed"),
        ("192.0.2.1", "an IP address is not a hostname"),
        ("a..example.com", "empty label"),
        (
            "_culvert-owner.example.com",
            "only letters, digits, hyphens and dots are allowed",
        ),
        (
            "app example.com",
            "only letters, digits, hyphens and dots are allowed",
        ),
        (
            "-app.example.com",
            "a label must not start or end with a hyphen",
        ),
        (
            "app-.example.com",
            "a label must not start or end with a hyphen",
        ),
        (&long_label, "a label is longer than 63 characters"),
        (&long_name, "longer than 253 characters"),
    ];
    for (input, reason) in cases {
        match Hostname::parse(input) {
            Err(PlanError::InvalidHostname { reason: got, .. }) => {
                assert_eq!(got, *reason, "{input}")
            }
            other => panic!("{input}: {other:?}"),
        }
    }
}

#[test]
fn parse_lowercase_takes_only_cloudflared_form() {
    assert!(Hostname::parse_lowercase("app.example.com").is_ok());
    assert!(Hostname::parse_lowercase("*.example.com").is_ok());
    for input in [
        "App.example.com",
        "app.example.com.",
        "app.example.com:8080",
    ] {
        assert!(Hostname::parse_lowercase(input).is_err(), "{input}");
    }
}

#[test]
fn wildcard_base_and_labels() {
    let wildcard = Hostname::parse("*.a.example.com").expect("valid");
    assert!(wildcard.is_wildcard());
    assert_eq!(wildcard.base(), "a.example.com");
    assert_eq!(wildcard.label_count(), 4);
    let exact = Hostname::parse("example.com").expect("valid");
    assert!(!exact.is_wildcard());
    assert_eq!(exact.base(), "example.com");
    assert_eq!(exact.label_count(), 2);
}

#[test]
fn error_message_escapes_and_cuts_input() {
    let input = format!("bad\nname{}", "x".repeat(1000));
    let message = Hostname::parse(&input).expect_err("invalid").to_string();
    assert!(!message.contains('\n'), "{message}");
    assert!(message.len() < 400, "{}", message.len());
}
