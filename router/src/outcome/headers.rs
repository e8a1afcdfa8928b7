//! Header edits: applies a compiled [`HeaderModifier`] to a request's or a response's
//! headers with Gateway API semantics (set, then add, then remove). Never fails and
//! never panics.

use crate::rule::HeaderModifier;
use http::HeaderMap;

/// Applies `modifier` to `headers`, in the Gateway API order: `set`, then `add`,
/// then `remove`.
///
/// - `set` replaces every existing value of the header with the configured one.
/// - `add` appends a value after any existing ones, so a backend that joins repeated
///   headers sees `existing,added`.
/// - `remove` deletes every value of the header; removing an absent header is a no-op.
///
/// Names compare case-insensitively because [`http::HeaderName`] is lower-case.
pub fn apply_header_modifier(modifier: &HeaderModifier, headers: &mut HeaderMap) {
    // `try_*` rather than `insert`/`append`: those panic when the map would exceed its
    // maximum size, and the map holds peer input. A map that full is already far past
    // any server's header limits, so dropping the edit is the safe answer.
    for (name, value) in &modifier.set {
        let _ = headers.try_insert(name.clone(), value.clone());
    }
    for (name, value) in &modifier.add {
        let _ = headers.try_append(name.clone(), value.clone());
    }
    for name in &modifier.remove {
        headers.remove(name);
    }
}
