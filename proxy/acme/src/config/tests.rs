use super::*;

fn config(names: &[&str]) -> AcmeConfig {
    AcmeConfig::new(
        "https://acme.example/dir",
        "/var/lib/culvert/acme",
        names.iter().map(|n| (*n).to_owned()).collect(),
        ChallengeKind::Http01,
    )
}

fn refusal(config: AcmeConfig) -> String {
    match config.validate() {
        Err(Error::Config(reason)) => reason,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn names_are_lowercased_and_contacts_become_mailto() {
    let mut raw = config(&["WWW.Example.COM", "example.com"]);
    raw.contacts = vec!["ops@example.com".to_owned()];
    let settings = raw.validate().unwrap();
    assert_eq!(settings.names, ["www.example.com", "example.com"]);
    assert_eq!(settings.contacts, ["mailto:ops@example.com"]);
}

#[test]
fn refuses_what_cannot_be_ordered() {
    let cases: [(&[&str], &str); 6] = [
        (&[], "no names"),
        (&["*.example.com"], "wildcard"),
        (&["exa mple.com"], "not a DNS name"),
        (&["../etc"], "not a DNS name"),
        (&["a.example", "A.example"], "twice"),
        (&["example.com."], "not a DNS name"),
    ];
    for (names, why) in cases {
        let reason = refusal(config(names));
        assert!(reason.contains(why), "{names:?}: {reason}");
    }
}

#[test]
fn refuses_a_plain_http_directory_and_bad_contacts() {
    let mut raw = config(&["example.com"]);
    raw.directory_url = "http://acme.example/dir".to_owned();
    assert!(refusal(raw).contains("https://"));

    for email in ["ops", "ops@", "@example.com", "a b@example.com", "a@b?x=1"] {
        let mut raw = config(&["example.com"]);
        raw.contacts = vec![email.to_owned()];
        assert!(refusal(raw).contains("e-mail"), "{email}");
    }
}

#[test]
fn refuses_zero_timeouts_and_inverted_backoff() {
    let mut raw = config(&["example.com"]);
    raw.order_timeout = Duration::ZERO;
    assert!(refusal(raw).contains("timeouts"));

    let mut raw = config(&["example.com"]);
    raw.backoff = Backoff {
        initial: Duration::from_secs(10),
        max: Duration::from_secs(5),
    };
    assert!(refusal(raw).contains("backoff"));

    let mut raw = config(&["example.com"]);
    raw.system_roots = false;
    assert!(refusal(raw).contains("roots"));
}
