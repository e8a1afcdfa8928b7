//! Regular expressions under explicit limits, compiled ahead of time into dense DFAs
//! with `regex-automata`: no lazy state, no cache and no lock at lookup time, and a
//! lookup costs one pass over the input whatever the pattern. A pattern that is too
//! long, too deeply nested, or whose automaton would exceed the size limits is
//! refused when the table is built, never discovered on the request path.
//!
//! Every pattern matches the whole input (as Envoy's `safe_regex` does): `/a.*`
//! matches `/abc` but `/a` does not match `/abc`.

use foldhash::{HashMap, HashMapExt};
use regex_automata::dfa::{Automaton, StartKind, dense, sparse};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind, PatternID};
use std::sync::Arc;

/// Size limits for regular expressions. The defaults admit any sane route pattern and
/// refuse pathological ones (`(a|b|c){1000}`, huge Unicode classes repeated, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegexLimits {
    /// Longest pattern, in bytes.
    pub max_pattern_len: usize,
    /// Deepest nesting of groups and repetitions.
    pub max_nesting: u32,
    /// Largest automaton for one host's patterns (or one header pattern), in bytes.
    pub max_automaton_bytes: usize,
    /// Largest sum of all automata in one table, in bytes.
    pub max_total_bytes: usize,
}

impl Default for RegexLimits {
    fn default() -> Self {
        Self {
            max_pattern_len: 1024,
            max_nesting: 32,
            max_automaton_bytes: 2 << 20,
            max_total_bytes: 512 << 20,
        }
    }
}

/// Sparse DFAs: a few times smaller than dense ones, at a small cost per byte,
/// which matters when every host of a large table carries its own automaton.
type Dfa = sparse::DFA<Vec<u8>>;

/// One or more patterns compiled together; each pattern keeps its index as its id.
///
/// The automaton uses leftmost-first semantics and every pattern ends in `\z`, so
/// an anchored search reports the lowest-numbered pattern that matches the whole
/// input: one pass, no allocation. Per-pattern start states let a caller ask about
/// one pattern when it needs the next match in order.
#[derive(Debug, Clone)]
pub(crate) struct FullMatch {
    dfa: Arc<Dfa>,
}

impl FullMatch {
    /// Whether any pattern matches all of `haystack`.
    pub(crate) fn is_match(&self, haystack: &[u8]) -> bool {
        self.first_match(haystack).is_some()
    }

    /// The lowest-numbered pattern that matches all of `haystack`.
    pub(crate) fn first_match(&self, haystack: &[u8]) -> Option<usize> {
        let input = Input::new(haystack).anchored(Anchored::Yes);
        // A search error can only come from quit bytes, which are never configured.
        match self.dfa.try_search_fwd(&input) {
            Ok(Some(found)) => Some(found.pattern().as_usize()),
            _ => None,
        }
    }

    /// Whether pattern `id` matches all of `haystack`.
    pub(crate) fn matches_pattern(&self, haystack: &[u8], id: usize) -> bool {
        let Ok(pattern) = PatternID::new(id) else {
            return false;
        };
        let input = Input::new(haystack)
            .anchored(Anchored::Pattern(pattern))
            .earliest(true);
        matches!(self.dfa.try_search_fwd(&input), Ok(Some(_)))
    }
}

/// Compiles patterns under [`RegexLimits`], sharing automata between identical
/// pattern lists and keeping the running total of automaton memory.
#[derive(Debug)]
pub(crate) struct RegexCompiler {
    limits: RegexLimits,
    cache: HashMap<Vec<String>, Arc<Dfa>>,
    total_bytes: usize,
}

impl RegexCompiler {
    pub(crate) fn new(limits: RegexLimits) -> Self {
        Self {
            limits,
            cache: HashMap::new(),
            total_bytes: 0,
        }
    }

    /// Checks one pattern against the limits without keeping its automaton; used to
    /// name the culprit when a whole group fails.
    pub(crate) fn check(&mut self, pattern: &str) -> Result<(), String> {
        self.compile(&[pattern.to_owned()]).map(|_| ())
    }

