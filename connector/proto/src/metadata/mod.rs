//! Metadata key conventions of data streams (PROTOCOL.md §4.3, §4.4) and conversions
//! between metadata and HTTP heads, both directions.
//!
//! Connector side: [`request_parts`] turns a `ConnectRequest` into `http` request
//! parts, [`response_metadata`] turns a response head into metadata. Edge side (the
//! simulator): [`request_metadata`] and [`response_parts`] do the reverse. Keys are
//! case-sensitive; header names travel in Go's canonical form (`Content-Type`).

use http::header::{HOST, HeaderName, HeaderValue, TRANSFER_ENCODING};
use http::{HeaderMap, Method, StatusCode, Uri};

use super::connect::{ConnectRequest, ConnectResponse, ConnectionType, Metadata};
use crate::Error;

/// Request method; passed on unchanged (`GET` and `get` both occur).
pub const HTTP_METHOD: &str = "HttpMethod";
/// Host / authority; becomes the request's `Host`.
pub const HTTP_HOST: &str = "HttpHost";
/// Prefix of per-value header keys: `HttpHeader:<Name>`.
pub const HTTP_HEADER_PREFIX: &str = "HttpHeader:";
/// Marker cloudflared looks for in a key to treat it as a header.
pub const HTTP_HEADER_MARKER: &str = "HttpHeader";
/// Decimal response status.
pub const HTTP_STATUS: &str = "HttpStatus";
/// TCP flow identifier (logs only).
pub const FLOW_ID: &str = "FlowID";
/// `true` when a TCP flow was refused by the flow limiter.
pub const FLOW_CONNECT_RATE_LIMITED: &str = "FlowConnectRateLimited";
/// Optional tracing context of TCP flows.
pub const TRACE_ID: &str = "cf-trace-id";
/// Span data returned for traced requests (header for HTTP, plain key for TCP).
pub const CLOUDFLARED_TRACING: &str = "Cf-Int-Cloudflared-Tracing";
/// Internal header stripped from requests before proxying.
pub const PROXY_CONNECTION_UPGRADE: &str = "Cf-Cloudflared-Proxy-Connection-Upgrade";

/// Go's `CanonicalMIMEHeaderKey`: the first letter and every letter after `-` upper
/// case, the rest lower case. Names with characters outside the HTTP token set are
/// returned unchanged, as Go does.
pub fn canonical_header_name(name: &str) -> String {
    let is_token = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c);
    if !name.bytes().all(is_token) {
        return name.to_owned();
    }
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

/// The header name in a header key, following cloudflared: any key containing
/// `HttpHeader` is a header key, it must split on `:` into exactly two parts, and the
/// second part is the name. `None` for keys that are not header keys.
pub fn header_name_of(key: &str) -> Option<Result<&str, Error>> {
    if !key.contains(HTTP_HEADER_MARKER) {
        return None;
    }
    let mut parts = key.split(':');
    Some(match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(name), None) => Ok(name),
        _ => Err(Error::Metadata(format!(
            "header key {key:?} must have exactly one ':'"
        ))),
    })
}

/// Connector side: the HTTP request head a `ConnectRequest` describes. The method
/// defaults to `GET`; `HttpHost` becomes the `host` header;
/// `Cf-Cloudflared-Proxy-Connection-Upgrade` is dropped. Fails for TCP streams,
/// whose `dest` is an address, not a URL.
pub fn request_parts(request: &ConnectRequest) -> Result<http::request::Parts, Error> {
    if !matches!(
        request.kind,
        ConnectionType::Http | ConnectionType::Websocket
    ) {
        return Err(Error::Metadata(format!(
            "connection type {:?} has no http request head",
            request.kind
        )));
    }
    let method = match request.metadata_values(HTTP_METHOD).next() {
        Some(m) => Method::from_bytes(m.as_bytes())
            .map_err(|_| Error::Metadata(format!("invalid {HTTP_METHOD} {m:?}")))?,
        None => Method::GET,
    };
    let uri: Uri = request
        .dest
        .parse()
        .map_err(|_| Error::Metadata(format!("invalid dest url {:?}", request.dest)))?;
    let mut headers = HeaderMap::new();
    for entry in &request.metadata {
        let Some(name) = header_name_of(&entry.key) else {
            continue;
        };
        let name = name?;
        if name.eq_ignore_ascii_case(PROXY_CONNECTION_UPGRADE) {
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Error::Metadata(format!("invalid header name {name:?}")))?;
        let value = HeaderValue::from_bytes(entry.val.as_bytes())
            .map_err(|_| Error::Metadata(format!("invalid value for header {name}")))?;
        headers.append(name, value);
    }
    if let Some(host) = request.metadata_values(HTTP_HOST).next() {
        let value = HeaderValue::from_bytes(host.as_bytes())
            .map_err(|_| Error::Metadata(format!("invalid {HTTP_HOST} {host:?}")))?;
        headers.insert(HOST, value);
    }
    let (mut parts, ()) = http::Request::builder()
        .method(method)
        .uri(uri)
        .body(())
        .map_err(|e| Error::Metadata(format!("invalid request head: {e}")))?
        .into_parts();
    parts.headers = headers;
    Ok(parts)
}

