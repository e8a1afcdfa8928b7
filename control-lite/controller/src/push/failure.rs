//! Why one request to a plane pod's config API failed, classified so the state
//! machine knows what to forget and when to retry, and so a status message and a
//! metric label come from one value. Built by the driver from what the socket, TLS
//! and the pod said; never carries the bearer token. Start at [`Failure`].

use std::time::Duration;

/// What went wrong with one request to a pod's config API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The TCP connection could not be made.
    #[error("connecting failed: {0}")]
    Connect(String),
    /// The TLS handshake failed: an untrusted certificate, one for another name,
    /// or a connection closed during the handshake.
    #[error("the TLS handshake failed: {0}")]
    Tls(String),
    /// No whole answer within the request timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// 401: the pod refused the plane's bearer token.
    #[error("the bearer token was refused (401)")]
    Unauthorized,
    /// 409: the pod serves a newer version, or this version with other content.
    #[error("version conflict (409): the pod serves version {current_version:?}")]
    Conflict {
        /// `currentVersion` from the answer, if it had one.
        current_version: Option<u64>,
    },
    /// Another 4xx: the pod refused the request or the config (400, 413, 415).
    #[error("refused ({status}): {reason}")]
    Refused {
        /// The status code.
        status: u16,
        /// The pod's `error`, or the start of its answer.
        reason: String,
    },
    /// A 5xx.
    #[error("server error ({status}): {reason}")]
    Server {
        /// The status code.
        status: u16,
        /// The pod's `error`, or the start of its answer.
        reason: String,
    },
    /// The answer could not be read: HTTP broke, the body was too large or not the
    /// JSON the config API sends, or the status was unexpected.
    #[error("unreadable answer: {0}")]
    Response(String),
    /// The pod took the config but reports another hash for it than the one
    /// computed here (a plane computing hashes differently): pushing again would
    /// never make it current.
    #[error("the pod reports hash {reported} for the config hashed {sent} here")]
    HashMismatch {
        /// The hash of what was sent.
        sent: String,
        /// What the pod reported.
        reported: String,
    },
}

impl Failure {
    /// A short label for metrics and logs.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Connect(_) => "connect",
            Self::Tls(_) => "tls",
            Self::Timeout(_) => "timeout",
            Self::Unauthorized => "unauthorized",
            Self::Conflict { .. } => "conflict",
            Self::Refused { .. } => "refused",
            Self::Server { .. } => "server",
            Self::Response(_) => "response",
            Self::HashMismatch { .. } => "hash_mismatch",
        }
    }

    /// Whether what the pod serves is unknown after this failure: nothing was
    /// heard from it (it may have restarted meanwhile), so it is asked again
    /// (`GET`) before the next push.
    pub fn leaves_pod_unknown(&self) -> bool {
        matches!(
            self,
            Self::Connect(_) | Self::Tls(_) | Self::Timeout(_) | Self::Response(_)
        )
    }
}
