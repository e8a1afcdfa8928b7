//! Built-in ACME: `HTTPS` listeners with `tls.acme` get their certificates from an ACME
//! server (HTTP-01 or TLS-ALPN-01, by `culvert-acme`) instead of from the config.
//!
//! Three parts, each with one job:
//!
//! - [`AcmeSettings`]: the process's ACME settings (`culvert serve --acme-*`).
//! - [`AcmeCertificates`] (`certificates.rs`): what compiling a snapshot needs: the
//!   certificate an ACME listener serves now (the issued files under the state
//!   directory, stamped so the certificate poll swaps a renewal in; until they exist, a
//!   self-signed stand-in from `placeholder.rs`), and the challenge stores the
//!   listeners answer from.
//! - `managers.rs`: a thread of its own running one `culvert_acme::Manager` per ACME
//!   hostname of the serving snapshot, started and stopped as configs change; their
//!   failures are logged and retried, and never touch serving.
//!
//! Nothing here is on the request path: a request or handshake only reads the
//! challenge stores (`culvert_acme::Challenges`).

mod certificates;
mod managers;
mod placeholder;

pub use certificates::AcmeCertificates;
pub(crate) use managers::{AcmeManagers, spawn};

use std::path::PathBuf;
use std::sync::Arc;

pub use culvert_acme::{ChallengeKind, Clock as AcmeClock};

/// How this process obtains certificates for ACME listeners.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AcmeSettings {
    /// The ACME directory URL (for example Let's Encrypt's).
    pub directory_url: String,
    /// Contact e-mail addresses for the account.
    pub contacts: Vec<String>,
    /// Where the account and the certificates are kept
    /// (`<state_dir>/<hostname>/tls.crt`, `tls.key`).
    pub state_dir: PathBuf,
    /// How names are validated.
    pub challenge: ChallengeKind,
    /// Extra root certificates (PEM) trusted for the directory's TLS.
    pub trust_pem: Option<String>,
    /// The clock renewal is decided by; `None` is the system clock. Tests move it
    /// to make a certificate due.
    pub clock: Option<Arc<dyn AcmeClock>>,
}

impl AcmeSettings {
    /// Settings for `directory_url`, kept under `state_dir`, validated by `challenge`;
    /// no contacts, no extra roots, the system clock.
    pub fn new(
        directory_url: impl Into<String>,
        state_dir: impl Into<PathBuf>,
        challenge: ChallengeKind,
    ) -> Self {
        Self {
            directory_url: directory_url.into(),
            contacts: Vec::new(),
            state_dir: state_dir.into(),
            challenge,
            trust_pem: None,
            clock: None,
        }
    }
}
