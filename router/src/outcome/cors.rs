//! CORS answers: decides, from a compiled [`Cors`] policy and the request headers,
//! which `access-control-*` headers the proxy sends. Pure: the caller answers
//! preflights itself (204, never forwarded) with [`preflight_response`] and adds
//! [`response_headers`] to forwarded responses.
//!
//! Origins are always echoed rather than answered with `*`: that is valid whether or
//! not credentials are allowed, and `vary: origin` keeps caches honest. A `*` list of
//! methods or headers is echoed from the request when credentials are allowed,
//! because browsers read `*` literally then (Gateway API `HTTPCORSFilter`).

use crate::rule::{AllowList, Cors};
use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method};

/// Whether a request is a CORS preflight: `OPTIONS` with both `Origin` and
/// `Access-Control-Request-Method`. The proxy answers preflights itself.
pub fn is_preflight(method: &Method, headers: &HeaderMap) -> bool {
    method == Method::OPTIONS
        && headers.contains_key(ORIGIN)
        && headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD)
}

/// The headers of the proxy's own answer (status 204) to a preflight request.
///
/// Empty when the request's `Origin` is missing or not allowed, so a caller can tell a
/// refusal by [`HeaderMap::is_empty`]. Otherwise:
///
/// - `access-control-allow-origin`: the request's `Origin`, with `vary: origin`;
/// - `access-control-allow-credentials: true` when credentials are allowed;
/// - `access-control-allow-methods`: the configured methods joined with `, `; for `*`,
///   `*`, or with credentials the requested method echoed;
/// - `access-control-allow-headers`: likewise, echoing
///   `access-control-request-headers` (left out when nothing was requested);
/// - `access-control-expose-headers`: the configured list; `*` only without
///   credentials;
/// - `access-control-max-age`: the configured seconds.
///
/// A header whose list is empty is left out. When a value is echoed from the
/// request, the request header's name is added to `vary` too.
pub fn preflight_response(cors: &Cors, request_headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    let Some(origin) = allowed_origin(cors, request_headers) else {
        return out;
    };
    allow_origin(cors, origin, &mut out);
    let methods = allowed(
        &cors.allow_methods,
        cors.allow_credentials,
        request_headers,
        ACCESS_CONTROL_REQUEST_METHOD,
        &mut out,
    );
    if let Some(methods) = methods {
        out.insert(ACCESS_CONTROL_ALLOW_METHODS, methods);
    }
    let headers = allowed(
        &cors.allow_headers,
        cors.allow_credentials,
        request_headers,
        ACCESS_CONTROL_REQUEST_HEADERS,
        &mut out,
    );
    if let Some(headers) = headers {
        out.insert(ACCESS_CONTROL_ALLOW_HEADERS, headers);
    }
    expose_headers(cors, &mut out);
    out.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from(cors.max_age));
    out
}

/// The CORS headers to add to a forwarded (non-preflight) response.
///
/// Empty when the request has no `Origin` or it is not allowed. Otherwise
/// `access-control-allow-origin` (the request's `Origin`), `vary: origin`,
/// `access-control-allow-credentials: true` when credentials are allowed, and
/// `access-control-expose-headers` when configured (`*` only without credentials).
///
/// The caller should replace any `access-control-*` headers the backend sent with
/// these, and append (not replace) `vary`.
pub fn response_headers(cors: &Cors, request_headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    let Some(origin) = allowed_origin(cors, request_headers) else {
        return out;
    };
    allow_origin(cors, origin, &mut out);
    expose_headers(cors, &mut out);
    out
}

/// The request's `Origin` when the policy allows it. A request with several `Origin`
/// headers, or one that is not text, is not allowed: browsers send exactly one.
fn allowed_origin<'h>(cors: &Cors, request_headers: &'h HeaderMap) -> Option<&'h HeaderValue> {
    let mut values = request_headers.get_all(ORIGIN).iter();
    let origin = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let text = origin.to_str().ok()?;
    cors.allow_origins
        .iter()
        .any(|pattern| pattern.matches(text))
        .then_some(origin)
}

/// Writes the headers every allowed answer carries: the echoed origin, `vary` and
/// credentials.
fn allow_origin(cors: &Cors, origin: &HeaderValue, out: &mut HeaderMap) {
    out.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    out.append(VARY, HeaderValue::from_static("origin"));
    if cors.allow_credentials {
        out.insert(
            ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
}

/// The value of an `access-control-allow-*` header for a preflight, or `None` to leave
/// it out. `requested` names the request header echoed for `*` with credentials; when
/// it is echoed, it is added to `vary` in `out`.
fn allowed(
    list: &AllowList,
    credentials: bool,
    request_headers: &HeaderMap,
    requested: HeaderName,
    out: &mut HeaderMap,
) -> Option<HeaderValue> {
    match list {
        AllowList::Any if credentials => {
            let echoed = joined(request_headers, &requested)?;
            out.append(VARY, HeaderValue::from(requested));
            Some(echoed)
        }
        AllowList::Any => Some(HeaderValue::from_static("*")),
        AllowList::Only(values) => join_list(values),
    }
}

/// Writes `access-control-expose-headers` when the policy exposes any.
fn expose_headers(cors: &Cors, out: &mut HeaderMap) {
    let value = match &cors.expose_headers {
        // With credentials a browser reads `*` as a header named `*`, and Gateway API
        // forbids sending it then; there is no request header to echo instead.
        AllowList::Any if cors.allow_credentials => None,
        AllowList::Any => Some(HeaderValue::from_static("*")),
        AllowList::Only(values) => join_list(values),
    };
    if let Some(value) = value {
        out.insert(ACCESS_CONTROL_EXPOSE_HEADERS, value);
    }
}

/// Configured values joined with `, `; `None` when there are none. Compiled policies
/// hold only tokens, so the join is always a valid value; a hand-built policy with an
/// invalid one loses the header rather than panicking.
fn join_list(values: &[Box<str>]) -> Option<HeaderValue> {
    if values.is_empty() {
        return None;
    }
    HeaderValue::from_str(&values.join(", ")).ok()
}

/// Every value of request header `name` joined with `, `; `None` when it is absent or
/// blank.
fn joined(request_headers: &HeaderMap, name: &HeaderName) -> Option<HeaderValue> {
    let mut values = request_headers
        .get_all(name)
        .iter()
        .filter(|value| !value.as_bytes().trim_ascii().is_empty());
    let first = values.next()?;
    let Some(second) = values.next() else {
        return Some(first.clone());
    };
    let mut bytes = first.as_bytes().to_vec();
    for value in std::iter::once(second).chain(values) {
        bytes.extend_from_slice(b", ");
        bytes.extend_from_slice(value.as_bytes());
    }
    HeaderValue::from_bytes(&bytes).ok()
}
