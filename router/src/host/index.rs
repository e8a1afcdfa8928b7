//! [`HostIndex`]: most-specific-hostname lookup. Exact names live in one hash map;
//! wildcard suffixes live in a trie keyed by labels read right to left, so a lookup
//! walks at most as many nodes as the request hostname has labels and remembers the
//! deepest wildcard that still leaves a label on the left.

use super::HostPattern;
use crate::compact::InlineBytes;
use foldhash::{HashMap, HashMapExt};

/// Values keyed by hostname pattern, plus an optional catch-all for "any hostname".
#[derive(Debug)]
pub(crate) struct HostIndex<T> {
    exact: HashMap<InlineBytes, T>,
    wildcard: Vec<LabelNode<T>>,
    any: Option<T>,
}

#[derive(Debug)]
struct LabelNode<T> {
    children: HashMap<InlineBytes, u32>,
    value: Option<T>,
}

impl<T> LabelNode<T> {
    fn new() -> Self {
        Self {
            children: HashMap::new(),
            value: None,
        }
    }
}

impl<T> Default for HostIndex<T> {
    fn default() -> Self {
        Self {
            exact: HashMap::new(),
            wildcard: vec![LabelNode::new()],
            any: None,
        }
    }
}

impl<T> HostIndex<T> {
    /// The value stored for `pattern` (`None` = any hostname), inserting one made by
    /// `make` when absent.
    pub(crate) fn entry(
        &mut self,
        pattern: Option<&HostPattern>,
        make: impl FnOnce() -> T,
    ) -> &mut T {
        match pattern {
            None => self.any.get_or_insert_with(make),
            Some(HostPattern::Exact(name)) => self
                .exact
                .entry(InlineBytes::new(name.as_bytes()))
                .or_insert_with(make),
            Some(HostPattern::Wildcard(suffix)) => {
                let mut node = 0usize;
                for label in suffix.rsplit('.') {
                    node = match self.wildcard[node].children.get(label.as_bytes()) {
                        Some(&child) => child as usize,
                        None => {
                            let child = self.wildcard.len();
                            self.wildcard.push(LabelNode::new());
                            let id = u32::try_from(child).expect("fewer than 2^32 hostname labels");
                            self.wildcard[node]
                                .children
                                .insert(InlineBytes::new(label.as_bytes()), id);
                            child
                        }
                    };
                }
                self.wildcard[node].value.get_or_insert_with(make)
            }
        }
    }

    /// The value of the most specific pattern matching a normalized hostname: the
    /// exact name, else the longest wildcard suffix, else the catch-all.
    pub(crate) fn lookup(&self, host: &str) -> Option<&T> {
        if let Some(value) = self.exact.get(host.as_bytes()) {
            return Some(value);
        }
        self.longest_wildcard(host).or(self.any.as_ref())
    }

    fn longest_wildcard(&self, host: &str) -> Option<&T> {
        if self.wildcard.len() == 1 {
            return None;
        }
        let bytes = host.as_bytes();
        let mut best = None;
        let mut node = &self.wildcard[0];
        let mut end = bytes.len();
        // Walk labels right to left; a byte scan beats `rsplit_once` here.
        while let Some(dot) = bytes[..end].iter().rposition(|&b| b == b'.') {
            let Some(&child) = node.children.get(&bytes[dot + 1..end]) else {
                return best;
            };
            node = &self.wildcard[child as usize];
            // `*.` needs at least one label left of the suffix.
            if dot > 0 {
                if let Some(value) = &node.value {
                    best = Some(value);
                }
            }
            end = dot;
        }
        best
    }

    /// The same index with every value converted by `convert`; the first error stops.
    pub(crate) fn try_map<U, E>(
        self,
        mut convert: impl FnMut(T) -> Result<U, E>,
    ) -> Result<HostIndex<U>, E> {
        let mut exact = HashMap::with_capacity(self.exact.len());
        for (name, value) in self.exact {
            exact.insert(name, convert(value)?);
        }
        let mut wildcard = Vec::with_capacity(self.wildcard.len());
        for node in self.wildcard {
            let value = node.value.map(&mut convert).transpose()?;
            wildcard.push(LabelNode {
                children: node.children,
                value,
            });
        }
        let any = self.any.map(&mut convert).transpose()?;
        Ok(HostIndex {
            exact,
            wildcard,
            any,
        })
    }
}
