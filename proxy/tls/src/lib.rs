//! Outbound TLS for every Culvert crate, so there is one of each: the process's rustls
//! crypto provider (aws-lc-rs), root stores read from PEM or from the system, rustls
//! client settings on that provider, and (feature `client`) the pooled HTTPS client
//! (hyper-util over hyper-rustls) the ACME and Cloudflare clients run on.
//!
//! A bottom crate: it depends on no workspace crate and holds no policy about which
//! roots to trust or how long a request may take; its callers decide and pass that in.
//! The root `clippy.toml` disallows `rustls::crypto::aws_lc_rs::default_provider` and
//! `hyper_rustls::HttpsConnectorBuilder::new` outside this crate, so a second provider
//! or a differently built connector cannot creep in.
//!
//! Start at [`crypto_provider`], [`add_pem_roots`] / [`add_system_roots`],
//! [`client_config`] and `https_client`.

#![forbid(unsafe_code)]

mod client;
mod error;
#[cfg(feature = "client")]
mod https;
mod provider;
mod roots;

pub use client::client_config;
pub use error::Error;
#[cfg(feature = "client")]
pub use https::{HttpsClient, HttpsOptions, https_client};
pub use provider::{crypto_provider, install_default};
pub use roots::{SystemRoots, add_pem_roots, add_system_roots, pem_roots};
