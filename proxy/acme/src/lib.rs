//! Certificates by ACME (RFC 8555) for listeners that have no cert-manager in front of
//! them: an account kept on disk, orders answered by HTTP-01 or TLS-ALPN-01 (RFC 8737),
//! the certificate and its key written where the proxy reads certificate files, and a
//! renewal at two thirds of each certificate's lifetime.
//!
//! The crate holds no global state and serves no socket. What the proxy needs:
//!
//! - [`Challenges`]: the answers a [`Manager`] publishes while an order is validated.
//!   [`Http01Challenges::response`] is what the port-80 listener answers for
//!   `GET /.well-known/acme-challenge/<token>`; [`TlsAlpnChallenges`] is a rustls
//!   certificate resolver for handshakes that offer ALPN `acme-tls/1` ([`ACME_TLS_ALPN`]).
//! - [`Manager`]: one per certificate ([`AcmeConfig`]). [`Manager::renew_if_due`] does one
//!   round (read what is on disk, decide, order if due, write); [`Manager::run`] repeats it
//!   until shut down, retrying failures with backoff. Files land at
//!   [`Manager::paths`]: `<state_dir>/<first name>/tls.crt` and `tls.key`.
//!
//! Everything the ACME server sends is untrusted: it is bounded in size and time, parsed
//! without panics, and a certificate is written only if it covers the configured names
//! and carries the key this crate generated. Start reading at [`Manager::renew_if_due`].

#![forbid(unsafe_code)]

mod account;
mod challenge;
mod clock;
mod config;
mod error;
mod files;
mod http;
mod issue;
mod manager;
mod renewal;
mod stored;
#[cfg(feature = "test-support")]
pub mod testing;
mod validity;

pub use challenge::{ACME_TLS_ALPN, Challenges, Http01Challenges, TlsAlpnChallenges};
pub use clock::{Clock, SystemClock};
pub use config::{AcmeConfig, Backoff, ChallengeKind};
pub use error::Error;
pub use manager::{Action, Manager, Report, Status};
pub use renewal::renew_at;
pub use stored::CertificatePaths;