    /// Compiles `patterns` into one automaton; pattern `i` reports id `i`.
    pub(crate) fn compile(&mut self, patterns: &[String]) -> Result<FullMatch, String> {
        if let Some(dfa) = self.cache.get(patterns) {
            return Ok(FullMatch {
                dfa: Arc::clone(dfa),
            });
        }
        for pattern in patterns {
            if pattern.len() > self.limits.max_pattern_len {
                return Err(format!(
                    "pattern is {} bytes, more than the limit of {}",
                    pattern.len(),
                    self.limits.max_pattern_len
                ));
            }
        }
        let wrapped: Vec<String> = patterns.iter().map(|p| format!(r"(?:{p})\z")).collect();
        let limit = self.limits.max_automaton_bytes;
        let dfa = dense::Builder::new()
            .syntax(syntax::Config::new().nest_limit(self.limits.max_nesting))
            .thompson(thompson::Config::new().nfa_size_limit(Some(limit)))
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .start_kind(StartKind::Anchored)
                    .starts_for_each_pattern(true)
                    .dfa_size_limit(Some(limit))
                    .determinize_size_limit(Some(limit.saturating_mul(2))),
            )
            .build_many(&wrapped)
            .map_err(|error| describe(&error))?
            .to_sparse()
            .map_err(|error| describe(&error))?;
        let bytes = dfa.memory_usage();
        if self.total_bytes.saturating_add(bytes) > self.limits.max_total_bytes {
            return Err(format!(
                "all regular expressions together exceed {} bytes",
                self.limits.max_total_bytes
            ));
        }
        self.total_bytes += bytes;
        let dfa = Arc::new(dfa);
        self.cache.insert(patterns.to_vec(), Arc::clone(&dfa));
        Ok(FullMatch { dfa })
    }
}

fn describe(error: &dense::BuildError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    if text.contains("exceeded") || text.contains("limit") {
        text.push_str(" (the pattern is too large for the configured limits)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(patterns: &[&str]) -> Result<FullMatch, String> {
        let owned: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        RegexCompiler::new(RegexLimits::default()).compile(&owned)
    }

    #[test]
    fn matches_the_whole_input_only() {
        let regex = compile(&["/api/v[0-9]+"]).unwrap();
        assert!(regex.is_match(b"/api/v12"));
        assert!(!regex.is_match(b"/api/v12/x"));
        assert!(!regex.is_match(b"x/api/v1"));
        let alternation = compile(&["/a|/b"]).unwrap();
        assert!(alternation.is_match(b"/b"));
        assert!(!alternation.is_match(b"/b/c"));
    }

    #[test]
    fn reports_the_lowest_matching_pattern_and_answers_per_pattern() {
        let regex = compile(&["/a", "/[a-z]+", "/a.*", "/b"]).unwrap();
        assert_eq!(regex.first_match(b"/abc"), Some(1));
        assert_eq!(regex.first_match(b"/a"), Some(0));
        assert_eq!(regex.first_match(b"/a/c"), Some(2));
        assert_eq!(regex.first_match(b"/9"), None);
        assert!(regex.matches_pattern(b"/abc", 2));
        assert!(!regex.matches_pattern(b"/abc", 0));
        assert!(!regex.matches_pattern(b"/abc", 3));
        assert!(!regex.matches_pattern(b"/abc", 99));
    }

    #[test]
    fn refuses_hostile_patterns() {
        assert!(compile(&["("]).is_err());
        assert!(compile(&[&"a".repeat(2000)]).is_err());
        assert!(compile(&[&format!("{}a{}", "(".repeat(40), ")".repeat(40))]).is_err());
        let blowup = compile(&["[a-z]*a[a-z]{30}"]).unwrap_err();
        assert!(blowup.contains("limit"), "{blowup}");
    }

    #[test]
    fn total_budget_is_enforced() {
        let mut compiler = RegexCompiler::new(RegexLimits {
            max_total_bytes: 1,
            ..RegexLimits::default()
        });
        assert!(compiler.compile(&["/x".to_owned()]).is_err());
    }

    #[test]
    fn identical_pattern_lists_share_one_automaton() {
        let mut compiler = RegexCompiler::new(RegexLimits::default());
        compiler.compile(&["/x[0-9]".to_owned()]).unwrap();
        let after_first = compiler.total_bytes;
        compiler.compile(&["/x[0-9]".to_owned()]).unwrap();
        assert_eq!(compiler.total_bytes, after_first);
    }
}
