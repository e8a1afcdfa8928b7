//! Connecting to the API server: a kubeconfig file when one is named, otherwise
//! kube-rs's inference (`KUBECONFIG`, `~/.kube/config`, then the in-cluster service
//! account). TLS is rustls on aws-lc-rs.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::Error;

/// A client for the cluster `kubeconfig` names, or the inferred one.
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, Error> {
    let config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
                path: path.display().to_string(),
                source,
            })?;
            Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                .await
                .map_err(|source| Error::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                })?
        }
        None => Config::infer().await.map_err(Error::Infer)?,
    };
    Client::try_from(config).map_err(Error::Client)
}
