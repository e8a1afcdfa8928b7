//! Label and field selectors as the API server parses them: `key=value`,
//! `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`, `!key`,
//! comma-separated terms all required. Field selectors know `metadata.name`,
//! `metadata.namespace` and, for Secrets, `type`; anything else is refused as the
//! real server refuses it.

use serde_json::Value;

/// One term of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Missing(String),
}

/// A parsed selector: every term must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selector(Vec<Term>);

impl Selector {
    /// Parses a selector; `Err` says why it is malformed.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in split_terms(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let term = if let Some(rest) = part.strip_prefix('!') {
                Term::Missing(rest.trim().to_owned())
            } else if let Some((key, values)) = split_set(part, " notin ") {
                Term::NotIn(key, values?)
            } else if let Some((key, values)) = split_set(part, " in ") {
                Term::In(key, values?)
            } else if let Some((key, value)) = part.split_once("!=") {
                Term::NotEquals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, value)) = part.split_once("==") {
                Term::Equals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, value)) = part.split_once('=') {
                Term::Equals(key.trim().to_owned(), value.trim().to_owned())
            } else {
                Term::Exists(part.to_owned())
            };
            terms.push(term);
        }
        Ok(Self(terms))
    }

    /// Whether `lookup` (key to value) satisfies every term.
    pub(crate) fn matches(&self, lookup: impl Fn(&str) -> Option<String>) -> bool {
        self.0.iter().all(|term| match term {
            Term::Equals(k, v) => lookup(k).as_deref() == Some(v.as_str()),
            Term::NotEquals(k, v) => lookup(k).as_deref() != Some(v.as_str()),
            Term::In(k, vs) => lookup(k).is_some_and(|x| vs.contains(&x)),
            Term::NotIn(k, vs) => lookup(k).is_none_or(|x| !vs.contains(&x)),
            Term::Exists(k) => lookup(k).is_some(),
            Term::Missing(k) => lookup(k).is_none(),
        })
    }

    /// The keys the selector names.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|term| match term {
            Term::Equals(k, _)
            | Term::NotEquals(k, _)
            | Term::In(k, _)
            | Term::NotIn(k, _)
            | Term::Exists(k)
            | Term::Missing(k) => k.as_str(),
        })
    }
}

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn split_set(part: &str, operator: &str) -> Option<(String, Result<Vec<String>, String>)> {
    let (key, rest) = part.split_once(operator)?;
    let rest = rest.trim();
    let values = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(|inner| inner.split(',').map(|v| v.trim().to_owned()).collect())
        .ok_or_else(|| format!("unable to parse requirement: {part}"));
    Some((key.trim().to_owned(), values))
}

/// The labels of `object`.
pub(crate) fn label(object: &Value, key: &str) -> Option<String> {
    object["metadata"]["labels"][key]
        .as_str()
        .map(str::to_owned)
}

/// A field of `object` a field selector may name, or `Err` for any other field.
pub(crate) fn field(object: &Value, kind: &str, key: &str) -> Result<Option<String>, String> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    match key {
        "metadata.name" => Ok(text(&object["metadata"]["name"])),
        "metadata.namespace" => Ok(text(&object["metadata"]["namespace"])),
        "type" if kind == "Secret" => Ok(text(&object["type"])),
        other => Err(format!("field label not supported: {other}")),
    }
}

#[cfg(test)]
mod tests;
