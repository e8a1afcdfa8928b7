//! The crate's one error type. Every failure says what failed; causes stay in `source`.
//! Nothing here panics on what the ACME server sends: its answers end up in these variants.

use std::io;
use std::path::PathBuf;

/// Why a configuration was refused or an ACME round failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot be used; nothing was attempted.
    #[error("invalid acme config: {0}")]
    Config(String),
    /// No root certificate to check the ACME directory's TLS certificate against (why,
    /// in words: the system store's read errors are all there is).
    #[error("no trusted root certificates for the acme directory: {0}")]
    Trust(String),
    /// The TLS settings for the ACME directory cannot be made: `trust` is unusable.
    #[error("unusable tls settings for the acme directory")]
    Tls(#[source] culvert_tls::Error),
    /// Reading or writing a file under the state directory failed.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done (`"reading"`, `"writing"`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A file under the state directory exists but cannot be used.
    #[error("stored state {} is unusable: {reason}", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The ACME server refused a request, answered with a problem document, or could not
    /// be reached.
    #[error("acme request failed")]
    Acme(#[source] instant_acme::Error),
    /// The server offers no challenge of the configured kind for a name.
    #[error("the acme server offers no {kind} challenge for {name}")]
    ChallengeNotOffered {
        /// The name being authorized.
        name: String,
        /// The configured challenge kind.
        kind: &'static str,
    },
    /// The server asked to authorize a name the order did not contain.
    #[error("the acme server asked to authorize {0}, which was not ordered")]
    UnexpectedIdentifier(String),
    /// An authorization was already in a state that cannot become valid.
    #[error("authorization for {name} is {status}")]
    Authorization {
        /// The name.
        name: String,
        /// Its status as the server reported it.
        status: String,
    },
    /// The server tried the challenge answer and rejected it (or the order became
    /// invalid for another reason it names).
    #[error("validation failed: {detail}")]
    Validation {
        /// The server's explanation, one entry per failed name when it gave them.
        detail: String,
    },
    /// The order did not become ready or valid in the configured time.
    #[error("the acme order did not complete within {seconds} s")]
    Timeout {
        /// The limit that ran out.
        seconds: u64,
    },
    /// The server's certificate cannot be used: unparsable, for other names or another key.
    #[error("the certificate from the acme server is unusable: {0}")]
    BadCertificate(String),
    /// Generating a key, a CSR or a challenge certificate failed.
    #[error("generating {what} failed")]
    Generate {
        /// What was being generated.
        what: &'static str,
        /// The cause.
        #[source]
        source: rcgen::Error,
    },
    /// The task talking to the ACME server, or a blocking file task, panicked or was
    /// cancelled (a bug or a shutdown, not server input).
    #[error("the acme task ended abnormally")]
    Join(#[source] tokio::task::JoinError),
    /// rustls refused the TLS-ALPN-01 challenge certificate's key.
    #[error("challenge key refused by rustls")]
    ChallengeKey(#[source] rustls::Error),
    /// Something this crate computed itself is wrong (a bug, not server input).
    #[error("the acme task ended abnormally: {0}")]
    Task(String),
}

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

impl From<instant_acme::Error> for Error {
    fn from(error: instant_acme::Error) -> Self {
        Self::Acme(error)
    }
}
