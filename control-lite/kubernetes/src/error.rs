//! Errors of the Kubernetes source.

/// Why the Kubernetes source could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The named kubeconfig could not be read or used.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No cluster configuration was found.
    #[error("no Kubernetes configuration (KUBECONFIG, ~/.kube/config or in-cluster): {0}")]
    Infer(#[source] kube::config::InferConfigError),
    /// The client could not be built from the configuration.
    #[error("building the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
    /// The source's thread or runtime could not start.
    #[error("starting the Kubernetes source: {0}")]
    Runtime(#[source] std::io::Error),
}
