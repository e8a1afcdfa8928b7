//! The simulator's one error type: what can stop [`EdgeSim::start`](crate::EdgeSim::start)
//! (listeners, the state directory, the configuration, the CA and TLS setup).
//!
//! Failures while serving never come here: a refused registration is an answer on
//! the control stream, an API failure is an `ApiError` the envelope turns into a v4
//! error body, and a failed forward is the 502 the front door answers with.

/// Everything that can fail in `culvert-edge-sim`.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A socket or file operation failed.
    #[error("{what}")]
    Io {
        /// What was being done, e.g. `binding quic listener 127.0.0.1:7844`.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Neither a QUIC nor an HTTP/2 listener address was given.
    #[error("invalid configuration: the simulator needs at least one quic or http/2 address")]
    NoEdgeListener,
    /// The API token is empty or has characters a bearer token cannot carry.
    #[error("invalid configuration: the api token must be printable ascii without spaces")]
    InvalidApiToken,
    /// The configured account ID is not 32 lowercase hex characters.
    #[error("invalid configuration: account id {0:?} is not 32 lowercase hex characters")]
    InvalidAccountId(String),
    /// The state directory's `tunnel-token` is not a tunnel token.
    #[error("invalid tunnel token in the state directory")]
    Token(#[source] culvert_tunnel_proto::Error),
    /// The CA or the edge certificate could not be made.
    #[error("tls setup failed: {what}")]
    Certificate {
        /// Which step: `ca key`, `leaf certificate`, ...
        what: &'static str,
        /// The certificate library's error.
        #[source]
        source: rcgen::Error,
    },
    /// The TLS server configuration was refused.
    #[error("tls setup failed")]
    Tls(#[from] rustls::Error),
    /// The TLS configuration does not suit QUIC.
    #[error("tls setup failed: not usable for quic")]
    Quic(#[from] quinn::crypto::rustls::NoInitialCipherSuite),
    /// What the connector shares with the simulator failed: the random source or
    /// reading PEM certificates.
    #[error(transparent)]
    Connector(#[from] culvert_connector::Error),
}
