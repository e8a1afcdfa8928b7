//! Request outcomes: what happens to a request after it has matched a rule. Owns the
//! pure functions that turn a compiled [`crate::rule`] filter into concrete edits:
//! header changes ([`apply_header_modifier`]), path rewrites ([`rewrite_path`]),
//! redirect targets ([`redirect_location`]), CORS answers ([`is_preflight`],
//! [`preflight_response`], [`response_headers`]) and the gRPC status a local answer
//! to a gRPC call carries ([`is_grpc_content_type`], [`grpc_status_for_http`],
//! [`grpc_status`], [`grpc_code`], [`grpc_code_name`]).
//!
//! The data plane and the conformance harness both call these, so an outcome is the
//! same wherever it is computed. Nothing here does IO, reads a clock or keeps state,
//! and nothing may panic on any request: odd input (a bad prefix length, a missing
//! `Origin`) yields a well-formed, conservative answer instead.
//!
//! Weighted backend choice and mirror sampling are not here: they are
//! [`Backends::pick`](crate::rule::Backends::pick) and
//! [`Mirror::sample`](crate::rule::Mirror::sample).

mod cors;
mod grpc;
mod headers;
mod redirect;
mod rewrite;

pub use cors::{is_preflight, preflight_response, response_headers};
pub use grpc::{
    grpc_code, grpc_code_name, grpc_status, grpc_status_for_http, is_grpc_content_type,
};
pub use headers::apply_header_modifier;
pub use redirect::{RedirectRequest, redirect_location};
pub use rewrite::rewrite_path;

#[cfg(test)]
mod tests;
