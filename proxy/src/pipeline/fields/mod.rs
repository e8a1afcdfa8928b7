//! Header rules of the proxy hop: which `Host` to route on, which headers describe one
//! hop and are never forwarded, how upgrades are recognised, and how `X-Forwarded-*`
//! and `Forwarded` are written (the way nginx and Envoy users expect).
//!
//! Pure functions over `http` types; no IO.

use std::net::{IpAddr, SocketAddr};

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Uri, Version};

use culvert_router::uri_bytes::{is_sub_delim, is_unreserved};
use culvert_wire::FieldLines;

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

/// The host a request is routed on: visible ASCII (or empty), sharing the bytes of
/// the `Host` field it came from, so keeping it (for the access log, for the
/// backend) copies nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoutingHost(HeaderValue);

impl RoutingHost {
    /// The host as a header value.
    pub(crate) fn value(&self) -> &HeaderValue {
        &self.0
    }
}

impl Default for RoutingHost {
    fn default() -> Self {
        Self(HeaderValue::from_static(""))
    }
}

impl std::ops::Deref for RoutingHost {
    type Target = str;

    fn deref(&self) -> &str {
        // Visible ASCII, checked when it was made.
        self.0.to_str().unwrap_or_default()
    }
}

/// The host to route on, or `None` for a request that must be refused (400): the
/// authority of an absolute-form target (or HTTP/2 `:authority`) wins over `Host`
/// (RFC 9112 §3.2.2); otherwise exactly one `Host` is required, except on
/// HTTP/1.0, where it may be absent (empty host). Either must be `host[:port]`
/// (RFC 9110 §7.2): userinfo (`user@host`), a path or a port that is not digits is
/// refused, never routed on or forwarded.
pub(crate) fn request_host(
    headers: &HeaderMap,
    uri: &Uri,
    version: Version,
) -> Option<RoutingHost> {
    let mut values = headers.get_all(header::HOST).iter();
    let first = values.next();
    if values.next().is_some() {
        return None;
    }
    if let Some(authority) = uri.authority() {
        let authority = authority.as_str();
        if !is_host_and_port(authority.as_bytes()) {
            return None;
        }
        return HeaderValue::from_str(authority).ok().map(RoutingHost);
    }
    match first {
        Some(value) => is_host_and_port(value.as_bytes()).then(|| RoutingHost(value.clone())),
        None if version == Version::HTTP_10 => Some(RoutingHost::default()),
        None => None,
    }
}

