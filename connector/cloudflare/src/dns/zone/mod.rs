//! The zone a hostname belongs to: of the account's zones, the one whose name is the
//! longest label-wise suffix of the hostname (a delegated `sub.example.com` beats
//! `example.com`). An apex name is its own zone's; a wildcard `*.a.example.com` belongs to
//! the zone holding `a.example.com`. Comparison ignores case and a trailing dot.
//!
//! A hostname no zone holds gets `None`: the caller reports it for that name and goes on
//! with the others.

use std::collections::HashMap;

use super::name::normalize;

/// One zone of the account, as the API lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// The zone's ID (32 hex characters on Cloudflare).
    pub id: String,
    /// The zone's name (`example.com`).
    pub name: String,
}

/// The account's zones, indexed by normalised name.
#[derive(Debug, Clone, Default)]
pub struct Zones {
    zones: Vec<Zone>,
    by_name: HashMap<String, usize>,
}

impl Zones {
    /// Indexes `zones`. Of two zones with one name the first is kept; a zone with an empty
    /// name is ignored.
    pub fn new(zones: impl IntoIterator<Item = Zone>) -> Self {
        let mut index = Self::default();
        for zone in zones {
            let name = normalize(&zone.name);
            if name.is_empty() || index.by_name.contains_key(&name) {
                continue;
            }
            index.by_name.insert(name, index.zones.len());
            index.zones.push(zone);
        }
        index
    }

    /// The zone holding `hostname`, by the longest label-wise suffix; `None` when no zone
    /// does or the name has an empty label.
    pub fn zone_for(&self, hostname: &str) -> Option<&Zone> {
        let name = normalize(hostname);
        let mut rest = name.strip_prefix("*.").unwrap_or(&name);
        if rest.is_empty() || rest.split('.').any(str::is_empty) {
            return None;
        }
        loop {
            if let Some(&at) = self.by_name.get(rest) {
                return self.zones.get(at);
            }
            rest = rest.split_once('.')?.1;
        }
    }

    /// The zones, in the order given (duplicates dropped).
    pub fn iter(&self) -> impl Iterator<Item = &Zone> {
        self.zones.iter()
    }

    /// How many zones there are.
    pub fn len(&self) -> usize {
        self.zones.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.zones.is_empty()
    }
}

#[cfg(test)]
mod tests;
