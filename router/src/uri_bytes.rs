//! The byte classes of RFC 3986 §2.2–2.3 that paths and hosts are built from,
//! shared by every check of either (the router's path normalization, the proxy's
//! `Host` validation). `const` so lookup tables can be built from them.

/// `unreserved`: letters, digits, `-`, `.`, `_`, `~`.
pub const fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// `sub-delims`: `!`, `$`, `&`, `'`, `(`, `)`, `*`, `+`, `,`, `;`, `=`.
pub const fn is_sub_delim(b: u8) -> bool {
    matches!(
        b,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}
