//! Header rules of the proxy hop: which `Host` to route on, which headers describe one
//! hop and are never forwarded, how upgrades are recognised, and how `X-Forwarded-*`
//! and `Forwarded` are written (the way nginx and Envoy users expect).
//!
//! Pure functions over `http` types; no IO.

use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Uri, Version};

/// Headers that describe one hop, never forwarded in either direction (`TE` is
/// handled apart: `te: trailers` is end-to-end in practice, gRPC needs it).
pub(crate) const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// The host to route on, or `None` for a request that must be refused (400): the
/// authority of an absolute-form target (or HTTP/2 `:authority`) wins over `Host`
/// (RFC 9112 §3.2.2); otherwise exactly one `Host` of visible ASCII is required,
/// except on HTTP/1.0, where it may be absent (empty host).
pub(crate) fn request_host(headers: &HeaderMap, uri: &Uri, version: Version) -> Option<String> {
    let mut values = headers.get_all(header::HOST).iter();
    let first = values.next();
    if values.next().is_some() {
        return None;
    }
    if let Some(authority) = uri.authority() {
        return Some(authority.as_str().to_owned());
    }
    match first {
        Some(value) => {
            let bytes = value.as_bytes();
            let visible = !bytes.is_empty() && bytes.iter().all(|b| b.is_ascii_graphic());
            visible.then(|| String::from_utf8_lossy(bytes).into_owned())
        }
        None if version == Version::HTTP_10 => Some(String::new()),
        None => None,
    }
}

/// The protocol an HTTP/1.1 request asks to upgrade to (`Upgrade` named in
/// `Connection`), such as `websocket`.
pub(crate) fn upgrade_protocol(headers: &HeaderMap, version: Version) -> Option<HeaderValue> {
    if version != Version::HTTP_11 {
        return None;
    }
    let upgrade = headers.get(header::UPGRADE)?;
    has_token(headers, &header::CONNECTION, "upgrade").then(|| upgrade.clone())
}

/// The comma-separated items of every `name` field (trimmed; fields that are not
/// text are skipped).
fn field_tokens<'h>(headers: &'h HeaderMap, name: &HeaderName) -> impl Iterator<Item = &'h str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
}

/// Whether a `name` field lists `token` (case-insensitively), as in
/// `Connection: close`.
pub(crate) fn has_token(headers: &HeaderMap, name: &HeaderName, token: &str) -> bool {
    field_tokens(headers, name).any(|item| item.eq_ignore_ascii_case(token))
}

/// Removes the hop-by-hop headers and every header the `Connection` header names;
/// `TE` survives only as `trailers`.
///
/// Most messages carry none of them, so one pass over the names decides whether
/// there is anything to do before any lookup by name.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let present: Vec<HeaderName> = headers
        .keys()
        .filter(|name| **name == header::TE || HOP_BY_HOP.contains(&name.as_str()))
        .cloned()
        .collect();
    if present.is_empty() {
        return;
    }
    // Tokens `Connection` names (other than the usual `close` and `keep-alive`,
    // which name no header).
    let named: Vec<HeaderName> = field_tokens(headers, &header::CONNECTION)
        .filter(|token| {
            !token.eq_ignore_ascii_case("close") && !token.eq_ignore_ascii_case("keep-alive")
        })
        .filter_map(|token| HeaderName::from_bytes(token.as_bytes()).ok())
        .collect();
    let wants_trailers = has_token(headers, &header::TE, "trailers");
    for name in named.iter().chain(&present) {
        headers.remove(name);
    }
    if wants_trailers {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
}

/// How the proxy writes forwarding headers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Forwarding {
    /// Proxies in front of this one whose `X-Forwarded-*` and `Forwarded` headers are
    /// believed (Envoy's `xff_num_trusted_hops`); 0 = the peer is the client.
    pub(crate) trusted_hops: u32,
}

/// What the proxy knows of the hop it is forwarding.
pub(crate) struct Hop<'a> {
    pub(crate) peer: SocketAddr,
    /// `http` or `https`.
    pub(crate) scheme: &'static str,
    /// The host the request was routed on.
    pub(crate) host: &'a str,
    /// The same as a header value, when the request had one (shared, not copied,
    /// into `X-Forwarded-Host`).
    pub(crate) host_value: Option<&'a HeaderValue>,
}

