//! Replaying the Gateway API conformance vectors (the corpus in
//! `bench/conformance/vectors/`, format described in its `README.md`) against Culvert:
//! statically through translation and the router, or live through a real data plane.
//! A crate of its own, with the `culvert-conformance` binary, so that the shipped
//! `culvert` binary links none of it (nor the echo backend it runs against).
//!
//! [`vector`] reads the vector files into typed data; [`certs`] generates the TLS
//! certificates and CA bundles that the vectors only describe; [`prepare`] turns a
//! file's resources into cluster state; [`checks`] judges conditions and status
//! checks; [`replay`] replays requests through the router without sockets; [`run`]
//! ties them together and renders the report. Start at [`run::run_dir`]. [`live`] sends
//! every exchange over real sockets instead ([`live::run_dir_live`]).
#![forbid(unsafe_code)]

pub mod certs;
pub mod checks;
pub mod infrastructure;
pub mod live;
pub mod observe;
pub mod prepare;
pub mod replay;
pub mod run;
pub mod vector;
