//! The logic of `culvert controller`: which Gateways get a dedicated data plane
//! and which classes a shared one, what is rendered for each, and the config
//! pushes that feed them.
//!
//! - [`planes`]: the planes one translation wants, dedicated and shared (pure);
//! - [`render`]: the typed Kubernetes objects of one plane (pure, `k8s-openapi`
//!   types, so they match the API schema by construction);
//! - [`credentials`]: tokens, the controller's CA and the planes' serving
//!   certificates;
//! - [`cluster`]: the writes to the API server (server-side apply, Secrets,
//!   removal of what no plane wants);
//! - [`push`]: every plane pod kept serving its plane's `DataPlaneConfig`: a pure
//!   state machine per plane ([`push::state`]: ask, push under which version, back
//!   off, summarise) and the [`push::Pusher`] that carries it out over HTTPS, one
//!   task per plane;
//! - [`push_status`]: what the pushes mean for status (`ProxyConfigPushed`,
//!   `Programmed` held until a pod serves);
//! - [`render_status`]: a plane that cannot be rendered turns its Gateway
//!   `Accepted=False` (`InvalidParameters`);
//! - [`claims`]: each dedicated Gateway's tunnel claim checked with Cloudflare
//!   (the credentials read, the checks run, the translation told);
//! - [`addresses`]: the addresses Gateways on the controller's planes report
//!   (the data Service's load balancer, `AddressNotAssigned` until there is one;
//!   a tunnel's name);
//! - [`cloudflare_sync`]: each tunnel plane's ingress and DNS records at
//!   Cloudflare, and what they mean for status;
//! - [`handover`]: a Gateway moving to a dedicated plane stays on the shared one
//!   until the new plane serves;
//! - [`run`]: the reconcile loop that ties them together while this process leads;
//! - [`serve`]: all of it assembled with the Kubernetes source, as `culvert
//!   controller` runs it.
//!
//! Start at [`serve::start`].
#![forbid(unsafe_code)]

pub mod addresses;
pub mod claims;
pub mod cloudflare_sync;
pub mod cluster;
pub mod credentials;
mod error;
pub mod handover;
pub mod planes;
pub mod push;
pub mod push_status;
pub mod render;
pub mod render_status;
pub mod run;
pub mod serve;
#[cfg(test)]
mod testing;

pub use error::Error;
