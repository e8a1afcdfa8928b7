//! Secrets the client carries: the API token it authenticates with ([`ApiToken`]) and
//! the connector tokens Cloudflare hands back ([`ConnectorToken`]). Neither ever prints:
//! `Debug` and `Display` show `<redacted>`, and reading the value takes an explicit
//! `expose()`.

use std::fmt;

use culvert_tunnel_proto::TunnelToken;
use serde::Deserialize;

use crate::Error;

/// The longest API token accepted. Cloudflare's are 40 characters.
const MAX_TOKEN_LEN: usize = 4096;

/// A Cloudflare API token, sent as `Authorization: Bearer <token>`.
#[derive(Clone)]
pub struct ApiToken(String);

impl ApiToken {
    /// Checks a token. Surrounding whitespace is dropped (a token read from a file or a
    /// Secret often ends in a newline); what remains must be non-empty visible ASCII, so
    /// it fits an HTTP header. The error never repeats the token.
    pub fn new(token: impl Into<String>) -> Result<Self, Error> {
        let token = token.into();
        let trimmed = token.trim();
        let invalid = |reason: &str| Error::Invalid {
            kind: "api token",
            reason: reason.to_owned(),
        };
        if trimmed.is_empty() {
            return Err(invalid("empty"));
        }
        if trimmed.len() > MAX_TOKEN_LEN {
            return Err(invalid("longer than 4096 bytes"));
        }
        if !trimmed.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid("holds characters other than visible ascii"));
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// The token itself, for the `Authorization` header and claim digests.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiToken(<redacted>)")
    }
}

impl fmt::Display for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A connector token as Cloudflare returns it (the `token` of a tunnel just created).
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct ConnectorToken(String);

impl ConnectorToken {
    /// The token text, for `culvert serve --tunnel-token` or a Secret.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The account, tunnel and secret the token carries. The error names no part of
    /// the token.
    pub fn parse(&self) -> Result<TunnelToken, Error> {
        TunnelToken::parse(&self.0).map_err(|_| Error::Invalid {
            kind: "connector token",
            reason: "not base64 json with an account, a tunnel id and a secret".to_owned(),
        })
    }
}

impl fmt::Debug for ConnectorToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConnectorToken(<redacted>)")
    }
}

impl fmt::Display for ConnectorToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}
