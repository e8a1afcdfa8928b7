//! Request paths: RFC 3986 normalization of what clients send, validation of what
//! routes configure, and `SegmentTrie`, the segment-aware prefix index.
//!
//! The router matches normalized paths only. The data plane normalizes each request
//! path once with [`normalize_path`], routes it, and forwards the same normalized
//! path, so what is routed is exactly what the backend sees.

mod trie;

pub(crate) use trie::{SegmentTrie, TrieBuilder};

use std::borrow::Cow;

use crate::uri_bytes::{is_sub_delim, is_unreserved};

/// Why a request path was refused; the data plane answers 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path does not start with `/`.
    #[error("path must start with '/'")]
    NotAbsolute,
    /// A `%` is not followed by two hex digits.
    #[error("path has a malformed percent-escape")]
    BadEscape,
    /// The path holds a byte that may not appear in a URI path.
    #[error("path holds a character that must be percent-encoded")]
    BadCharacter,
}

/// Normalizes a request path (query excluded) per RFC 3986 §6.2.2: percent-escapes of
/// unreserved characters are decoded, other escapes get upper-case hex, and `.` and
/// `..` segments are removed (a `..` never climbs above the root). Borrows when the
/// path is already normal, which is the common case.
pub fn normalize_path(path: &str) -> Result<Cow<'_, str>, PathError> {
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') {
        return Err(PathError::NotAbsolute);
    }
    let mut needs_work = false;
    // A dot segment needs a literal `.` (an escaped one is decoded, which is work
    // already).
    let mut has_dot = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' => {
                let (hi, lo) = match (bytes.get(at + 1), bytes.get(at + 2)) {
                    (Some(&hi), Some(&lo)) if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => {
                        (hi, lo)
                    }
                    _ => return Err(PathError::BadEscape),
                };
                let decoded = hex_value(hi) << 4 | hex_value(lo);
                needs_work |=
                    is_unreserved(decoded) || hi.is_ascii_lowercase() || lo.is_ascii_lowercase();
                at += 3;
            }
            b if is_path_byte(b) => {
                has_dot |= b == b'.';
                at += 1;
            }
            _ => return Err(PathError::BadCharacter),
        }
    }
    needs_work |= has_dot && has_dot_segment(path);
    if !needs_work {
        return Ok(Cow::Borrowed(path));
    }
    Ok(Cow::Owned(remove_dot_segments(&normalize_escapes(path))))
}

/// Bytes RFC 3986 allows unescaped in a path: unreserved, sub-delims, `:`, `@`, `/`.
fn is_path_byte(b: u8) -> bool {
    PATH_BYTES[usize::from(b)]
}

/// [`is_path_byte`] as a table: every byte of every request path is looked up.
static PATH_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = is_unreserved(byte) || is_sub_delim(byte) || matches!(byte, b':' | b'@' | b'/');
        b += 1;
    }
    table
};

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit - b'A' + 10,
    }
}

fn normalize_escapes(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            // `normalize_path` checked that two hex digits follow every `%`.
            let decoded = hex_value(bytes[at + 1]) << 4 | hex_value(bytes[at + 2]);
            if is_unreserved(decoded) {
                out.push(char::from(decoded));
            } else {
                out.push('%');
                out.push(char::from(bytes[at + 1].to_ascii_uppercase()));
                out.push(char::from(bytes[at + 2].to_ascii_uppercase()));
            }
            at += 3;
        } else {
            out.push(char::from(bytes[at]));
            at += 1;
        }
    }
    out
}

/// Whether any segment is `.` or `..` (after unreserved escapes are decoded, `%2E`
/// counts as a dot). Allocation-free: it runs on every configured path.
fn has_dot_segment(path: &str) -> bool {
    path.split('/').any(is_dot_segment)
}

fn is_dot_segment(segment: &str) -> bool {
    let bytes = segment.as_bytes();
    let (mut at, mut dots) = (0, 0);
    while at < bytes.len() {
        if bytes[at] == b'.' {
            at += 1;
        } else if bytes[at] == b'%'
            && bytes.get(at + 1) == Some(&b'2')
            && bytes.get(at + 2).is_some_and(|b| b | 0x20 == b'e')
        {
            at += 3;
        } else {
            return false;
        }
        dots += 1;
    }
    dots == 1 || dots == 2
}

fn remove_dot_segments(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path[1..].split('/').collect();
    let last = segments.len() - 1;
    for (index, segment) in segments.iter().enumerate() {
        match *segment {
            "." => {
                if index == last {
                    kept.push("");
                }
            }
            ".." => {
                kept.pop();
                if index == last {
                    kept.push("");
                }
            }
            other => kept.push(other),
        }
    }
    let mut out = String::with_capacity(path.len());
    for segment in kept {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Validates a configured `Exact` or `PathPrefix` value the way Gateway API does
/// (absolute, no `//`, no `.`/`..` segments, no `?` or `#`) and normalizes its
/// escapes so it compares equal to normalized request paths.
pub(crate) fn normalize_config_path(value: &str) -> Result<String, String> {
    if value.contains("//") || value.contains('?') || value.contains('#') {
        return Err(format!("path {value:?} may not contain '//', '?' or '#'"));
    }
    if has_dot_segment(value) {
        return Err(format!(
            "path {value:?} may not contain '.' or '..' segments"
        ));
    }
    normalize_path(value)
        .map(Cow::into_owned)
        .map_err(|error| format!("path {value:?}: {error}"))
}

/// Splits a request target into path and query (without the `?`).
pub fn split_query(target: &str) -> (&str, Option<&str>) {
    match target.bytes().position(|b| b == b'?') {
        Some(at) => (&target[..at], Some(&target[at + 1..])),
        None => (target, None),
    }
}

#[cfg(test)]
mod tests;
