//! The one error type of the data-plane library. Each variant says what failed; the
//! cause, when there is one, is its `#[source]`.

use std::net::SocketAddr;

/// The error of a body or an exchange whose causes are of many types.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What went wrong while starting the data plane or applying a config.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The config document is not valid `DataPlaneConfig` JSON.
    #[error("config is not a valid DataPlaneConfig document")]
    ConfigJson(#[source] serde_json::Error),
    /// The router refused to compile the config.
    #[error("config refused by the router")]
    ConfigRefused(#[source] culvert_router::Error),
    /// The config source (manifests on disk) refused to load (see
    /// [`crate::ConfigSource::load`]).
    #[error("manifests refused")]
    Source(#[source] BoxError),
    /// The tunnel could not be set up (bad token, no edge address, bad CA file).
    #[error("tunnel: {0}")]
    Tunnel(culvert_connector::Error),
    /// A certificate could not be loaded or a TLS setting is invalid.
    #[error("tls: {0}")]
    Tls(TlsError),
    /// The config is older than the one serving.
    #[error("config version {offered} is older than the serving version {current}")]
    StaleVersion {
        /// Version of the refused config.
        offered: u64,
        /// Version of the config serving.
        current: u64,
    },
    /// The config has the serving version but other content: a version names one
    /// content, so one of the two pushers is wrong.
    #[error(
        "config version {version} already serves other content (serving hash {serving}, offered {offered})"
    )]
    VersionConflict {
        /// The version both have.
        version: u64,
        /// Content hash of the serving config.
        serving: String,
        /// Content hash of the refused config.
        offered: String,
    },
    /// The control address is reachable from other hosts without a token and TLS.
    #[error(
        "control address {addr} is not loopback: it needs a token (--token or \
         CULVERT_TOKEN) and TLS (--control-tls-cert and --control-tls-key), or \
         --insecure-control"
    )]
    InsecureControl {
        /// The control address asked for.
        addr: SocketAddr,
    },
    /// A listening socket could not be opened.
    #[error("binding {addr}")]
    Bind {
        /// The address to bind.
        addr: SocketAddr,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A tokio runtime could not be built.
    #[error("building a runtime")]
    Runtime(#[source] std::io::Error),
    /// An OS thread could not be started.
    #[error("starting thread {name}")]
    Thread {
        /// Name of the thread.
        name: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A worker thread ended before it reported that it was serving.
    #[error("worker {index} stopped while starting")]
    WorkerLost {
        /// Index of the worker.
        index: usize,
    },
}

/// Why TLS could not be set up from a config.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// Two certificates share a namespace and name.
    #[error("certificate {namespace}/{name} is defined twice")]
    Duplicate {
        /// The certificate's namespace.
        namespace: String,
        /// The certificate's name.
        name: String,
    },
    /// A certificate or its key could not be read or does not parse.
    #[error("certificate {namespace}/{name}: {reason}")]
    Certificate {
        /// The certificate's namespace.
        namespace: String,
        /// The certificate's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An HTTPS listener names no certificate.
    #[error("HTTPS listener {listener:?} has no certificateRefs")]
    NoCertificate {
        /// The listener's name.
        listener: String,
    },
    /// A listener asks for ACME, but the process has no ACME settings.
    #[error(
        "listener {listener:?} asks for tls.acme, but this data plane has no ACME directory (culvert serve --acme-directory)"
    )]
    AcmeNotConfigured {
        /// The listener's name.
        listener: String,
    },
    /// An ACME listener's certificate (or its stand-in) cannot be made.
    #[error("listener {listener:?}: acme: {reason}")]
    Acme {
        /// The listener's name.
        listener: String,
        /// What failed.
        reason: String,
    },
    /// A listener names a certificate the config does not define.
    #[error(
        "listener {listener:?} refers to certificate {namespace}/{name}, which the config does not define"
    )]
    UnknownCertificate {
        /// The listener's name.
        listener: String,
        /// The certificate's namespace.
        namespace: String,
        /// The certificate's name.
        name: String,
    },
    /// A listener's client certificate validation cannot be set up.
    #[error("listener {listener:?}: client certificate validation: {reason}")]
    ClientValidation {
        /// The listener's name.
        listener: String,
        /// What is wrong.
        reason: String,
    },
    /// A backend's TLS settings cannot be used.
    #[error("TLS to backend {hostname:?}: {reason}")]
    Backend {
        /// The backend's TLS hostname.
        hostname: String,
        /// What is wrong.
        reason: String,
    },
    /// The config API's own certificate did not load.
    #[error("control certificate did not load")]
    ControlCertificate,
    /// rustls refused the settings.
    #[error("{0}")]
    Rustls(rustls::Error),
    /// No session-ticket keys could be made.
    #[error("cannot make session ticket keys: {0}")]
    Ticketer(rustls::Error),
}

impl Error {
    /// This error and its causes, joined with `: `, for answers and logs.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }
}