/// Whether `value` is `uri-host [":" port]` (RFC 3986 §3.2.2–3.2.3): a bracketed
/// IP literal or a reg-name of unreserved, sub-delim and `%` bytes, then optionally
/// a colon and digits. Empty is not a host to route on.
fn is_host_and_port(value: &[u8]) -> bool {
    let (host, port) = match value.strip_prefix(b"[") {
        Some(literal) => {
            let Some(end) = literal.iter().position(|&b| b == b']') else {
                return false;
            };
            let (address, rest) = literal.split_at(end);
            let address_ok = !address.is_empty()
                && address
                    .iter()
                    .all(|&b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.' | b'v' | b'V'));
            if !address_ok {
                return false;
            }
            return match &rest[1..] {
                [] => true,
                [b':', port @ ..] => port.iter().all(u8::is_ascii_digit),
                _ => false,
            };
        }
        None => match value.iter().position(|&b| b == b':') {
            Some(colon) => (&value[..colon], &value[colon + 1..]),
            None => (value, &b""[..]),
        },
    };
    let reg_name_byte = |b: &u8| is_unreserved(*b) || is_sub_delim(*b) || *b == b'%';
    !host.is_empty() && host.iter().all(reg_name_byte) && port.iter().all(u8::is_ascii_digit)
}

/// The protocol an HTTP/1.1 request asks to upgrade to (`Upgrade` named in
/// `Connection`), such as `websocket`. `h2c` is not one to pass on: it is about
/// this connection alone, and is taken here or not at all (`super::h2c`).
pub(crate) fn upgrade_protocol(headers: &HeaderMap, version: Version) -> Option<HeaderValue> {
    if version != Version::HTTP_11 {
        return None;
    }
    let upgrade = headers.get(header::UPGRADE)?;
    let only_h2c =
        field_tokens(headers, &header::UPGRADE).all(|token| token.eq_ignore_ascii_case("h2c"));
    (!only_h2c && has_token(headers, &header::CONNECTION, "upgrade")).then(|| upgrade.clone())
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
/// Most messages carry none of them, and many only `Connection: keep-alive` or
/// `close`: one pass over the names decides what there is to do before any lookup
/// by name, and nothing is allocated unless `Connection` names other fields.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let mut present = [false; HOP_BY_HOP.len()];
    let mut te = false;
    for name in headers.keys() {
        if *name == header::TE {
            te = true;
        } else if let Some(at) = HOP_BY_HOP.iter().position(|hop| *hop == name.as_str()) {
            present[at] = true;
        }
    }
    if !te && !present.contains(&true) {
        return;
    }
    // Tokens `Connection` names (other than the usual `close` and `keep-alive`,
    // which name no header).
    let named: Vec<HeaderName> = field_tokens(headers, &header::CONNECTION)
        .filter(|token| {
            // `Host` is end to end whatever `Connection` says: the backend always
            // gets the host the request was routed on.
            !token.eq_ignore_ascii_case("close")
                && !token.eq_ignore_ascii_case("keep-alive")
                && !token.eq_ignore_ascii_case("host")
        })
        .filter_map(|token| HeaderName::from_bytes(token.as_bytes()).ok())
        .collect();
    let wants_trailers = te && has_token(headers, &header::TE, "trailers");
    for name in &named {
        headers.remove(name);
    }
    for (name, present) in HOP_BY_HOP.iter().zip(present) {
        if present {
            headers.remove(*name);
        }
    }
    if te {
        headers.remove(header::TE);
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
    /// The peer's address, as text.
    pub(crate) peer: &'a IpText,
    /// `http` or `https`.
    pub(crate) scheme: &'static str,
    /// The host the request was routed on.
    pub(crate) host: &'a str,
}

impl Forwarding {
    /// The forwarding fields for `hop`, given the request's `headers`, as field
    /// lines that replace the request's own fields of those names:
    /// - `X-Forwarded-For`: the peer appended to what came (joined into one value);
    /// - `X-Forwarded-Proto` and `X-Forwarded-Host`: kept from a trusted hop, else
    ///   set to this hop's scheme and host;
    /// - `Forwarded` (RFC 7239): a trusted hop's elements kept, an untrusted client's
    ///   dropped, then this hop's `for`, `proto` and `host` appended.
    pub(crate) fn fields(self, headers: &HeaderMap, hop: &Hop<'_>) -> FieldLines {
        let trusted = self.trusted_hops > 0;
        let mut lines = FieldLines::with_capacity(192);
        lines.push(&X_FORWARDED_FOR, |out| {
            if append_values(out, headers, &X_FORWARDED_FOR) {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(hop.peer.as_bytes());
        });
        if !trusted || !headers.contains_key(&X_FORWARDED_PROTO) {
            lines.push(&X_FORWARDED_PROTO, |out| {
                out.extend_from_slice(hop.scheme.as_bytes());
            });
        }
        if (!trusted || !headers.contains_key(&X_FORWARDED_HOST)) && !hop.host.is_empty() {
            lines.push(&X_FORWARDED_HOST, |out| {
                out.extend_from_slice(hop.host.as_bytes());
            });
        }
        lines.push(&header::FORWARDED, |out| {
            if trusted && append_values(out, headers, &header::FORWARDED) {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(b"for=");
            if hop.peer.is_ipv6() {
                out.extend_from_slice(b"\"[");
                out.extend_from_slice(hop.peer.as_bytes());
                out.extend_from_slice(b"]\"");
            } else {
                out.extend_from_slice(hop.peer.as_bytes());
            }
            out.extend_from_slice(b";proto=");
            out.extend_from_slice(hop.scheme.as_bytes());
            let host = hop.host.as_bytes();
            if !host.is_empty() && host.iter().all(|&b| b.is_ascii_graphic() && b != b'"') {
                out.extend_from_slice(b";host=\"");
                out.extend_from_slice(host);
                out.push(b'"');
            }
        });
        lines
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

/// Appends every text value of `name` to `out`, joined by `", "`; `true` when
/// there was one.
fn append_values(out: &mut Vec<u8>, headers: &HeaderMap, name: &HeaderName) -> bool {
    let mut any = false;
    for value in headers.get_all(name) {
        if value.to_str().is_ok() {
            if any {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(value.as_bytes());
            any = true;
        }
    }
    any
}

/// An IP address in its usual text form, written once per connection: it goes
/// into two forwarding fields of every request the connection carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IpText {
    len: u8,
    ipv6: bool,
    bytes: [u8; IpText::MAX],
}

impl IpText {
    /// The longest text of an address: an IPv6 one ending in IPv4 form.
    const MAX: usize = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255".len();

    pub(crate) fn new(ip: IpAddr) -> Self {
        let mut bytes = [0u8; Self::MAX];
        let len = match ip {
            // IPv4, the common case, without the formatting machinery.
            IpAddr::V4(ip) => {
                let mut len = 0;
                for (i, octet) in ip.octets().into_iter().enumerate() {
                    if i > 0 {
                        bytes[len] = b'.';
                        len += 1;
                    }
                    if octet >= 100 {
                        bytes[len] = b'0' + octet / 100;
                        len += 1;
                    }
                    if octet >= 10 {
                        bytes[len] = b'0' + octet / 10 % 10;
                        len += 1;
                    }
                    bytes[len] = b'0' + octet % 10;
                    len += 1;
                }
                len
            }
            IpAddr::V6(ip) => {
                use std::io::Write as _;
                let mut rest = &mut bytes[..];
                // Cannot fail: `MAX` bytes hold the longest form.
                let _ = write!(rest, "{ip}");
                let left = rest.len();
                Self::MAX - left
            }
        };
        Self {
            len: len as u8,
            ipv6: ip.is_ipv6(),
            bytes,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub(crate) fn is_ipv6(&self) -> bool {
        self.ipv6
    }
}

#[cfg(test)]
mod tests;
