//! Support for replaying the Gateway API conformance vectors (the corpus in
//! `control-lite/tests/conformance/`, format described in its `README.md`) without a
//! cluster.
//!
//! [`vector`] reads the vector files into typed data; [`certs`] generates the TLS
//! certificates and CA bundles that the vectors only describe; [`prepare`] turns a
//! file's resources into cluster state; [`checks`] judges conditions and status
//! checks; [`replay`] replays requests through the router without sockets; [`run`]
//! ties them together and renders the report. Start at [`run::run_dir`].

pub mod certs;
pub mod checks;
pub mod observe;
pub mod prepare;
pub mod replay;
pub mod run;
pub mod vector;
