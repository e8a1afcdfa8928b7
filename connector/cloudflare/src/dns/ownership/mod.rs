//! TXT ownership records: how Culvert marks a DNS name as its own, in the manner of
//! external-dns but in its own format.
//!
//! **Content.** One string of comma-separated `key=value` pairs, stored with the
//! surrounding double quotes Cloudflare keeps for TXT records:
//!
//! ```text
//! "heritage=culvert,culvert/owner=<owner-id>,culvert/resource=gateway/<ns>/<name>,culvert/version=1"
//! ```
//!
//! The owner ID tells installations apart (two clusters on one account each touch only
//! their own names); the resource names the Gateway the name was written for; the version
//! is this format's. [`Ownership::parse`] reads a record as untrusted: pairs in any order,
//! unknown keys ignored, but anything malformed (no `=`, a known key twice, a wrong
//! heritage, an invalid value, a quote inside, more than 2048 characters) means the
//! record is not Culvert's.
//!
//! **Name.** A CNAME cannot share its name with any other record, so the TXT record goes
//! on a name of its own, derived from the hostname by [`txt_name`]:
//!
//! - `app.example.com` and an apex `example.com`: the label `_culvert-owner` in front,
//!   `_culvert-owner.app.example.com`, `_culvert-owner.example.com`;
//! - a wildcard `*.example.com`: a wildcard label must be leftmost, so the `*` label is
//!   replaced by `_culvert-owner-wildcard`, giving `_culvert-owner-wildcard.example.com`.
//!
//! Hostnames never contain `_` ([`Hostname`]), so these names collide neither with a
//! hostname nor with each other, and [`hostname_for_txt_name`] inverts the rule.

use std::fmt;

use super::name::{Hostname, normalize};
use crate::PlanError;
use crate::plan_error::shown;

/// The value of `heritage` in Culvert's records.
pub const HERITAGE: &str = "culvert";
/// The format version written.
pub const FORMAT_VERSION: u32 = 1;
/// The label put in front of a hostname to name its TXT record.
pub const OWNER_LABEL: &str = "_culvert-owner";
/// The label that replaces a wildcard hostname's `*` to name its TXT record.
pub const WILDCARD_OWNER_LABEL: &str = "_culvert-owner-wildcard";

/// The longest TXT content Cloudflare stores; anything longer is not ours.
const MAX_CONTENT_LEN: usize = 2048;
/// The longest owner ID.
const MAX_OWNER_LEN: usize = 63;
/// The longest DNS name.
const MAX_NAME_LEN: usize = 253;

const KEY_HERITAGE: &str = "heritage";
const KEY_OWNER: &str = "culvert/owner";
const KEY_RESOURCE: &str = "culvert/resource";
const KEY_VERSION: &str = "culvert/version";
const RESOURCE_KIND: &str = "gateway/";

/// What distinguishes this installation's records from another's on the same account:
/// 1 to 63 ASCII letters, digits, `-`, `_` or `.`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerId(String);

impl OwnerId {
    /// Validates an owner ID.
    pub fn new(owner: &str) -> Result<Self, PlanError> {
        let reason = if owner.is_empty() {
            Some("empty")
        } else if owner.len() > MAX_OWNER_LEN {
            Some("longer than 63 characters")
        } else if !owner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            Some("only letters, digits, '-', '_' and '.' are allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(PlanError::InvalidOwnerId {
                owner: shown(owner),
                reason,
            }),
            None => Ok(Self(owner.to_owned())),
        }
    }

    /// The owner ID as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A Gateway by namespace and name, both valid Kubernetes names (so neither holds `,`,
/// `=`, `/` or a quote).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GatewayRef {
    namespace: String,
    name: String,
}

impl GatewayRef {
    /// Validates a reference: the namespace a DNS-1123 label, the name a DNS-1123
    /// subdomain.
    pub fn new(namespace: &str, name: &str) -> Result<Self, PlanError> {
        let reason = if !is_dns1123_label(namespace) {
            Some("the namespace is not a DNS-1123 label")
        } else if name.is_empty()
            || name.len() > MAX_NAME_LEN
            || !name.split('.').all(is_dns1123_label)
        {
            Some("the name is not a DNS-1123 subdomain")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(PlanError::InvalidGatewayRef {
                reference: shown(&format!("{namespace}/{name}")),
                reason,
            }),
            None => Ok(Self {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            }),
        }
    }

