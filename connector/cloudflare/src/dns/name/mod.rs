//! Hostnames as Gateway API and cloudflared accept them: lowercase letters, digits and
//! hyphens in labels of at most 63 characters, at most 253 in all, and an optional
//! wildcard that is the whole leftmost label (`*.example.com`). No port, no IP address,
//! no underscore (so no hostname can be confused with an ownership record's name, which
//! starts with `_`).
//!
//! [`Hostname::parse`] is tolerant the way DNS is (case-insensitive, a trailing dot
//! allowed) and normalises; [`Hostname::parse_lowercase`] takes only the written form
//! cloudflared expects.

use std::fmt;
use std::net::Ipv4Addr;

use crate::PlanError;
use crate::plan_error::shown;

/// The longest DNS name, without the trailing dot.
const MAX_NAME_LEN: usize = 253;
/// The longest DNS label.
const MAX_LABEL_LEN: usize = 63;

/// A valid hostname: lowercase, no trailing dot, maybe a wildcard (`*.` then a name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hostname(String);

impl Hostname {
    /// Parses a hostname, ignoring case and one trailing dot.
    pub fn parse(input: &str) -> Result<Self, PlanError> {
        let name = input
            .strip_suffix('.')
            .unwrap_or(input)
            .to_ascii_lowercase();
        check(&name).map_err(|reason| invalid(input, reason))?;
        Ok(Self(name))
    }

    /// Parses a hostname written exactly as cloudflared's ingress rules take it:
    /// lowercase and without a trailing dot.
    pub fn parse_lowercase(input: &str) -> Result<Self, PlanError> {
        if input.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(invalid(input, "uppercase letters are not allowed"));
        }
        if input.ends_with('.') {
            return Err(invalid(input, "a trailing dot is not allowed"));
        }
        check(input).map_err(|reason| invalid(input, reason))?;
        Ok(Self(input.to_owned()))
    }

    /// The hostname as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the leftmost label is the wildcard `*`.
    pub fn is_wildcard(&self) -> bool {
        self.0.starts_with("*.")
    }

    /// The name without its wildcard label: `a.example.com` for `*.a.example.com`, the
    /// name itself otherwise.
    pub fn base(&self) -> &str {
        self.0.strip_prefix("*.").unwrap_or(&self.0)
    }

    /// The number of labels, the wildcard's included.
    pub fn label_count(&self) -> usize {
        self.0.split('.').count()
    }
}

impl fmt::Display for Hostname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `name` normalised for comparison: lowercase, one trailing dot removed. Used on names
/// read from the API, which are not validated.
pub(crate) fn normalize(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

fn invalid(input: &str, reason: &'static str) -> PlanError {
    PlanError::InvalidHostname {
        hostname: shown(input),
        reason,
    }
}

/// Checks an already lowercased name without a trailing dot.
fn check(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty");
    }
    if name.len() > MAX_NAME_LEN {
        return Err("longer than 253 characters");
    }
    if name.contains(':') {
        return Err("a port is not allowed");
    }
    if name.parse::<Ipv4Addr>().is_ok() {
        return Err("an IP address is not a hostname");
    }
    let base = match name.strip_prefix("*.") {
        Some(base) => base,
        None if name == "*" => return Err("a wildcard needs a domain after it"),
        None => name,
    };
    if base.contains('*') {
        return Err("a wildcard is allowed only as the whole leftmost label");
    }
    for label in base.split('.') {
        check_label(label)?;
    }
    Ok(())
}

fn check_label(label: &str) -> Result<(), &'static str> {
    if label.is_empty() {
        return Err("empty label");
    }
    if label.len() > MAX_LABEL_LEN {
        return Err("a label is longer than 63 characters");
    }
    if !label
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("only letters, digits, hyphens and dots are allowed");
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err("a label must not start or end with a hyphen");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
