//! The request pipeline's decisions, without IO: what the worker does with a
//! request is decided here from the request head, the route-table snapshot and what
//! is known of the connection, and carried out by the worker.
//!
//! - `plan`: route a request and answer it locally or rewrite it for the backend;
//! - `attempts`: endpoints, per-attempt time limits and retries;
//! - `failure`: why a request got no usable answer from a backend, as a status, a
//!   metric label and a gRPC status;
//! - `fields`: the header rules of a proxy hop (routing host, hop-by-hop fields,
//!   upgrades, forwarding fields);
//! - `tls`: where a TLS connection goes by the name in its ClientHello
//!   (HTTP here, its stream to a TLSRoute's backend with or without TLS, or
//!   refused);
//! - `connection`: the facts about a request's connection.
//!
//! Nothing here touches a socket, a timer or the worker's state: every function
//! takes what it decides on and returns the decision, and the table-driven tests
//! check them without a network.

mod attempts;
mod connection;
mod failure;
pub(crate) mod fields;
mod plan;
#[cfg(test)]
mod tests;
mod tls;

pub(crate) use attempts::{AttemptEnd, Attempts, attempt_limit, pick_endpoint};
pub(crate) use connection::{ClientCertificate, ConnectionInfo, Transport};
pub(crate) use failure::{BackendFailure, grpc_local_answer};
pub(crate) use plan::{Forward, LocalAnswer, Plan, Planned, UpstreamHead, plan};
pub(crate) use tls::{TlsForward, TlsPlan, plan_tls};
