//! Compiled backends and weighted selection.

use super::HeaderModifier;
use super::filter::{FilterScope, compile_filters};
use crate::config::{AppProtocol, BackendConfig, BackendTlsConfig, Unavailable};
use crate::error::{Error, Origin};
use std::net::SocketAddr;
use std::sync::Arc;

/// One backend of a rule, ready to be dialled.
#[derive(Debug, Clone)]
pub struct Backend {
    /// Display name (`namespace/service:port`).
    pub name: Box<str>,
    /// Relative weight.
    pub weight: u32,
    /// Ready endpoints.
    pub endpoints: Box<[SocketAddr]>,
    /// Protocol spoken to the endpoints.
    pub app_protocol: AppProtocol,
    /// Request header edits applied only when this backend is chosen.
    pub request_headers: Option<Box<HeaderModifier>>,
    /// Response header edits applied only when this backend is chosen.
    pub response_headers: Option<Box<HeaderModifier>>,
    /// Why the backend cannot be used, if it cannot.
    pub unavailable: Option<Unavailable>,
    /// TLS to the endpoints, if they speak it (shared by every rule naming it).
    pub tls: Option<Arc<BackendTlsConfig>>,
}

impl Backend {
    /// The status a request sent to this backend gets without being forwarded:
    /// 500 for an invalid reference, 503 when there is no endpoint. `None` means
    /// the backend can be dialled.
    pub fn failure_status(&self) -> Option<u16> {
        match self.unavailable {
            Some(Unavailable::InvalidReference) => Some(500),
            Some(Unavailable::NoEndpoints) => Some(503),
            None if self.endpoints.is_empty() => Some(503),
            None => None,
        }
    }
}

/// The weighted backends of a rule. Gateway API allows at most 16 per rule, so a
/// linear scan picks one faster than a search structure would, and costs no memory.
#[derive(Debug, Clone, Default)]
pub struct Backends {
    list: Box<[Backend]>,
    total: u64,
}

impl Backends {
    /// All backends, in configured order.
    pub fn as_slice(&self) -> &[Backend] {
        &self.list
    }

    /// Sum of all weights; 0 means no backend may receive traffic.
    pub fn total_weight(&self) -> u64 {
        self.total
    }

    /// Picks a backend in proportion to its weight from a caller-supplied uniform
    /// random number. `None` when the total weight is zero (the caller answers 500).
    pub fn pick(&self, random: u64) -> Option<&Backend> {
        if self.total == 0 {
            return None;
        }
        // Multiply-shift maps `random` onto 0..total without modulo bias worth naming.
        let mut point = ((u128::from(random) * u128::from(self.total)) >> 64) as u64;
        for backend in &self.list {
            let weight = u64::from(backend.weight);
            if point < weight {
                return Some(backend);
            }
            point -= weight;
        }
        None
    }
}

pub(crate) fn compile_backends(configs: &[BackendConfig], at: &Origin) -> Result<Backends, Error> {
    let list = configs
        .iter()
        .map(|config| compile_backend(config, at))
        .collect::<Result<Box<[_]>, _>>()?;
    let total = list.iter().map(|b| u64::from(b.weight)).sum();
    Ok(Backends { list, total })
}

pub(crate) fn compile_backend(config: &BackendConfig, at: &Origin) -> Result<Backend, Error> {
    if config.weight > 1_000_000 {
        return Err(at.error(format!(
            "backend {:?} weight {} exceeds 1000000",
            config.name, config.weight
        )));
    }
    let filters = compile_filters(&config.filters, FilterScope::Backend, at)?;
    let (request_headers, response_headers) = match filters {
        Some(filters) => {
            let filters = *filters;
            (
                filters.request_headers.map(Box::new),
                filters.response_headers.map(Box::new),
            )
        }
        None => (None, None),
    };
    Ok(Backend {
        name: config.name.as_str().into(),
        weight: config.weight,
        endpoints: config.endpoints.as_slice().into(),
        app_protocol: config.app_protocol,
        request_headers,
        response_headers,
        unavailable: config.unavailable,
        tls: config.tls.clone().map(Arc::new),
    })
}