    /// The Gateway's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Gateway's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for GatewayRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

fn is_dns1123_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// The facts one ownership record states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// The installation that wrote the record.
    pub owner: OwnerId,
    /// The Gateway the name was written for.
    pub gateway: GatewayRef,
    /// The record format's version.
    pub version: u32,
}

impl Ownership {
    /// The record this installation writes for `gateway`, in the current format.
    pub fn new(owner: OwnerId, gateway: GatewayRef) -> Self {
        Self {
            owner,
            gateway,
            version: FORMAT_VERSION,
        }
    }

    /// The TXT content, with its surrounding double quotes.
    pub fn content(&self) -> String {
        format!(
            "\"{KEY_HERITAGE}={HERITAGE},{KEY_OWNER}={},{KEY_RESOURCE}={RESOURCE_KIND}{}/{},{KEY_VERSION}={}\"",
            self.owner, self.gateway.namespace, self.gateway.name, self.version
        )
    }

    /// Reads a TXT record's content (quoted or not); `None` unless it is a well-formed
    /// Culvert ownership record.
    pub fn parse(content: &str) -> Option<Self> {
        if content.len() > MAX_CONTENT_LEN {
            return None;
        }
        let inner = match content.strip_prefix('"') {
            Some(rest) => rest.strip_suffix('"')?,
            None => content,
        };
        if inner.contains(['"', '\\']) {
            return None;
        }
        let mut heritage = None;
        let mut owner = None;
        let mut resource = None;
        let mut version = None;
        for pair in inner.split(',') {
            let (key, value) = pair.split_once('=')?;
            let slot = match key {
                "" => return None,
                KEY_HERITAGE => &mut heritage,
                KEY_OWNER => &mut owner,
                KEY_RESOURCE => &mut resource,
                KEY_VERSION => &mut version,
                _ => continue,
            };
            if slot.replace(value).is_some() {
                return None;
            }
        }
        if heritage? != HERITAGE {
            return None;
        }
        let owner = OwnerId::new(owner?).ok()?;
        let (namespace, name) = resource?.strip_prefix(RESOURCE_KIND)?.split_once('/')?;
        let gateway = GatewayRef::new(namespace, name).ok()?;
        let version = parse_version(version?)?;
        Some(Self {
            owner,
            gateway,
            version,
        })
    }
}

/// A version: 1 to 9 ASCII digits (no sign, no spaces).
fn parse_version(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The name of `hostname`'s ownership record (see the module documentation); an error
/// when that name would be longer than a DNS name may be.
pub fn txt_name(hostname: &Hostname) -> Result<String, PlanError> {
    let name = if hostname.is_wildcard() {
        format!("{WILDCARD_OWNER_LABEL}.{}", hostname.base())
    } else {
        format!("{OWNER_LABEL}.{hostname}")
    };
    if name.len() > MAX_NAME_LEN {
        return Err(PlanError::InvalidHostname {
            hostname: shown(hostname.as_str()),
            reason: "too long to name its ownership record",
        });
    }
    Ok(name)
}

/// The hostname whose ownership record `name` would be (case-insensitive, one trailing dot
/// allowed); `None` for a name [`txt_name`] does not produce.
pub fn hostname_for_txt_name(name: &str) -> Option<Hostname> {
    let name = normalize(name);
    if let Some(base) = name.strip_prefix(WILDCARD_OWNER_LABEL) {
        let base = base.strip_prefix('.')?;
        return Hostname::parse(&format!("*.{base}")).ok();
    }
    let rest = name.strip_prefix(OWNER_LABEL)?.strip_prefix('.')?;
    // One name per hostname: a wildcard's record is only ever under the wildcard label.
    Hostname::parse(rest)
        .ok()
        .filter(|hostname| !hostname.is_wildcard())
}

#[cfg(test)]
mod tests;
