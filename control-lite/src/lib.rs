//! Culvert's slim control plane: Gateway API objects in, data-plane configs and
//! status out.
//!
//! - [`load`] reads manifests (YAML or JSON, files or directories) into documents,
//!   naming file, document and field for anything malformed;
//! - [`model`] types the objects and [`store::Store`] indexes them;
//! - [`translate`] is the pure function from a store to one
//!   `culvert_router::DataPlaneConfig` per data plane plus every status condition;
//! - [`Error`] says why an object translation reads (a connector token, a TLS
//!   Secret, an annotation) cannot be used, in the words its condition carries.
//!
//! Translation must stay a pure function of the objects it is given: no IO, no
//! clock, no hidden state, so the conformance vectors (`culvert-conformance`) replay it
//! without a cluster.
//! Sources (file watch, Kubernetes) and sinks (in-process swap, config push) live
//! outside it.
#![forbid(unsafe_code)]

mod error;
pub mod load;
pub mod model;
pub mod store;
pub mod translate;

pub use error::Error;
