//! Culvert's cross-crate benchmarks and load tooling.
//!
//! This crate holds the echo backend shared by integration tests and load runs, the
//! open-loop load generator `culvert-load` (`src/bin/culvert-load/`), and the
//! side-by-side comparisons against nginx and HAProxy (`compare/`, scripts).
//! Router micro-benchmarks live with the router in `router/benches/`.
//!
//! The shipped `culvert` binary links none of it: the echo backend serves the live
//! conformance replay (`culvert-conformance --live`) and the tests.
//!
//! Status: the echo backend is here; start at [`EchoBackend::start`]. It speaks the
//! "Echo backend contract" of `bench/conformance/vectors/README.md`: a JSON echo
//! of each request in upstream `echo-basic`'s shape, `?delay=`, the `/retry/` prefix,
//! `X-Echo-Set-Header` and WebSocket echo, over HTTP/1.1 and h2c. [`TcpEchoBackend`]
//! is the TCP echo (clear text or TLS) behind TLSRoutes. [`tls`] has the
//! certificate check that loopback clients use.
#![forbid(unsafe_code)]

pub mod echo;
mod error;
pub mod tcp_echo;
pub mod tls;

pub use echo::{EchoBackend, EchoConfig, EchoProtocol, EchoTls, SeenRequest, TlsSeen};
pub use error::Error;
pub use tcp_echo::{TcpEchoBackend, TcpEchoConfig};
