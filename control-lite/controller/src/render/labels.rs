//! Labels and annotations on the rendered objects: Culvert's own, and the
//! Gateway's `spec.infrastructure.labels` / `.annotations` checked and merged under
//! them.
//!
//! Precedence: **Culvert's own keys win.** An infrastructure entry whose key
//! Culvert sets itself (the selector labels, the `app.kubernetes.io/*` and
//! `gateway.networking.k8s.io/*` labels, the pod template's annotations) is
//! dropped and reported as [`DropReason::Reserved`], so a Gateway can never move a
//! Deployment's selector or its pods out of their Service and NetworkPolicy. Every
//! other key is kept when valid. Invalid entries are dropped, never sent to the API
//! server (which would refuse the whole apply), and reported in
//! [`Dropped`] so the controller can say so in a condition.

use std::collections::BTreeMap;
use std::fmt;

/// Longest label value and name part of a key.
const MAX_SEGMENT: usize = 63;

/// Longest key prefix (a DNS-1123 subdomain).
const MAX_PREFIX: usize = 253;

/// What the infrastructure annotations may take in total (keys and values), well
/// under the API server's 256 KiB so Culvert's own annotations always fit.
pub const MAX_INFRASTRUCTURE_ANNOTATIONS: usize = 128 * 1024;

/// Longest key echoed back in a report, so a hostile key does not bloat a condition.
const MAX_REPORTED_KEY: usize = 80;

/// Which map an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataKind {
    /// `spec.infrastructure.labels`.
    Label,
    /// `spec.infrastructure.annotations`.
    Annotation,
}

/// Why an infrastructure entry was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropReason {
    /// The key is not a qualified name (`[prefix/]name`).
    InvalidKey(&'static str),
    /// The label value is not a valid label value.
    InvalidValue(&'static str),
    /// Culvert sets this key itself, and its value wins.
    Reserved,
    /// The annotations together would pass [`MAX_INFRASTRUCTURE_ANNOTATIONS`].
    TooLarge,
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidKey(why) => write!(f, "invalid key: {why}"),
            Self::InvalidValue(why) => write!(f, "invalid value: {why}"),
            Self::Reserved => f.write_str("set by Culvert, whose value wins"),
            Self::TooLarge => write!(
                f,
                "the annotations would exceed {MAX_INFRASTRUCTURE_ANNOTATIONS} bytes"
            ),
        }
    }
}

/// An infrastructure label or annotation left off every rendered object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Label or annotation.
    pub kind: MetadataKind,
    /// The key as the Gateway gave it.
    pub key: String,
    /// Why.
    pub reason: DropReason,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            MetadataKind::Label => "label",
            MetadataKind::Annotation => "annotation",
        };
        let key: String = self.key.chars().take(MAX_REPORTED_KEY).collect();
        let ellipsis = if key.len() < self.key.len() {
            "…"
        } else {
            ""
        };
        write!(
            f,
            "infrastructure {kind} {key:?}{ellipsis} dropped: {}",
            self.reason
        )
    }
}

/// The infrastructure labels and annotations that survived the checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Infrastructure {
    /// Valid labels whose keys Culvert does not set.
    pub labels: BTreeMap<String, String>,
    /// Valid annotations whose keys Culvert does not set.
    pub annotations: BTreeMap<String, String>,
}

impl Infrastructure {
    /// Checks the Gateway's entries; `reserved_labels` and `reserved_annotations`
    /// are the keys Culvert sets itself. Returns what survives and what was dropped.
    pub fn check(
        labels: &BTreeMap<String, String>,
        annotations: &BTreeMap<String, String>,
        reserved_labels: &[&str],
        reserved_annotations: &[&str],
    ) -> (Self, Vec<Dropped>) {
        let mut kept = Self::default();
        let mut dropped = Vec::new();
        for (key, value) in labels {
            // Reserved first: whatever the value, Culvert's wins.
            let verdict = reserved(key, reserved_labels)
                .and_then(|()| check_key(key).map_err(DropReason::InvalidKey))
                .and_then(|()| check_label_value(value).map_err(DropReason::InvalidValue));
            match verdict {
                Ok(()) => {
                    kept.labels.insert(key.clone(), value.clone());
                }
                Err(reason) => dropped.push(Dropped {
                    kind: MetadataKind::Label,
                    key: key.clone(),
                    reason,
                }),
            }
        }
        let mut size = 0usize;
        for (key, value) in annotations {
            let verdict = reserved(key, reserved_annotations)
                .and_then(|()| check_key(key).map_err(DropReason::InvalidKey))
                .and_then(|()| {
                    let next = size.saturating_add(key.len()).saturating_add(value.len());
                    if next > MAX_INFRASTRUCTURE_ANNOTATIONS {
                        Err(DropReason::TooLarge)
                    } else {
                        size = next;
                        Ok(())
                    }
                });
            match verdict {
                Ok(()) => {
                    kept.annotations.insert(key.clone(), value.clone());
                }
                Err(reason) => dropped.push(Dropped {
                    kind: MetadataKind::Annotation,
                    key: key.clone(),
                    reason,
                }),
            }
        }
        (kept, dropped)
    }
}

/// `Err(Reserved)` when Culvert sets `key` itself.
fn reserved(key: &str, reserved: &[&str]) -> Result<(), DropReason> {
    if reserved.contains(&key) {
        Err(DropReason::Reserved)
    } else {
        Ok(())
    }
}

/// `base` with `extra` merged under it: on a shared key `base` wins.
pub fn under(
    base: &BTreeMap<String, String>,
    extra: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut merged = extra.clone();
    merged.extend(base.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

/// A label or annotation key: an optional DNS-1123 subdomain prefix and `/`, then
/// a name of 1 to 63 letters, digits, `-`, `_`, `.` starting and ending
/// alphanumeric.
pub fn check_key(key: &str) -> Result<(), &'static str> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        check_subdomain(prefix)?;
    }
    if name.contains('/') {
        return Err("more than one '/'");
    }
    if name.is_empty() {
        return Err("the name part is empty");
    }
    if name.len() > MAX_SEGMENT {
        return Err("the name part is longer than 63 characters");
    }
    check_segment(name)
}

/// A label value: empty, or 1 to 63 letters, digits, `-`, `_`, `.` starting and
/// ending alphanumeric.
pub fn check_label_value(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        return Ok(());
    }
    if value.len() > MAX_SEGMENT {
        return Err("longer than 63 characters");
    }
    check_segment(value)
}

/// Letters, digits, `-`, `_`, `.`, starting and ending alphanumeric (non-empty).
fn check_segment(text: &str) -> Result<(), &'static str> {
    if !text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err("only letters, digits, '-', '_' and '.' are allowed");
    }
    let alnum = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    if !alnum(text.bytes().next()) || !alnum(text.bytes().last()) {
        return Err("must start and end with a letter or digit");
    }
    Ok(())
}

/// A DNS-1123 subdomain: dot-separated labels of lowercase letters, digits and `-`
/// starting and ending alphanumeric, at most 253 in all.
fn check_subdomain(prefix: &str) -> Result<(), &'static str> {
    if prefix.is_empty() {
        return Err("the prefix before '/' is empty");
    }
    if prefix.len() > MAX_PREFIX {
        return Err("the prefix is longer than 253 characters");
    }
    let valid = prefix.split('.').all(|label| {
        let bytes = label.as_bytes();
        let edge = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        label.len() <= MAX_SEGMENT
            && edge(bytes.first())
            && edge(bytes.last())
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
    });
    if valid {
        Ok(())
    } else {
        Err("the prefix is not a DNS-1123 subdomain")
    }
}
