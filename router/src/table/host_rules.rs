//! [`HostRules`]: the candidates of one host, indexed by path.
//!
//! Candidates live in one table-wide vector; each path key owns a contiguous,
//! pre-sorted range of it. Exact paths come first, then prefixes longest first, then
//! regular expressions, which is the Gateway API precedence between path kinds.

use super::conditions::Conditions;
use crate::path::SegmentTrie;
use crate::regex::FullMatch;
use foldhash::HashMap;
use http::HeaderMap;

/// One (route, rule, match) whose path condition is indexed under some key.
#[derive(Debug)]
pub(crate) struct Candidate {
    /// Index into `RouteTable::rules`.
    pub(crate) rule: u32,
    /// For regex candidates, the pattern id in the host's automaton.
    pub(crate) pattern: u32,
    /// The route, copied here so a lookup reads one record.
    pub(crate) route: u32,
    /// Index of the rule within its route.
    pub(crate) rule_index: u16,
    pub(crate) match_index: u16,
    /// Boxed: most matches have no condition beyond the path.
    pub(crate) conditions: Option<Box<Conditions>>,
}

/// The identity of a matched candidate: what a lookup returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) rule: u32,
    pub(crate) route: u32,
    pub(crate) rule_index: u16,
    pub(crate) match_index: u16,
}

impl Candidate {
    pub(crate) fn hit(&self) -> Hit {
        Hit {
            rule: self.rule,
            route: self.route,
            rule_index: self.rule_index,
            match_index: self.match_index,
        }
    }

    pub(crate) fn accepts(&self, method: &str, headers: &HeaderMap, query: Option<&str>) -> bool {
        self.conditions
            .as_deref()
            .is_none_or(|conditions| conditions.matches(method, headers, query))
    }
}

/// A contiguous range of `RouteTable::candidates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
    /// When the first candidate has no condition beyond the path it always wins for
    /// this key; its identity is kept here so the lookup need not read the
    /// candidates at all.
    pub(crate) direct: Option<Hit>,
}

impl Span {
    /// The first candidate of the span that `accepts`.
    fn first(self, candidates: &[Candidate], accepts: impl Fn(&Candidate) -> bool) -> Option<Hit> {
        if let Some(hit) = self.direct {
            return Some(hit);
        }
        self.of(candidates)
            .iter()
            .find(|c| accepts(c))
            .map(Candidate::hit)
    }

    fn of(self, candidates: &[Candidate]) -> &[Candidate] {
        let start = self.start as usize;
        candidates
            .get(start..start + self.len as usize)
            .unwrap_or(&[])
    }
}

/// The regular-expression candidates of one host and their shared automaton.
#[derive(Debug)]
pub(crate) struct RegexGroup {
    pub(crate) matcher: FullMatch,
    pub(crate) span: Span,
}

/// The path index of one host.
#[derive(Debug, Default)]
pub(crate) struct HostRules {
    pub(crate) exact: HashMap<Box<str>, Span>,
    pub(crate) prefix: SegmentTrie<Span>,
    pub(crate) regex: Option<Box<RegexGroup>>,
}

/// The first accepted candidate and, for prefixes, how much of the path it covered.
pub(crate) struct Found {
    pub(crate) hit: Hit,
    pub(crate) prefix_len: Option<usize>,
}

impl HostRules {
    /// The first candidate, in precedence order, whose path matches `path` and which
    /// `accepts`.
    pub(crate) fn find(
        &self,
        path: &str,
        candidates: &[Candidate],
        accepts: impl Fn(&Candidate) -> bool,
    ) -> Option<Found> {
        if let Some(span) = self.exact.get(path) {
            if let Some(hit) = span.first(candidates, &accepts) {
                return Some(Found {
                    hit,
                    prefix_len: None,
                });
            }
        }
        let by_prefix = self.prefix.find_longest(path, |span, covered| {
            span.first(candidates, &accepts).map(|hit| Found {
                hit,
                prefix_len: Some(covered),
            })
        });
        if by_prefix.is_some() {
            return by_prefix;
        }
        let group = self.regex.as_deref()?;
        let path = path.as_bytes();
        let first = group.matcher.first_match(path)?;
        let regex_candidates = group.span.of(candidates);
        // Pattern ids follow first appearance in precedence order, and `first` is the
        // lowest id that matches: no candidate before the first one using it can
        // match, and later ones match only with an id of `first` or above.
        let start = regex_candidates
            .iter()
            .position(|c| c.pattern as usize == first)?;
        regex_candidates[start..]
            .iter()
            .find(|c| {
                let pattern = c.pattern as usize;
                let matched = pattern == first
                    || (pattern > first && group.matcher.matches_pattern(path, pattern));
                matched && accepts(c)
            })
            .map(|c| Found {
                hit: c.hit(),
                prefix_len: None,
            })
    }
}
