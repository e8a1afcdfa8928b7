//! A tunnel's remote ingress configuration, built from a Gateway's hostnames.
//!
//! cloudflared sends a request to the first rule whose hostname (and path) matches, so
//! [`build`] orders the rules: exact hostnames before wildcards, and among wildcards the
//! deeper (more specific) first, each group by name; duplicates are dropped. Every rule
//! points at the data plane's service URL. The last rule is the catch-all
//! `{"service":"http_status:404"}` cloudflared requires; [`catch_all_only`] is the whole
//! document once the Gateway is gone.
//!
//! [`changed`] compares the configuration Cloudflare holds with the rules wanted, so it is
//! written only when it differs: key order and the fields Cloudflare adds (an empty
//! `originRequest`, top-level settings such as `warp-routing`) do not count; rule order
//! does.

use std::cmp::Reverse;

use serde_json::{Map, Value};

use crate::dns::Hostname;
use crate::model::IngressRule;
use crate::plan_error::{PlanError, shown};

/// The service of the catch-all rule.
pub const CATCH_ALL_SERVICE: &str = "http_status:404";

/// The longest service URL accepted.
const MAX_SERVICE_LEN: usize = 2048;

impl IngressRule {
    /// The catch-all rule: every request that no earlier rule matched gets a 404.
    pub fn catch_all() -> Self {
        Self {
            hostname: None,
            path: None,
            service: CATCH_ALL_SERVICE.to_owned(),
            origin_request: None,
        }
    }
}

/// The rules for one Gateway and the hostnames refused on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Ingress {
    /// The ordered rules, the catch-all last.
    pub rules: Vec<IngressRule>,
    /// Hostnames that cloudflared would not take, each with why.
    pub rejected: Vec<PlanError>,
}

/// The rules sending each of `hostnames` to `service`, ordered and deduplicated, with the
/// catch-all last. A hostname cloudflared would refuse (upper case, a port, a wildcard not
/// leftmost, ...) is left out and listed in [`Ingress::rejected`]; an unusable `service`
/// refuses the whole document.
pub fn build<S: AsRef<str>>(
    hostnames: impl IntoIterator<Item = S>,
    service: &str,
) -> Result<Ingress, PlanError> {
    check_service(service)?;
    let mut accepted = Vec::new();
    let mut rejected = Vec::new();
    for hostname in hostnames {
        match Hostname::parse_lowercase(hostname.as_ref()) {
            Ok(hostname) => accepted.push(hostname),
            Err(error) => rejected.push(error),
        }
    }
    accepted.sort_by(|a, b| order_key(a).cmp(&order_key(b)));
    accepted.dedup();
    let mut rules: Vec<IngressRule> = accepted
        .into_iter()
        .map(|hostname| IngressRule {
            hostname: Some(hostname.as_str().to_owned()),
            path: None,
            service: service.to_owned(),
            origin_request: None,
        })
        .collect();
    rules.push(IngressRule::catch_all());
    Ok(Ingress { rules, rejected })
}

/// Exact names first, then wildcards deepest first; by name within each.
fn order_key(hostname: &Hostname) -> (bool, Reverse<usize>, &str) {
    (
        hostname.is_wildcard(),
        Reverse(hostname.label_count()),
        hostname.as_str(),
    )
}

/// The document once the Gateway is gone: the catch-all alone.
pub fn catch_all_only() -> Vec<IngressRule> {
    vec![IngressRule::catch_all()]
}

/// The `config` object of a configuration write: `{"ingress":[...]}`.
pub fn to_config(rules: &[IngressRule]) -> Value {
    let rules = rules.iter().map(rule_value).collect();
    let mut config = Map::new();
    config.insert("ingress".to_owned(), Value::Array(rules));
    Value::Object(config)
}

fn rule_value(rule: &IngressRule) -> Value {
    let mut value = Map::new();
    if let Some(hostname) = &rule.hostname {
        value.insert("hostname".to_owned(), Value::String(hostname.clone()));
    }
    if let Some(path) = &rule.path {
        value.insert("path".to_owned(), Value::String(path.clone()));
    }
    value.insert("service".to_owned(), Value::String(rule.service.clone()));
    if let Some(origin) = &rule.origin_request {
        value.insert("originRequest".to_owned(), Value::Object(origin.clone()));
    }
    Value::Object(value)
}

/// Whether the configuration Cloudflare holds differs from `desired`. `current` is the
/// `config` object (`{"ingress":[...]}`), or the whole configurations answer holding it;
/// anything without an ingress list (`null` when none was written) differs.
pub fn changed(current: &Value, desired: &[IngressRule]) -> bool {
    let config = current.get("config").unwrap_or(current);
    let Some(rules) = config.get("ingress").and_then(Value::as_array) else {
        return true;
    };
    rules.len() != desired.len()
        || rules
            .iter()
            .zip(desired)
            .any(|(current, desired)| !same_rule(current, desired))
}

fn same_rule(current: &Value, desired: &IngressRule) -> bool {
    let Some(current) = current.as_object() else {
        return false;
    };
    optional_text(current, "hostname") == desired.hostname.as_deref()
        && optional_text(current, "path") == desired.path.as_deref()
        && current.get("service").and_then(Value::as_str) == Some(desired.service.as_str())
        && same_origin(
            current.get("originRequest"),
            desired.origin_request.as_ref(),
        )
}

/// A string field where absent, `null` and `""` all mean unset; `Some("")` stands for a
/// value of another type, so it never equals a desired one.
fn optional_text<'a>(rule: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    match rule.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.is_empty() => None,
        Some(Value::String(text)) => Some(text),
        Some(_) => Some(""),
    }
}

/// Origin settings, where absent, `null` and `{}` are the defaults.
fn same_origin(current: Option<&Value>, desired: Option<&Map<String, Value>>) -> bool {
    let empty = Map::new();
    let desired = desired.unwrap_or(&empty);
    match current {
        None | Some(Value::Null) => desired.is_empty(),
        Some(Value::Object(current)) => current == desired,
        Some(_) => false,
    }
}

/// A service URL cloudflared takes for an origin: `http://` or `https://`, a host and an
/// optional port, no path, query or fragment (cloudflared refuses those).
fn check_service(service: &str) -> Result<(), PlanError> {
    let invalid = |reason| PlanError::InvalidService {
        service: shown(service),
        reason,
    };
    if service.len() > MAX_SERVICE_LEN {
        return Err(invalid("longer than 2048 characters"));
    }
    let authority = service
        .strip_prefix("http://")
        .or_else(|| service.strip_prefix("https://"))
        .ok_or_else(|| invalid("not an http:// or https:// url"))?;
    let authority = authority.strip_suffix('/').unwrap_or(authority);
    if authority.is_empty() {
        return Err(invalid("no host"));
    }
    if authority.contains(['/', '?', '#']) {
        return Err(invalid("a path, query or fragment is not allowed"));
    }
    if authority.contains('@') || !authority.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid("not a plain host and port"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
