use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;

use super::*;

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
const TUNNEL: &str = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";

fn token_of(json: &str) -> String {
    STANDARD.encode(json)
}

#[test]
fn parses_a_token() {
    // "c2VjcmV0" is base64 of "secret".
    let json = format!(r#"{{"a":"{ACCOUNT}","s":"c2VjcmV0","t":"{TUNNEL}"}}"#);
    let token = TunnelToken::parse(&token_of(&json)).unwrap();
    assert_eq!(token.account_tag, ACCOUNT);
    assert_eq!(token.tunnel_secret, b"secret");
    assert_eq!(token.tunnel_id.to_string(), TUNNEL);
    assert_eq!(token.endpoint, None);
    assert_eq!(token.auth().tunnel_secret, b"secret");
}

#[test]
fn golden_encoding() {
    let token = TunnelToken {
        account_tag: ACCOUNT.to_owned(),
        tunnel_secret: b"secret".to_vec(),
        tunnel_id: TUNNEL.parse().unwrap(),
        endpoint: Some("fed".to_owned()),
    };
    // Keys in a, s, t, e order; the secret as padded base64; then the whole JSON as
    // padded base64.
    let json = format!(r#"{{"a":"{ACCOUNT}","s":"c2VjcmV0","t":"{TUNNEL}","e":"fed"}}"#);
    assert_eq!(token.encode(), token_of(&json));
}

#[test]
fn trims_whitespace_and_drops_empty_endpoint() {
    let json = format!(r#"{{"a":"{ACCOUNT}","s":"","t":"{TUNNEL}","e":""}}"#);
    let token = TunnelToken::parse(&format!("  {}\n", token_of(&json))).unwrap();
    assert!(token.tunnel_secret.is_empty());
    assert_eq!(token.endpoint, None);
}

#[test]
fn bad_outer_base64() {
    let err = TunnelToken::parse("not base64!").unwrap_err();
    assert!(matches!(err, Error::TokenBase64(_)));
    assert_eq!(err.to_string(), "tunnel token is not valid base64");
    // URL-safe alphabet is not accepted: '-' and '_' are outside the standard one.
    assert!(matches!(
        TunnelToken::parse("ab-_"),
        Err(Error::TokenBase64(_))
    ));
}

#[test]
fn bad_json() {
    assert!(matches!(
        TunnelToken::parse(&token_of("{not json")),
        Err(Error::TokenJson(_))
    ));
    assert!(matches!(
        TunnelToken::parse(&token_of(r#"{"a":1}"#)),
        Err(Error::TokenJson(_))
    ));
    assert!(matches!(
        TunnelToken::parse(&token_of("[]")),
        Err(Error::TokenJson(_))
    ));
}

#[test]
fn missing_fields_are_named() {
    for (json, field) in [
        (format!(r#"{{"s":"c2VjcmV0","t":"{TUNNEL}"}}"#), "a"),
        (format!(r#"{{"a":"{ACCOUNT}","t":"{TUNNEL}"}}"#), "s"),
        (format!(r#"{{"a":"{ACCOUNT}","s":"c2VjcmV0"}}"#), "t"),
    ] {
        let err = TunnelToken::parse(&token_of(&json)).unwrap_err();
        assert!(
            matches!(err, Error::TokenMissingField(f) if f == field),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!("tunnel token is missing field `{field}`")
        );
    }
}

#[test]
fn bad_tunnel_id() {
    let json = format!(r#"{{"a":"{ACCOUNT}","s":"c2VjcmV0","t":"not-a-uuid"}}"#);
    let err = TunnelToken::parse(&token_of(&json)).unwrap_err();
    assert!(matches!(&err, Error::TokenTunnelId(t) if t == "not-a-uuid"));
}

#[test]
fn bad_secret() {
    let json = format!(r#"{{"a":"{ACCOUNT}","s":"c2VjcmV0!","t":"{TUNNEL}"}}"#);
    assert!(matches!(
        TunnelToken::parse(&token_of(&json)),
        Err(Error::TokenSecret(_))
    ));
}

#[test]
fn debug_redacts_the_secret() {
    let token = TunnelToken {
        account_tag: ACCOUNT.to_owned(),
        tunnel_secret: b"hunter2".to_vec(),
        tunnel_id: TUNNEL.parse().unwrap(),
        endpoint: None,
    };
    let shown = format!("{token:?}");
    assert!(shown.contains("<7 bytes>"));
    assert!(!shown.contains("104"), "{shown}");
}

proptest! {
    #[test]
    fn encode_parse_round_trip(
        account in "[0-9a-f]{32}",
        secret in proptest::collection::vec(any::<u8>(), 0..64),
        id in any::<[u8; 16]>(),
        endpoint in proptest::option::of("[a-z]{1,8}"),
    ) {
        let token = TunnelToken {
            account_tag: account,
            tunnel_secret: secret,
            tunnel_id: Uuid::from_bytes(id),
            endpoint,
        };
        prop_assert_eq!(TunnelToken::parse(&token.encode()).unwrap(), token);
    }

    #[test]
    fn arbitrary_input_never_panics(text in ".{0,80}", raw in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = TunnelToken::parse(&text);
        // Valid base64 around arbitrary bytes reaches the JSON layer, which must
        // fail cleanly (or, by luck, parse).
        match TunnelToken::parse(&STANDARD.encode(&raw)) {
            Ok(_) | Err(Error::TokenJson(_) | Error::TokenMissingField(_) | Error::TokenSecret(_) | Error::TokenTunnelId(_)) => {}
            Err(e) => prop_assert!(false, "unexpected error kind {e}"),
        }
    }
}
