//! A running listener of a fake server: its address, the kubeconfig that reaches
//! it, a ready `kube::Client`, and stopping (dropping it stops too). Stopping cuts
//! every connection, as a server going down does; the state stays with the
//! [`crate::FakeApiServer`], which can serve again on the same address.

use std::net::SocketAddr;
use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::oneshot;

use crate::error::Error;
use crate::http::Listener;
use crate::tls;

/// A listening server; dropping it (or [`Serving::stop`]) closes the listener and
/// every connection.
#[derive(Debug)]
pub struct Serving {
    /// Where it listens.
    pub addr: SocketAddr,
    token: String,
    ca_pem: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Serving {
    pub(crate) fn new(listener: Listener, token: String) -> Self {
        Self {
            addr: listener.addr,
            token,
            ca_pem: listener.ca_pem,
            stop: Some(listener.stop),
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The CA certificate (PEM) the server's certificate chains to.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A kubeconfig (YAML) for this server: its URL, the CA data, the bearer token,
    /// and a current context in namespace `default`.
    pub fn kubeconfig(&self) -> String {
        tls::kubeconfig(&self.url(), &self.ca_pem, &self.token)
    }

    /// Writes [`Serving::kubeconfig`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// A kube-rs client built from [`Serving::kubeconfig`], as a kubeconfig file
    /// would build it.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let kubeconfig = Kubeconfig::from_yaml(&self.kubeconfig()).map_err(Error::Kubeconfig)?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(Error::Kubeconfig)?;
        kube::Client::try_from(config).map_err(Error::Client)
    }

    /// Stops serving: the listener closes and open connections are cut.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.halt();
    }
}
