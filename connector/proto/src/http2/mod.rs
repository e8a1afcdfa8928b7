//! The HTTP/2 transport's header conventions (PROTOCOL.md §7), both sides.
//!
//! Over HTTP/2 the edge is the HTTP/2 client and the connector the server. Every
//! edge request is one stream; what kind of stream it is comes from headers
//! ([`StreamType::of`]): `Cf-Cloudflared-Proxy-Connection-Upgrade` says
//! `control-stream`, `update-configuration` or `websocket`, a non-empty
//! `Cf-Cloudflared-Proxy-Src` marks a TCP stream, anything else is plain HTTP.
//! Request headers travel as ordinary HTTP/2 headers; response headers are
//! serialized into the one header `Cf-Cloudflared-Response-Headers`
//! ([`serialize_headers`], [`deserialize_headers`]) so that HTTP/2 header rules
//! never apply to the origin's HTTP/1 headers.
//!
//! Connector side: [`response_head`] and [`error_head`]. Edge side (the simulator):
//! [`ResponseHead::decode`]. Pure functions over `http` types; no IO here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use http::header::{CONTENT_LENGTH, HeaderName, HeaderValue, TRANSFER_ENCODING};
use http::{HeaderMap, StatusCode};

use super::metadata::canonical_header_name;
use crate::Error;

/// The header that marks control, configuration and websocket streams.
pub const UPGRADE_HEADER: &str = "cf-cloudflared-proxy-connection-upgrade";
/// A non-empty value marks a TCP (private-network) stream.
pub const TCP_SRC_HEADER: &str = "cf-cloudflared-proxy-src";
/// The serialized origin response headers.
pub const RESPONSE_HEADERS: &str = "cf-cloudflared-response-headers";
/// JSON saying who produced a response (`{"src":"origin"}` or `{"src":"cloudflared"}`).
pub const RESPONSE_META: &str = "cf-cloudflared-response-meta";
/// Span data of traced requests, sent as a real header only.
pub const TRACING_HEADER: &str = "cf-int-cloudflared-tracing";
/// [`UPGRADE_HEADER`] value of the control stream.
pub const CONTROL_STREAM: &str = "control-stream";
/// [`UPGRADE_HEADER`] value of a configuration push.
pub const CONFIGURATION_UPDATE: &str = "update-configuration";
/// [`UPGRADE_HEADER`] value of a websocket.
pub const WEBSOCKET: &str = "websocket";
/// [`RESPONSE_META`] of a response that came from the origin.
pub const META_ORIGIN: &str = r#"{"src":"origin"}"#;
/// [`RESPONSE_META`] of an error raised by the connector itself (status 502).
pub const META_CLOUDFLARED: &str = r#"{"src":"cloudflared"}"#;

/// What an edge-opened HTTP/2 stream is, from its request headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamType {
    /// The control stream: request body edge→connector RPC, response body the reverse.
    Control,
    /// A configuration push (JSON `{"version", "config"}`).
    Configuration,
    /// A websocket: the upgrade request; frames flow after a `200` response head.
    Websocket,
    /// A TCP stream to the request's `:authority` (`IP:port`).
    Tcp,
    /// A plain HTTP request.
    Http,
}

impl StreamType {
    /// Classifies a request the way cloudflared does: the first value of
    /// [`UPGRADE_HEADER`], compared exactly, in this order: configuration,
    /// websocket, TCP ([`TCP_SRC_HEADER`] non-empty), control stream, HTTP.
    pub fn of(headers: &HeaderMap) -> Self {
        let upgrade = headers.get(UPGRADE_HEADER).map(HeaderValue::as_bytes);
        let tcp = headers
            .get(TCP_SRC_HEADER)
            .is_some_and(|v| !v.as_bytes().is_empty());
        match upgrade {
            Some(v) if v == CONFIGURATION_UPDATE.as_bytes() => Self::Configuration,
            Some(v) if v == WEBSOCKET.as_bytes() => Self::Websocket,
            _ if tcp => Self::Tcp,
            Some(v) if v == CONTROL_STREAM.as_bytes() => Self::Control,
            _ => Self::Http,
        }
    }
}

