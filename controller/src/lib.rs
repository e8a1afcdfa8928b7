//! The logic of `culvert controller`: which Gateways get a dedicated data plane,
//! what is rendered for each, and the config pushes that feed them.
//!
//! This first module, [`render`], is the pure part: from a Gateway, its
//! `GatewayConfig` and what the controller knows about itself, the typed
//! Kubernetes objects of one dedicated plane (Deployment, headless config Service,
//! NetworkPolicy, PodDisruptionBudget, HorizontalPodAutoscaler), built from
//! `k8s-openapi` types so they match the API schema by construction and serialise
//! for server-side apply. It never does IO, reads a clock or talks to the API
//! server; applying, watching and pushing belong to the controller around it.
//! Start at [`render::render`].
#![forbid(unsafe_code)]

pub mod credentials;
mod error;
pub mod render;

pub use error::Error;