/// Whether cloudflared would read a request body for this request: only when the
/// metadata has `Content-Length` or a `Transfer-Encoding` containing `chunked`
/// (websockets always stream).
pub fn request_body_expected(request: &ConnectRequest) -> bool {
    if request.kind != ConnectionType::Http {
        return true;
    }
    request
        .metadata
        .iter()
        .any(|m| match header_name_of(&m.key) {
            Some(Ok(name)) => {
                name.eq_ignore_ascii_case("content-length")
                    || (name.eq_ignore_ascii_case("transfer-encoding")
                        && m.val.to_ascii_lowercase().contains("chunked"))
            }
            _ => false,
        })
}

fn header_metadata(headers: &HeaderMap, skip: &[HeaderName], out: &mut Vec<Metadata>) {
    for (name, value) in headers {
        if skip.contains(name) {
            continue;
        }
        out.push(Metadata::new(
            format!(
                "{HTTP_HEADER_PREFIX}{}",
                canonical_header_name(name.as_str())
            ),
            String::from_utf8_lossy(value.as_bytes()),
        ));
    }
}

/// Edge side: metadata for an HTTP request head (`HttpMethod`, `HttpHost` from the
/// `host` header or else the URI authority, one `HttpHeader:<Name>` per other header
/// value). Pair it with `dest` = the absolute URL and the connection type.
pub fn request_metadata(parts: &http::request::Parts) -> Vec<Metadata> {
    let mut out = vec![Metadata::new(HTTP_METHOD, parts.method.as_str())];
    let host = parts
        .headers
        .get(HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        .or_else(|| parts.uri.authority().map(|a| a.as_str().to_owned()));
    if let Some(host) = host {
        out.push(Metadata::new(HTTP_HOST, host));
    }
    header_metadata(&parts.headers, &[HOST], &mut out);
    out
}

/// Connector side: metadata for a response head: `HttpStatus`, then one
/// `HttpHeader:<Name>` per header value. `Transfer-Encoding` is left out because the
/// body on the stream is always raw.
pub fn response_metadata(status: StatusCode, headers: &HeaderMap) -> Vec<Metadata> {
    let mut out = vec![Metadata::new(HTTP_STATUS, status.as_str())];
    header_metadata(headers, &[TRANSFER_ENCODING], &mut out);
    out
}

/// Connector side: a successful `ConnectResponse` for an HTTP response head.
pub fn http_response(status: StatusCode, headers: &HeaderMap) -> ConnectResponse {
    ConnectResponse {
        error: String::new(),
        metadata: response_metadata(status, headers),
    }
}

/// Edge side: the response head in a successful `ConnectResponse`. `HttpStatus` is
/// required; an `error` response has no head and is refused here.
pub fn response_parts(response: &ConnectResponse) -> Result<http::response::Parts, Error> {
    if !response.is_success() {
        return Err(Error::Metadata(format!(
            "response carries an error, not a head: {}",
            response.error
        )));
    }
    let status = response
        .metadata
        .iter()
        .find(|m| m.key == HTTP_STATUS)
        .ok_or_else(|| Error::Metadata(format!("missing {HTTP_STATUS}")))?;
    let status = StatusCode::from_bytes(status.val.as_bytes())
        .map_err(|_| Error::Metadata(format!("invalid {HTTP_STATUS} {:?}", status.val)))?;
    let mut headers = HeaderMap::new();
    for entry in &response.metadata {
        let Some(name) = header_name_of(&entry.key) else {
            continue;
        };
        let name = name?;
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Error::Metadata(format!("invalid header name {name:?}")))?;
        let value = HeaderValue::from_bytes(entry.val.as_bytes())
            .map_err(|_| Error::Metadata(format!("invalid value for header {name}")))?;
        headers.append(name, value);
    }
    let (mut parts, ()) = http::Response::builder()
        .status(status)
        .body(())
        .map_err(|e| Error::Metadata(format!("invalid response head: {e}")))?
        .into_parts();
    parts.headers = headers;
    Ok(parts)
}

#[cfg(test)]
mod tests;
