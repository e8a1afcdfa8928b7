//! Compiled backends and weighted selection.

use super::HeaderModifier;
use super::filter::{FilterScope, compile_filters};
use crate::config::{AppProtocol, BackendConfig, Unavailable};
use crate::error::{Error, Origin};
use std::net::SocketAddr;
use std::sync::Arc;

/// One backend of a rule, ready to be dialled.
#[derive(Debug, Clone)]
pub struct Backend {
    /// Display name (`namespace/service:port`).
    pub name: Arc<str>,
    /// Relative weight.
    pub weight: u32,
    /// Ready endpoints.
    pub endpoints: Arc<[SocketAddr]>,
    /// Protocol spoken to the endpoints.
    pub app_protocol: AppProtocol,
    /// Request header edits applied only when this backend is chosen.
    pub request_headers: Option<Box<HeaderModifier>>,
    /// Response header edits applied only when this backend is chosen.
    pub response_headers: Option<Box<HeaderModifier>>,
    /// Why the backend cannot be used, if it cannot.
    pub unavailable: Option<Unavailable>,
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

/// The weighted backends of a rule, with cumulative weights for O(log n) selection.
#[derive(Debug, Clone, Default)]
pub struct Backends {
    list: Vec<Backend>,
    /// `cumulative[i]` = sum of weights of `list[..=i]`.
    cumulative: Vec<u64>,
}

impl Backends {
    /// All backends, in configured order.
    pub fn as_slice(&self) -> &[Backend] {
        &self.list
    }

    /// Sum of all weights; 0 means no backend may receive traffic.
    pub fn total_weight(&self) -> u64 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    /// Picks a backend in proportion to its weight from a caller-supplied uniform
    /// random number. `None` when the total weight is zero (the caller answers 500).
    pub fn pick(&self, random: u64) -> Option<&Backend> {
        let total = self.total_weight();
        if total == 0 {
            return None;
        }
        // Multiply-shift maps `random` onto 0..total without modulo bias worth naming.
        let point = ((u128::from(random) * u128::from(total)) >> 64) as u64;
        let index = self.cumulative.partition_point(|&end| end <= point);
        self.list.get(index)
    }
}

pub(crate) fn compile_backends(configs: &[BackendConfig], at: &Origin) -> Result<Backends, Error> {
    let mut list = Vec::with_capacity(configs.len());
    let mut cumulative = Vec::with_capacity(configs.len());
    let mut total = 0u64;
    for config in configs {
        let backend = compile_backend(config, at)?;
        total += u64::from(backend.weight);
        cumulative.push(total);
        list.push(backend);
    }
    Ok(Backends { list, cumulative })
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
    })
}
