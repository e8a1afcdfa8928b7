//! The echo backends of one live run: one `culvert_bench::EchoBackend` per endpoint
//! address of an HTTP or gRPC route the translation produced, named after the
//! Service that owns it and the pod the endpoint stands for; one
//! `culvert_bench::TcpEchoBackend` per endpoint of a TLSRoute: behind a passthrough
//! listener it terminates TLS itself with a certificate made for the route's
//! hostnames (the vectors' `tcp-backend` on its TLS port), behind a listener that
//! terminates TLS it speaks clear text (its plain port); and the config rewritten
//! to send each endpoint's traffic to its echo backend.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::prepare::EndpointOwners;
use culvert_bench::{EchoBackend, EchoConfig, SeenRequest, TcpEchoBackend, TcpEchoConfig};
use culvert_router::DataPlaneConfig;
use culvert_router::config::{BackendConfig, HttpFilterConfig};

/// Echo backends by the endpoint address they stand in for.
#[derive(Default)]
pub(super) struct Fleet {
    backends: BTreeMap<SocketAddr, (String, EchoBackend)>,
    /// TCP echo backends of TLSRoute endpoints; each greets with its Service
    /// (`namespace/name`) as its name.
    tcp: BTreeMap<SocketAddr, TcpEchoBackend>,
}

/// How many requests each backend had seen, to find the new ones afterwards.
pub(super) type Counts = BTreeMap<SocketAddr, u64>;

impl Fleet {
    /// Points every endpoint of `config` at an echo backend, starting the ones not
    /// running yet (on the current tokio runtime).
    pub(super) async fn rewrite(
        &mut self,
        config: &mut DataPlaneConfig,
        owners: &EndpointOwners,
    ) -> Result<(), String> {
        let mut endpoints = Vec::new();
        for_each_backend(config, &mut |backend| {
            endpoints.extend(backend.endpoints.iter().copied())
        });
        for endpoint in endpoints {
            if self.backends.contains_key(&endpoint) {
                continue;
            }
            let owner = owners
                .owner(endpoint.ip())
                .unwrap_or("unknown/unknown")
                .to_owned();
            let (namespace, service) = owner.split_once('/').unwrap_or(("", owner.as_str()));
            // The pod the endpoint stands for; pods live in their Service's namespace.
            let pod = owners
                .pod(endpoint.ip())
                .and_then(|pod| pod.split_once('/'))
                .map(|(_, pod)| pod.to_owned());
            let echo = EchoBackend::start(EchoConfig {
                namespace: namespace.to_owned(),
                pod,
                ..EchoConfig::new(service)
            })
            .await
            .map_err(|err| format!("starting an echo backend for {owner}: {err}"))?;
            self.backends.insert(endpoint, (owner, echo));
        }
        let fleet = &self.backends;
        for_each_backend(config, &mut |backend| {
            for endpoint in &mut backend.endpoints {
                if let Some((_, echo)) = fleet.get(endpoint) {
                    *endpoint = echo.addr();
                }
            }
        });
        self.rewrite_tls_routes(config, owners).await
    }

    /// Points every TLSRoute endpoint at a TCP echo backend, terminating TLS
    /// itself when the route's listener passes TLS through.
    async fn rewrite_tls_routes(
        &mut self,
        config: &mut DataPlaneConfig,
        owners: &EndpointOwners,
    ) -> Result<(), String> {
        let listeners = config.listeners.clone();
        for route in &mut config.tls_routes {
            let names = if route.hostnames.is_empty() {
                vec!["tcp-backend.invalid".to_owned()]
            } else {
                route.hostnames.clone()
            };
            let passthrough = route.listeners.first().is_none_or(|name| {
                listeners
                    .iter()
                    .find(|listener| &listener.name == name)
                    .is_none_or(|listener| !listener.terminates_tls())
            });
            for backend in &mut route.backends {
                for endpoint in &mut backend.endpoints {
                    if !self.tcp.contains_key(endpoint) {
                        let owner = owners.owner(endpoint.ip()).unwrap_or("unknown/unknown");
                        let echo = TcpEchoBackend::start(TcpEchoConfig {
                            name: owner.to_owned(),
                            tls: if passthrough {
                                Some(self_signed(&names)?)
                            } else {
                                None
                            },
                            ..TcpEchoConfig::default()
                        })
                        .await
                        .map_err(|err| format!("starting a TCP echo backend for {owner}: {err}"))?;
                        self.tcp.insert(*endpoint, echo);
                    }
                    if let Some(echo) = self.tcp.get(endpoint) {
                        *endpoint = echo.addr();
                    }
                }
            }
        }
        Ok(())
    }

    /// How many requests each backend has seen so far.
    pub(super) fn counts(&self) -> Counts {
        self.backends
            .iter()
            .map(|(endpoint, (_, echo))| (*endpoint, echo.count()))
            .collect()
    }

    /// Every request that arrived since `before`, with the Service that received it.
    pub(super) fn arrived_since(&self, before: &Counts) -> Vec<(String, SeenRequest)> {
        let mut out = Vec::new();
        for (endpoint, (owner, echo)) in &self.backends {
            let new = echo.count() - before.get(endpoint).copied().unwrap_or(0);
            let recent = usize::try_from(new).unwrap_or(usize::MAX);
            out.extend(
                echo.recent_requests(recent)
                    .into_iter()
                    .map(|seen| (owner.clone(), seen)),
            );
        }
        out
    }
}

/// A self-signed certificate and key (PEM) for `names` (the harness's client does
/// not verify server certificates; what a passthrough is judged by is that the
/// backend terminated the session and saw the client's SNI).
fn self_signed(names: &[String]) -> Result<(String, String), String> {
    let certified = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|err| format!("generating a backend certificate: {err}"))?;
    Ok((certified.cert.pem(), certified.signing_key.serialize_pem()))
}

/// Calls `visit` on every backend of `config`: rule backends and mirror targets.
fn for_each_backend(config: &mut DataPlaneConfig, visit: &mut dyn FnMut(&mut BackendConfig)) {
    let filters = |filters: &mut Vec<HttpFilterConfig>,
                   visit: &mut dyn FnMut(&mut BackendConfig)| {
        for filter in filters {
            if let HttpFilterConfig::RequestMirror { request_mirror } = filter {
                visit(&mut request_mirror.backend);
            }
        }
    };
    for route in &mut config.http_routes {
        for rule in &mut route.rules {
            filters(&mut rule.filters, visit);
            for backend in &mut rule.backends {
                filters(&mut backend.filters, visit);
                visit(backend);
            }
        }
    }
    for route in &mut config.grpc_routes {
        for rule in &mut route.rules {
            filters(&mut rule.filters, visit);
            for backend in &mut rule.backends {
                visit(backend);
            }
        }
    }
}
