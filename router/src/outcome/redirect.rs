//! Redirect targets: builds the absolute `Location` URL for a compiled [`Redirect`]
//! from what the proxy knows about the request, with the Gateway API rules for
//! deriving the scheme, host and port. Start at [`redirect_location`].

use super::rewrite::rewrite_path;
use crate::host::normalize_request_host;
use crate::rule::{Redirect, RedirectScheme};
use std::borrow::Cow;

/// What [`redirect_location`] needs to know about the request being redirected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedirectRequest<'a> {
    /// Scheme of the listener the request arrived on: `http` or `https`.
    pub scheme: &'a str,
    /// `Host` (or `:authority`) as the client sent it; may include a port.
    pub host: &'a str,
    /// Port of the listener the request arrived on.
    pub listener_port: u16,
    /// Normalized request path, without the query.
    pub path: &'a str,
    /// Query, without the `?`.
    pub query: Option<&'a str>,
    /// Bytes of `path` covered by the rule's `PathPrefix` match, as for
    /// [`rewrite_path`](super::rewrite_path).
    pub matched_prefix_len: usize,
}

/// The absolute URL to send in the `Location` header of a redirect. The status code is
/// [`Redirect::status`].
///
/// - Scheme: the redirect's, else the request's.
/// - Host: the redirect's hostname, else the request's `Host` without its port
///   (lower-cased; IPv6 literals keep their brackets).
/// - Port: the redirect's; else, when the redirect sets a scheme, that scheme's
///   well-known port (80 or 443); else the listener's. It is left out when it is the
///   default for the final scheme (`http` and 80, `https` and 443).
/// - Path: the request's, changed by the redirect's path modifier if it has one; then
///   `?query` when the request has a non-empty query.
///
/// The caller must pass a non-empty `host`; without one the URL has an empty
/// authority.
pub fn redirect_location(redirect: &Redirect, request: &RedirectRequest<'_>) -> String {
    let scheme = match redirect.scheme {
        Some(scheme) => scheme.as_str(),
        None => request.scheme,
    };
    let host = match &redirect.hostname {
        Some(hostname) => Cow::Borrowed(&**hostname),
        None => normalize_request_host(request.host),
    };
    let port = redirect
        .port
        .or(redirect.scheme.map(RedirectScheme::default_port))
        .unwrap_or(request.listener_port);
    let port = if Some(port) == default_port(scheme) {
        String::new()
    } else {
        format!(":{port}")
    };
    let path = match &redirect.path {
        Some(modifier) => Cow::Owned(rewrite_path(
            modifier,
            request.path,
            request.matched_prefix_len,
        )),
        None if request.path.is_empty() => Cow::Borrowed("/"),
        None => Cow::Borrowed(request.path),
    };
    match request.query {
        Some(query) if !query.is_empty() => format!("{scheme}://{host}{port}{path}?{query}"),
        _ => format!("{scheme}://{host}{port}{path}"),
    }
}

/// The port a URL with this scheme may leave out.
fn default_port(scheme: &str) -> Option<u16> {
    if scheme.eq_ignore_ascii_case("http") {
        Some(RedirectScheme::Http.default_port())
    } else if scheme.eq_ignore_ascii_case("https") {
        Some(RedirectScheme::Https.default_port())
    } else {
        None
    }
}