impl Forwarding {
    /// Writes the forwarding headers for `hop`:
    /// - `X-Forwarded-For`: the peer appended to what came (joined into one value);
    /// - `X-Forwarded-Proto` and `X-Forwarded-Host`: kept from a trusted hop, else
    ///   set to this hop's scheme and host;
    /// - `Forwarded` (RFC 7239): a trusted hop's elements kept, an untrusted client's
    ///   dropped, then this hop's `for`, `proto` and `host` appended.
    pub(crate) fn apply(self, headers: &mut HeaderMap, hop: &Hop<'_>) {
        let trusted = self.trusted_hops > 0;
        let mut chain = String::with_capacity(64);
        append_values(&mut chain, headers, &X_FORWARDED_FOR);
        if !chain.is_empty() {
            chain.push_str(", ");
        }
        push_ip(&mut chain, hop.peer.ip());
        insert_text(headers, X_FORWARDED_FOR, chain);
        if !trusted || !headers.contains_key(&X_FORWARDED_PROTO) {
            headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(hop.scheme));
        }
        if (!trusted || !headers.contains_key(&X_FORWARDED_HOST)) && !hop.host.is_empty() {
            match hop.host_value {
                Some(value) => {
                    headers.insert(X_FORWARDED_HOST, value.clone());
                }
                None => insert_text(headers, X_FORWARDED_HOST, hop.host.to_owned()),
            }
        }
        let mut elements = String::with_capacity(64);
        if trusted {
            append_values(&mut elements, headers, &header::FORWARDED);
            if !elements.is_empty() {
                elements.push_str(", ");
            }
        }
        elements.push_str("for=");
        match hop.peer.ip() {
            ip @ IpAddr::V4(_) => push_ip(&mut elements, ip),
            ip @ IpAddr::V6(_) => {
                elements.push_str("\"[");
                push_ip(&mut elements, ip);
                elements.push_str("]\"");
            }
        }
        elements.push_str(";proto=");
        elements.push_str(hop.scheme);
        if !hop.host.is_empty() && hop.host.bytes().all(|b| b.is_ascii_graphic() && b != b'"') {
            elements.push_str(";host=\"");
            elements.push_str(hop.host);
            elements.push('"');
        }
        insert_text(headers, header::FORWARDED, elements);
    }

    /// The client's address as far as it can be believed: the peer, or with trusted
    /// hops, the `X-Forwarded-For` entry that many places from the right.
    pub(crate) fn client(self, headers: &HeaderMap, peer: SocketAddr) -> IpAddr {
        if self.trusted_hops == 0 {
            return peer.ip();
        }
        let chain: Vec<String> = joined(headers, &X_FORWARDED_FOR)
            .iter()
            .flat_map(|value| value.split(','))
            .map(|entry| entry.trim().to_owned())
            .collect();
        let index = chain.len().checked_sub(self.trusted_hops as usize);
        index
            .and_then(|i| chain.get(i))
            .and_then(|entry| entry.parse().ok())
            .unwrap_or(peer.ip())
    }
}

/// Every value of `name`, as text (values that are not text are dropped).
fn joined(headers: &HeaderMap, name: &HeaderName) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .map(str::to_owned)
        .collect()
}

/// Appends every text value of `name` to `text`, joined by `", "`.
fn append_values(text: &mut String, headers: &HeaderMap, name: &HeaderName) {
    for value in headers.get_all(name) {
        if let Ok(value) = value.to_str() {
            if !text.is_empty() {
                text.push_str(", ");
            }
            text.push_str(value);
        }
    }
}

/// Appends `ip` in its usual text form; IPv4, the common case, without the
/// formatting machinery (this runs for every forwarded request).
pub(crate) fn push_ip(text: &mut String, ip: IpAddr) {
    match ip {
        IpAddr::V4(ip) => {
            for (i, octet) in ip.octets().into_iter().enumerate() {
                if i > 0 {
                    text.push('.');
                }
                if octet >= 100 {
                    text.push(char::from(b'0' + octet / 100));
                }
                if octet >= 10 {
                    text.push(char::from(b'0' + octet / 10 % 10));
                }
                text.push(char::from(b'0' + octet % 10));
            }
        }
        IpAddr::V6(ip) => {
            use std::fmt::Write as _;
            let _ = write!(text, "{ip}");
        }
    }
}

/// Inserts `text` as the value of `name` (moved into the value, not copied), unless
/// it is not a valid header value.
fn insert_text(headers: &mut HeaderMap, name: HeaderName, text: String) {
    if let Ok(value) = HeaderValue::from_maybe_shared(Bytes::from(text)) {
        headers.insert(name, value);
    }
}
