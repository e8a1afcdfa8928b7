//! Compiled rules: what the data plane does once a request has matched, with every
//! value validated and parsed ahead of time (header names, status codes, durations,
//! weights). Start at [`Rule`].

mod backend;
mod filter;

pub use backend::{Backend, Backends};
pub use filter::{
    AllowList, Cors, Filters, HeaderModifier, Mirror, OriginPattern, PathModifier, Redirect,
    RedirectScheme, Rewrite,
};

pub(crate) use backend::compile_backends;
pub(crate) use filter::{FilterScope, compile_filters};

use crate::config::{RetryConfig, TimeoutsConfig};
use crate::duration::parse_duration;
use crate::error::{Error, Origin};
use std::time::Duration;

/// One compiled rule of an HTTP or gRPC route.
#[derive(Debug)]
pub struct Rule {
    pub(crate) name: Option<Box<str>>,
    /// Boxed: most rules have no filters, and an empty box costs one pointer.
    pub(crate) filters: Option<Box<Filters>>,
    pub(crate) backends: Backends,
    /// Timeouts and retries, boxed: most rules set neither.
    pub(crate) policy: Option<Box<Policy>>,
}

/// The rarely set parts of a rule.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    pub(crate) timeouts: Timeouts,
    pub(crate) retry: Option<Retry>,
}

impl Policy {
    /// `None` when neither part is set.
    pub(crate) fn boxed(timeouts: Timeouts, retry: Option<Retry>) -> Option<Box<Self>> {
        (timeouts != Timeouts::default() || retry.is_some())
            .then(|| Box::new(Self { timeouts, retry }))
    }
}

static NO_FILTERS: Filters = Filters::EMPTY;

impl Rule {
    /// The rule's name, if the route gave it one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Filters applied to every request this rule matches.
    pub fn filters(&self) -> &Filters {
        self.filters.as_deref().unwrap_or(&NO_FILTERS)
    }

    /// The weighted backends.
    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    /// Request and backend timeouts.
    pub fn timeouts(&self) -> Timeouts {
        self.policy.as_ref().map(|p| p.timeouts).unwrap_or_default()
    }

    /// Retry policy, if any.
    pub fn retry(&self) -> Option<&Retry> {
        self.policy.as_ref().and_then(|p| p.retry.as_ref())
    }
}

/// Timeouts of a rule; `None` means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// The whole request, retries included.
    pub request: Option<Duration>,
    /// One attempt to a backend.
    pub backend_request: Option<Duration>,
}

/// Retry policy of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// Retries after the first attempt.
    pub attempts: u32,
    /// Backend status codes that are retried; connection errors always are.
    pub codes: Vec<u16>,
    /// Wait between attempts.
    pub backoff: Duration,
}

pub(crate) fn compile_timeouts(
    config: Option<&TimeoutsConfig>,
    at: &Origin,
) -> Result<Timeouts, Error> {
    let Some(config) = config else {
        return Ok(Timeouts::default());
    };
    // "0s" means "no timeout", as in Gateway API.
    let parse = |value: &Option<String>| -> Result<Option<Duration>, Error> {
        match value {
            None => Ok(None),
            Some(text) => parse_duration(text)
                .map(|duration| (!duration.is_zero()).then_some(duration))
                .map_err(|why| at.error(format!("timeout {why}"))),
        }
    };
    let timeouts = Timeouts {
        request: parse(&config.request)?,
        backend_request: parse(&config.backend_request)?,
    };
    if let (Some(request), Some(backend)) = (timeouts.request, timeouts.backend_request) {
        if backend > request {
            return Err(at.error("backendRequest timeout must not exceed the request timeout"));
        }
    }
    Ok(timeouts)
}

pub(crate) fn compile_retry(
    config: Option<&RetryConfig>,
    at: &Origin,
) -> Result<Option<Retry>, Error> {
    let Some(config) = config else {
        return Ok(None);
    };
    if let Some(code) = config
        .codes
        .iter()
        .find(|code| !(500..=599).contains(*code))
    {
        return Err(at.error(format!("retry code {code} is not a 5xx status")));
    }
    let backoff = match &config.backoff {
        Some(text) => {
            parse_duration(text).map_err(|why| at.error(format!("retry backoff {why}")))?
        }
        None => Duration::ZERO,
    };
    Ok(Some(Retry {
        attempts: config.attempts,
        codes: config.codes.clone(),
        backoff,
    }))
}
