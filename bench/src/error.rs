//! The crate's error type.
//!
//! Only setting a backend up can fail in a way the caller sees; once serving, a bad
//! peer gets a 4xx answer or a closed connection, never an `Error`.

use std::io;
use std::net::SocketAddr;

/// What failed while starting an echo backend.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listening socket could not be bound.
    #[error("failed to bind the echo backend to {addr}")]
    Bind {
        /// The address that was asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The bound socket's address could not be read back.
    #[error("failed to read the echo backend's local address")]
    LocalAddr(#[source] io::Error),
    /// The certificate chain or key given to a TLS echo backend is unusable.
    #[error("the echo backend's certificate or key is unusable: {0}")]
    Certificate(String),
}
