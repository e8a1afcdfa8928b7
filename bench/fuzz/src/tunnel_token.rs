//! `tunnel_token`: the connector token, from its base64 text.
//!
//! A token that parses encodes to a token that parses to the same value, and its
//! `TunnelAuth` carries its account and secret. The UUID text form inside it is
//! checked on its own too: a UUID that parses prints as the input in lower case.

use culvert_connector::proto::{TunnelToken, Uuid};

/// Parses the input as a token and as a UUID; panics when a parsed value does not
/// survive printing.
pub fn tunnel_token(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(token) = TunnelToken::parse(&text) {
        let encoded = token.encode();
        let again = TunnelToken::parse(&encoded);
        assert!(
            again.as_ref().is_ok_and(|again| *again == token),
            "{token:?} encodes to {encoded:?}, which parses to {again:?}"
        );
        let auth = token.auth();
        assert_eq!(auth.account_tag, token.account_tag);
        assert_eq!(auth.tunnel_secret, token.tunnel_secret);
        assert_ne!(
            token.endpoint.as_deref(),
            Some(""),
            "an empty endpoint is absent"
        );
    }
    if let Ok(uuid) = text.parse::<Uuid>() {
        let printed = uuid.to_string();
        assert_eq!(printed, text.to_ascii_lowercase(), "UUID text form");
        assert_eq!(printed.parse::<Uuid>().ok(), Some(uuid));
    }
}
