//! Tunnel claims proven with Cloudflare: the translation asks, for each dedicated
//! Gateway, whether Cloudflare confirmed that its connector token holds the tunnel it
//! names, and this module keeps the answers.
//!
//! - [`inputs()`] (pure): from the objects and a translation, every claim to check: the
//!   Gateway, its parsed token, and where the API credential it is checked with
//!   lives (its GatewayConfig's `cloudflareCredentialsSecretRef`, else its class's);
//! - [`ClaimProofs`]: the [`ClaimChecker`](culvert_control_lite::translate::ClaimChecker)
//!   handed to the source. It answers from memory only: no IO, no waiting;
//! - [`ClaimTask`]: reads the credential Secrets through the API server, runs the
//!   checks that are due ([`ClaimProver::check_due`](culvert_cloudflare::ClaimProver::check_due)),
//!   and asks the source to translate again whenever what some Gateway's claim is
//!   known to be changes.
//!
//! A credential that is missing or unreadable leaves its claims unchecked, never
//! refuted. Neither a credential nor a connector token is ever logged. Start at
//! [`Claims::new`].

mod checker;
mod inputs;
mod task;

pub use checker::ClaimProofs;
pub use inputs::{ClaimInput, ClaimInputs, inputs};
pub use task::{CHECK_EVERY, ClaimTask, Claims, READ_CREDENTIALS_EVERY};

#[cfg(test)]
mod tests;
