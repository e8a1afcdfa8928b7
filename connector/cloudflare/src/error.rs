//! The crate's one error type, and how callers classify it.
//!
//! An [`Error`] keeps what Cloudflare said (HTTP status, the envelope's error codes and
//! messages) so callers can decide by [`Error::is_auth`], [`Error::is_not_found`],
//! [`Error::is_conflict`] and [`Error::is_transient`] instead of matching strings. No
//! variant ever holds the API token: the client builds errors from the request's method
//! and path (ids and names, never headers) and scrubs the token out of anything the
//! server sent back.

use std::fmt;
use std::time::Duration;

use http::{Method, StatusCode};

/// One entry of an envelope's `errors` (or `messages`) array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiMessage {
    /// Cloudflare's numeric code (`10000` authentication, `971` throttled, `81053` a
    /// conflicting DNS record, ...).
    pub code: u32,
    /// The human text, shortened to a bounded length.
    pub message: String,
}

/// Error codes that mean "an object in the way already exists".
const CONFLICT_CODES: [u32; 3] = [
    // A tunnel with that name already exists.
    1013,  // An A, AAAA or CNAME record with that host already exists.
    81053, // An identical record already exists.
    81058,
];

/// Why a Cloudflare API call (or building a client) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The client configuration cannot be used; nothing was sent.
    #[error("invalid cloudflare client config: {0}")]
    Config(String),
    /// No root certificate to check the API's TLS certificate against (why, in words:
    /// the system store's read errors are all there is).
    #[error("no trusted root certificates for the cloudflare api: {0}")]
    Trust(String),
    /// The TLS settings for the API cannot be made: the extra CA is unusable.
    #[error("unusable tls settings for the cloudflare api")]
    Tls(#[source] culvert_tls::Error),
    /// A value given to the client (an id, a token, a rule list) is not acceptable;
    /// nothing was sent.
    #[error("invalid {kind}: {reason}")]
    Invalid {
        /// What kind of value (`"account id"`, `"api token"`, ...).
        kind: &'static str,
        /// What is wrong with it (never the value of a secret).
        reason: String,
    },
    /// Cloudflare answered with an error status or `"success": false`.
    #[error("cloudflare answered {status} to {method} {path}{}", Codes(errors))]
    Api {
        /// The request method.
        method: Method,
        /// The request path below the API base, with its query.
        path: String,
        /// The HTTP status of the answer.
        status: StatusCode,
        /// The envelope's `errors`, empty when the body was not an envelope.
        errors: Vec<ApiMessage>,
        /// The envelope's `messages` (notes Cloudflare adds; not shown by `Display`).
        messages: Vec<ApiMessage>,
        /// The `Retry-After` delay the answer carried, if any.
        retry_after: Option<Duration>,
    },
    /// No complete answer within the request timeout.
    #[error("{method} {path}: no answer within {} ms", after.as_millis())]
    Timeout {
        /// The request method.
        method: Method,
        /// The request path below the API base.
        path: String,
        /// The timeout.
        after: Duration,
    },
    /// The connection failed, before or during the exchange.
    #[error("{method} {path}: {}", if *connect { "cannot connect" } else { "connection failed" })]
    Transport {
        /// The request method.
        method: Method,
        /// The request path below the API base.
        path: String,
        /// Whether it failed while connecting, so the server never saw the request.
        connect: bool,
        /// The HTTP client's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The answer's body is larger than the client accepts.
    #[error("{method} {path}: answer larger than {limit} bytes")]
    TooLarge {
        /// The request method.
        method: Method,
        /// The request path below the API base.
        path: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// A successful answer whose body is not the envelope or result expected.
    #[error("{method} {path}: unexpected answer ({status}): {detail}")]
    Decode {
        /// The request method.
        method: Method,
        /// The request path below the API base.
        path: String,
        /// The HTTP status of the answer.
        status: StatusCode,
        /// What did not parse, and where.
        detail: String,
    },
    /// A list claims more pages than the client walks.
    #[error("{method} {path}: more than {limit} pages")]
    TooManyPages {
        /// The request method.
        method: Method,
        /// The request path below the API base.
        path: String,
        /// The most pages walked.
        limit: u32,
    },
}

impl Error {
    /// The HTTP status Cloudflare answered with, when it answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Api { status, .. } | Self::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The envelope's error entries (empty unless Cloudflare answered with an error).
    pub fn api_errors(&self) -> &[ApiMessage] {
        match self {
            Self::Api { errors, .. } => errors,
            _ => &[],
        }
    }

    /// Whether Cloudflare refused the credential: 401 or 403. Such an answer says
    /// nothing about the object asked for.
    pub fn is_auth(&self) -> bool {
        matches!(
            self,
            Self::Api { status, .. }
                if *status == StatusCode::UNAUTHORIZED || *status == StatusCode::FORBIDDEN
        )
    }

    /// Whether the object (or the route to it) does not exist: 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Api { status, .. } if *status == StatusCode::NOT_FOUND)
    }

    /// Whether something already exists in the way: 409, or one of the codes Cloudflare
    /// sends with 400 for a name already taken (1013 tunnel name, 81053 a record of that
    /// host, 81058 an identical record).
    pub fn is_conflict(&self) -> bool {
        match self {
            Self::Api { status, errors, .. } => {
                *status == StatusCode::CONFLICT
                    || errors.iter().any(|e| CONFLICT_CODES.contains(&e.code))
            }
            _ => false,
        }
    }

    /// Whether Cloudflare throttled the request: 429.
    pub fn is_rate_limited(&self) -> bool {
        matches!(self, Self::Api { status, .. } if *status == StatusCode::TOO_MANY_REQUESTS)
    }

    /// Whether trying again later may succeed: 5xx, 429, a timeout or a connection
    /// failure. Such an error says nothing about the object asked for.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Api { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            Self::Timeout { .. } | Self::Transport { .. } => true,
            _ => false,
        }
    }
}

/// Formats the envelope's error codes after the status: `: [10000] Authentication error`.
struct Codes<'a>(&'a [ApiMessage]);

impl fmt::Display for Codes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { "; " })?;
            write!(f, "[{}] {}", error.code, error.message)?;
        }
        Ok(())
    }
}
