//! Laying out a host: sorting its candidates into precedence order and building the
//! exact-path map, the prefix trie and the regex automaton over them.

use super::Builder;
use super::matches::{PathKey, Precedence};
use crate::error::{Error, Origin};
use crate::path::TrieBuilder;
use crate::table::RouteTable;
use crate::table::conditions::Conditions;
use crate::table::host_rules::{Candidate, HostRules, RegexGroup, Span};

/// A candidate waiting for its host to be laid out.
pub(super) struct Pending {
    pub(super) key: PathKey,
    pub(super) precedence: Precedence,
    pub(super) rule: u32,
    pub(super) match_index: u16,
    pub(super) conditions: Option<Box<Conditions>>,
}

impl Builder<'_> {
    /// The origin of the route a rule belongs to, for errors found late.
    fn origin_of_rule(&self, rule: u32) -> Origin {
        let slot = &self.table.rules[rule as usize];
        let info = &self.table.routes[slot.route.0 as usize];
        Origin::route(info.kind.as_str(), &info.namespace, &info.name)
            .with_rule(slot.index as usize)
    }

    /// Sorts every host's candidates into precedence order and lays out the indexes.
    pub(super) fn finish(mut self) -> Result<RouteTable, Error> {
        let mut pending = std::mem::take(&mut self.pending);
        let http_hosts = std::mem::take(&mut self.http_hosts);
        for (listener, index) in http_hosts.into_iter().enumerate() {
            let laid_out = index.try_map(|bucket| {
                let candidates = pending
                    .get_mut(bucket as usize)
                    .map(std::mem::take)
                    .unwrap_or_default();
                self.lay_out_host(candidates)
            })?;
            self.table.listeners[listener].http = laid_out;
        }
        self.table.candidates.shrink_to_fit();
        self.table.rules.shrink_to_fit();
        self.table.routes.shrink_to_fit();
        Ok(self.table)
    }

    fn lay_out_host(&mut self, bucket: Vec<Pending>) -> Result<HostRules, Error> {
        let (mut regex, mut indexed): (Vec<Pending>, Vec<Pending>) = bucket
            .into_iter()
            .partition(|p| matches!(p.key, PathKey::Regex(_)));
        indexed.sort_by(|a, b| (&a.key, a.precedence).cmp(&(&b.key, b.precedence)));
        regex.sort_by_key(|p| p.precedence);
        let mut rules = HostRules::default();
        let mut prefixes = TrieBuilder::default();
        let mut indexed = indexed.into_iter().peekable();
        while let Some(first) = indexed.next() {
            let key = first.key.clone();
            let mut group = vec![(first, 0)];
            while let Some(next) = indexed.next_if(|p| p.key == key) {
                group.push((next, 0));
            }
            let span = self.push_candidates(group);
            match key {
                PathKey::Exact(path) => {
                    rules.exact.insert(path.into(), span);
                }
                PathKey::Prefix(prefix) => *prefixes.entry(&prefix, || span) = span,
                PathKey::Regex(_) => {}
            }
        }
        if !regex.is_empty() {
            let mut patterns: Vec<String> = Vec::new();
            let mut with_ids = Vec::with_capacity(regex.len());
            for pending in regex {
                let PathKey::Regex(pattern) = &pending.key else {
                    continue;
                };
                let id = match patterns.iter().position(|seen| seen == pattern) {
                    Some(id) => id,
                    None => {
                        patterns.push(pattern.clone());
                        patterns.len() - 1
                    }
                };
                with_ids.push((pending, u32::try_from(id).unwrap_or(u32::MAX)));
            }
            let matcher = match self.regex.compile(&patterns) {
                Ok(matcher) => matcher,
                Err(group_reason) => {
                    return Err(self.regex_culprit(&with_ids, &patterns, group_reason));
                }
            };
            let span = self.push_candidates(with_ids);
            rules.regex = Some(Box::new(RegexGroup { matcher, span }));
        }
        rules.prefix = prefixes.freeze();
        Ok(rules)
    }

    /// Names the route whose pattern broke a host's automaton: the first pattern that
    /// fails alone, or else the first route of the host (the patterns only fail
    /// together).
    fn regex_culprit(
        &mut self,
        with_ids: &[(Pending, u32)],
        patterns: &[String],
        group_reason: String,
    ) -> Error {
        for (pending, id) in with_ids {
            let pattern = &patterns[*id as usize];
            if let Err(reason) = self.regex.check(pattern) {
                return Error::Regex {
                    at: Box::new(self.origin_of_rule(pending.rule)),
                    pattern: pattern.clone(),
                    reason,
                };
            }
        }
        let (first, id) = &with_ids[0];
        Error::Regex {
            at: Box::new(self.origin_of_rule(first.rule)),
            pattern: patterns[*id as usize].clone(),
            reason: format!(
                "the {} patterns of this host together: {group_reason}",
                patterns.len()
            ),
        }
    }

    fn push_candidates(&mut self, pending: Vec<(Pending, u32)>) -> Span {
        let start = u32::try_from(self.table.candidates.len()).unwrap_or(u32::MAX);
        let len = u32::try_from(pending.len()).unwrap_or(u32::MAX);
        let mut direct = None;
        for (index, (p, pattern)) in pending.into_iter().enumerate() {
            let slot = &self.table.rules[p.rule as usize];
            self.table.candidates.push(Candidate {
                rule: p.rule,
                pattern,
                route: slot.route.0,
                rule_index: u16::try_from(slot.index).unwrap_or(u16::MAX),
                match_index: p.match_index,
                conditions: p.conditions,
            });
            if index == 0 {
                let first = &self.table.candidates[self.table.candidates.len() - 1];
                direct = first.conditions.is_none().then(|| first.hit());
            }
        }
        Span { start, len, direct }
    }
}
