//! Hostnames: validation of configured names, normalization of request `Host`
//! values, listener/route intersection, and `HostIndex`, the exact map plus
//! reverse-label wildcard trie that picks the most specific hostname for a request.
//!
//! Configured hostnames follow Gateway API: ASCII only (IDNs are written in punycode,
//! `xn--...`), RFC 1123 labels, optionally led by a `*.` wildcard label that stands for
//! one or more labels. Matching is case-insensitive.

mod index;

pub(crate) use index::HostIndex;

use crate::error::{Error, HostnameProblem};
use std::borrow::Cow;

/// A validated, lower-cased configured hostname.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostPattern {
    /// Matches one hostname.
    Exact(Box<str>),
    /// `*.suffix`: matches any hostname with one or more labels before `suffix`.
    /// Holds the suffix without the leading `*.`.
    Wildcard(Box<str>),
}

impl HostPattern {
    /// Validates and lower-cases a configured hostname.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let lower = text.to_ascii_lowercase();
        let (wildcard, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, lower.as_str()),
        };
        let refuse = |problem| Error::Hostname {
            text: text.to_owned(),
            problem,
        };
        validate_dns_name(name).map_err(refuse)?;
        if wildcard {
            Ok(Self::Wildcard(name.into()))
        } else if name.parse::<std::net::Ipv4Addr>().is_ok() {
            Err(refuse(HostnameProblem::IpAddress))
        } else {
            Ok(Self::Exact(name.into()))
        }
    }

    /// Whether a normalized request hostname matches this pattern.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            Self::Exact(name) => **name == *host,
            Self::Wildcard(suffix) => is_strict_subdomain(host, suffix),
        }
    }

    /// The hostnames matched by both `self` and `other`, if any: the more specific of
    /// the two when one contains the other.
    pub fn intersect(&self, other: &Self) -> Option<Self> {
        match (self, other) {
            (Self::Exact(a), Self::Exact(b)) => (a == b).then(|| self.clone()),
            (Self::Exact(name), Self::Wildcard(_)) => other.matches(name).then(|| self.clone()),
            (Self::Wildcard(_), Self::Exact(name)) => self.matches(name).then(|| other.clone()),
            (Self::Wildcard(a), Self::Wildcard(b)) => {
                if a == b || is_strict_subdomain(a, b) {
                    Some(self.clone())
                } else if is_strict_subdomain(b, a) {
                    Some(other.clone())
                } else {
                    None
                }
            }
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exact(name) => f.write_str(name),
            Self::Wildcard(suffix) => write!(f, "*.{suffix}"),
        }
    }
}

/// `host` ends with `.suffix` and has at least one label before it.
fn is_strict_subdomain(host: &str, suffix: &str) -> bool {
    host.len() > suffix.len() + 1
        && host.ends_with(suffix)
        && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
}

fn validate_dns_name(name: &str) -> Result<(), HostnameProblem> {
    if name.is_empty() {
        return Err(HostnameProblem::Empty);
    }
    if name.len() > 253 {
        return Err(HostnameProblem::TooLong);
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(HostnameProblem::EmptyLabel);
        }
        if label.len() > 63 {
            return Err(HostnameProblem::LabelTooLong);
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(HostnameProblem::Character);
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(HostnameProblem::Hyphen);
        }
    }
    Ok(())
}

/// Reduces a request's `Host` (or `:authority`, or SNI) to the form hostnames are
/// matched in: port removed, one trailing dot removed, ASCII lower-cased. IPv6
/// literals keep their brackets. Allocates only when the value needs lower-casing.
pub fn normalize_request_host(host: &str) -> Cow<'_, str> {
    // One backward pass finds the port separator (a ':' after the last ']').
    let bytes = host.as_bytes();
    let mut end = bytes.len();
    for (at, &b) in bytes.iter().enumerate().rev() {
        match b {
            b':' => {
                end = at;
                break;
            }
            b'0'..=b'9' => {}
            _ => break,
        }
    }
    let without_port = &host[..end];
    let trimmed = without_port.strip_suffix('.').unwrap_or(without_port);
    if trimmed.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(trimmed.to_ascii_lowercase())
    } else {
        Cow::Borrowed(trimmed)
    }
}

#[cfg(test)]
mod tests;
