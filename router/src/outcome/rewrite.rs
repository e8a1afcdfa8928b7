//! Path rewrites: applies a compiled [`PathModifier`] to a request path, for both
//! `URLRewrite` and `RequestRedirect`. Works on the path alone; callers keep the query.
//! Never panics, whatever prefix length it is given.

use crate::rule::PathModifier;

/// The path after applying `modifier` to `path`.
///
/// `path` is the normalized request path without the query. `matched_prefix_len` is
/// the number of bytes of `path` covered by the rule's `PathPrefix` match, not counting
/// a trailing slash (so 0 when the prefix is `/`); what follows it is either empty or
/// starts with `/`.
///
/// - `ReplaceFullPath(p)` gives `p`.
/// - `ReplacePrefixMatch(r)` gives `r` without its trailing slash, followed by the rest
///   of `path`; an empty result is `/`. With prefix `/foo` and replacement `/xyz`,
///   `/foo/bar` becomes `/xyz/bar` and `/foo/` becomes `/xyz/`; with replacement `/`,
///   `/foo` becomes `/` and `/foo/bar` becomes `/bar`.
///
/// A `matched_prefix_len` past the end of `path` or inside a character is treated as
/// leaving no remainder. If the remainder does not start with `/` (the caller's prefix
/// did not end on a segment boundary), a `/` is put between the two parts so the
/// result is still a path rather than a glued-together segment.
pub fn rewrite_path(modifier: &PathModifier, path: &str, matched_prefix_len: usize) -> String {
    match modifier {
        PathModifier::ReplaceFullPath(full) => absolute(String::from(&**full)),
        PathModifier::ReplacePrefixMatch(replacement) => {
            let remainder = path.get(matched_prefix_len..).unwrap_or("");
            let base = replacement.trim_end_matches('/');
            let mut out = String::with_capacity(base.len() + remainder.len() + 1);
            out.push_str(base);
            if !remainder.is_empty() && !remainder.starts_with('/') {
                out.push('/');
            }
            out.push_str(remainder);
            absolute(out)
        }
    }
}

/// Makes sure a rewritten path starts with `/`. Compiled modifiers always do; this
/// guards hand-built ones so the result is never empty or relative.
fn absolute(path: String) -> String {
    if path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    }
}
