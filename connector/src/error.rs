//! The crate's one error type.
//!
//! Every failure the drivers can report is a variant of
//! [`Error`]; what the protocol core refuses (malformed tokens, frames, Cap'n Proto
//! messages, RPC sequences, metadata) comes as [`Error::Protocol`]. Peer input never
//! panics.

use std::net::SocketAddr;

use crate::proto::RegistrationError;

/// Everything that can fail in `culvert-connector`.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tunnel protocol was broken, or a token or message could not be read
    /// (see [`crate::proto::Error`]).
    #[error(transparent)]
    Protocol(#[from] crate::proto::Error),
    /// A socket or file operation failed.
    #[error("{what}")]
    Io {
        /// What was being done, e.g. `reading /tmp/ca.pem`.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Trust roots, certificates or keys could not be set up (no certificate
    /// found, no trusted root: a message is all there is).
    #[error("tls setup failed: {0}")]
    Tls(String),
    /// A PEM buffer or file could not be read.
    #[error("tls setup failed: {what}: {source}")]
    Pem {
        /// Which buffer or file, e.g. `edge ca pem` or its path.
        what: String,
        /// Why the PEM could not be read.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// rustls refused a certificate or a configuration, or the random source
    /// failed.
    #[error("tls setup failed: {what}: {source}")]
    Rustls {
        /// What was being set up, e.g. a CA file's path.
        what: String,
        /// rustls's error.
        #[source]
        source: rustls::Error,
    },
    /// The rustls configuration has no cipher suite QUIC can start with.
    #[error("tls setup failed: {0}")]
    QuicCipherSuite(#[source] quinn::crypto::rustls::NoInitialCipherSuite),
    /// The tunnel configuration is not usable.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A QUIC connection to the edge could not be established or was lost.
    #[error("quic connection to {addr} failed: {reason}")]
    Quic {
        /// The edge address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A DNS message could not be read (a malformed or hostile answer).
    #[error("malformed dns message: {0}")]
    DnsMessage(&'static str),
    /// A DNS query got no usable answer from any nameserver.
    #[error("dns query for {name} failed: {reason}")]
    Dns {
        /// The name asked for.
        name: String,
        /// Why (the last nameserver's failure).
        reason: String,
    },
    /// No edge addresses could be discovered.
    #[error("edge discovery failed: {0}")]
    Discovery(String),
    /// The edge refused a registration for good; the tunnel stops.
    #[error("connection {conn_index} could not register: {error}")]
    Registration {
        /// The HA connection index.
        conn_index: u8,
        /// The edge's answer, classified.
        error: RegistrationError,
    },
}