/// Whether a response header is the transport's own and stays out of the serialized
/// set: names starting with `:`, `cf-int-`, `cf-cloudflared-` or `cf-proxy-`.
pub fn is_control_response_header(name: &str) -> bool {
    ["cf-int-", "cf-cloudflared-", "cf-proxy-", ":"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Headers a websocket client needs, serialized even if they looked like control
/// headers.
pub fn is_websocket_client_header(name: &str) -> bool {
    matches!(name, "sec-websocket-accept" | "connection" | "upgrade")
}

/// `b64(name):b64(value)` pairs joined by `;`, standard alphabet without padding,
/// one pair per value; names in Go's canonical form.
pub fn serialize_headers<'a>(
    headers: impl IntoIterator<Item = (&'a HeaderName, &'a HeaderValue)>,
) -> String {
    let mut out = String::new();
    for (name, value) in headers {
        if !out.is_empty() {
            out.push(';');
        }
        STANDARD_NO_PAD.encode_string(canonical_header_name(name.as_str()), &mut out);
        out.push(':');
        STANDARD_NO_PAD.encode_string(value.as_bytes(), &mut out);
    }
    out
}

/// The reverse of [`serialize_headers`]. An empty string is no headers; a pair
/// without exactly one `:`, bad base64, or an invalid name or value is an error.
pub fn deserialize_headers(serialized: &str) -> Result<HeaderMap, Error> {
    let mut headers = HeaderMap::new();
    if serialized.is_empty() {
        return Ok(headers);
    }
    for pair in serialized.split(';') {
        let mut parts = pair.split(':');
        let (Some(name), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::Metadata(format!(
                "serialized header {pair:?} is not name:value"
            )));
        };
        let decode = |what: &str, text: &str| {
            STANDARD_NO_PAD
                .decode(text)
                .map_err(|e| Error::Metadata(format!("serialized header {what} {text:?}: {e}")))
        };
        let name = HeaderName::from_bytes(&decode("name", name)?)
            .map_err(|e| Error::Metadata(format!("serialized header name: {e}")))?;
        let value = HeaderValue::from_bytes(&decode("value", value)?)
            .map_err(|e| Error::Metadata(format!("serialized value of {name}: {e}")))?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// Connector side: the HTTP/2 response head for an origin response. `101` becomes
/// `200`; every origin header except control headers (see
/// [`is_control_response_header`], [`is_websocket_client_header`]) and
/// `Transfer-Encoding` (the body is raw) is serialized into [`RESPONSE_HEADERS`];
/// `Content-Length` is also sent as a real header and the tracing header only as a
/// real one; [`RESPONSE_META`] says the origin answered.
pub fn response_head(status: StatusCode, headers: &HeaderMap) -> http::Response<()> {
    let mut out = HeaderMap::new();
    let mut user = Vec::new();
    for (name, value) in headers {
        let lower = name.as_str();
        if name == CONTENT_LENGTH {
            out.append(CONTENT_LENGTH, value.clone());
        }
        if lower == TRACING_HEADER {
            out.append(name.clone(), value.clone());
            continue;
        }
        if name == TRANSFER_ENCODING {
            continue;
        }
        if !is_control_response_header(lower) || is_websocket_client_header(lower) {
            user.push((name, value));
        }
    }
    let serialized = serialize_headers(user);
    // Base64 and `:`/`;` are always valid header value bytes.
    if let Ok(value) = HeaderValue::from_str(&serialized) {
        out.insert(HeaderName::from_static(RESPONSE_HEADERS), value);
    }
    out.insert(
        HeaderName::from_static(RESPONSE_META),
        HeaderValue::from_static(META_ORIGIN),
    );
    let status = if status == StatusCode::SWITCHING_PROTOCOLS {
        StatusCode::OK
    } else {
        status
    };
    let mut response = http::Response::new(());
    *response.status_mut() = status;
    *response.headers_mut() = out;
    response
}

/// Connector side: the head of an error raised by the connector itself (the
/// handler failed before a response, a TCP dial was refused): `502` with
/// [`META_CLOUDFLARED`].
pub fn error_head() -> http::Response<()> {
    let mut response = http::Response::new(());
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response.headers_mut().insert(
        HeaderName::from_static(RESPONSE_META),
        HeaderValue::from_static(META_CLOUDFLARED),
    );
    response
}

/// Edge side: what a connector's HTTP/2 response head says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// The status as sent (`200` for an accepted websocket).
    pub status: StatusCode,
    /// The origin's headers, deserialized from [`RESPONSE_HEADERS`], plus the
    /// tracing header if present.
    pub headers: HeaderMap,
    /// Whether [`RESPONSE_META`] says the connector itself raised the error.
    pub from_connector: bool,
}

impl ResponseHead {
    /// Decodes a response head; a malformed [`RESPONSE_HEADERS`] is an error.
    pub fn decode(status: StatusCode, headers: &HeaderMap) -> Result<Self, Error> {
        let serialized = match headers.get(RESPONSE_HEADERS) {
            Some(v) => v
                .to_str()
                .map_err(|_| Error::Metadata(format!("{RESPONSE_HEADERS} is not ascii")))?,
            None => "",
        };
        let mut user = deserialize_headers(serialized)?;
        for value in headers.get_all(TRACING_HEADER) {
            user.append(HeaderName::from_static(TRACING_HEADER), value.clone());
        }
        let from_connector = headers
            .get(RESPONSE_META)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains(r#""src":"cloudflared""#));
        Ok(Self {
            status,
            headers: user,
            from_connector,
        })
    }
}

#[cfg(test)]
mod tests;
