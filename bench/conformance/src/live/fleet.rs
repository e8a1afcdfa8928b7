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
use culvert_bench::{EchoBackend, EchoConfig, EchoTls, SeenRequest, TcpEchoBackend, TcpEchoConfig};
use culvert_router::DataPlaneConfig;
use culvert_router::config::{BackendConfig, BackendTlsConfig};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::sync::Arc;

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
    /// Backends the config reaches over TLS terminate it with a certificate from
    /// `secrets` (chain and key by `namespace/name`) that their TLS settings
    /// accept, and take any client certificate their CA bundle signed.
    pub(super) async fn rewrite(
        &mut self,
        config: &mut DataPlaneConfig,
        owners: &EndpointOwners,
        secrets: &BTreeMap<String, (String, String)>,
    ) -> Result<(), String> {
        let mut endpoints = Vec::new();
        for_each_http_backend(config, |backend| {
            let tls = backend.tls.as_ref();
            endpoints.extend(backend.endpoints.iter().map(|e| (*e, tls.cloned())));
        });
        for (endpoint, tls) in endpoints {
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
            let tls = match tls {
                Some(settings) => Some(serving_tls(&settings, secrets).ok_or_else(|| {
                    format!(
                        "no TLS Secret holds a certificate for {} that its backend TLS settings accept",
                        settings.hostname
                    )
                })?),
                None => None,
            };
            let echo = EchoBackend::start(EchoConfig {
                namespace: namespace.to_owned(),
                pod,
                tls,
                ..EchoConfig::new(service)
            })
            .await
            .map_err(|err| format!("starting an echo backend for {owner}: {err}"))?;
            self.backends.insert(endpoint, (owner, echo));
        }
        let fleet = &self.backends;
        for_each_http_backend(config, |backend| {
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

/// Calls `visit` on every backend of the config's HTTP and gRPC routes (TLSRoute
/// backends get TCP echo backends instead).
fn for_each_http_backend(config: &mut DataPlaneConfig, mut visit: impl FnMut(&mut BackendConfig)) {
    for route in &mut config.http_routes {
        route.for_each_backend_mut(&mut visit);
    }
    for route in &mut config.grpc_routes {
        route.for_each_backend_mut(&mut visit);
    }
}

/// The TLS a backend with `settings` serves: the first Secret certificate valid
/// for its hostname under its CA certificates, and those CAs for client
/// certificates. `None` when no Secret has one (or the system's roots are asked
/// for, which no test certificate chains to).
fn serving_tls(
    settings: &BackendTlsConfig,
    secrets: &BTreeMap<String, (String, String)>,
) -> Option<EchoTls> {
    let bundle = settings.ca_certificates_pem.as_ref()?;
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
        roots.add(certificate.ok()?).ok()?;
    }
    let provider = culvert_tls::crypto_provider();
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .ok()?;
    let name = ServerName::try_from(settings.hostname.clone()).ok()?;
    let accepts = |chain: &str| {
        let mut certificates =
            CertificateDer::pem_slice_iter(chain.as_bytes()).filter_map(Result::ok);
        let Some(leaf) = certificates.next() else {
            return false;
        };
        let intermediates: Vec<_> = certificates.collect();
        verifier
            .verify_server_cert(&leaf, &intermediates, &name, &[], UnixTime::now())
            .is_ok()
    };
    let (chain, key) = secrets.values().find(|(chain, _)| accepts(chain))?;
    Some(EchoTls {
        certificate_pem: chain.clone(),
        private_key_pem: key.clone(),
        client_ca_pem: Some(bundle.clone()),
    })
}
