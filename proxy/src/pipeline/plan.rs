//! The decision for one request: route it on the snapshot, then either answer it
//! here (400, 404, 421, a redirect, a CORS preflight) or say how it goes to the
//! backend: the rewritten head with its forwarding fields, the rule whose backends
//! and retries apply, and what the response gets on its way back.
//!
//! The order follows the Gateway API: a connection's SNI is checked against the
//! request's host (421), then the route is found (404), then the rule's CORS
//! preflight and redirect answer locally, and only a forwarded request is rewritten
//! (hop-by-hop fields dropped, `Host` fixed to the routed host, header and URL
//! rewrite filters, forwarding fields).

use std::borrow::Cow;

use culvert_router::outcome::{
    RedirectRequest, apply_header_modifier, is_preflight, preflight_response, redirect_location,
    response_headers as cors_response_headers, rewrite_path,
};
use culvert_router::path::normalize_path;
use culvert_router::{RequestView, RouteId, RouteKind, RouteTable, RuleId};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::request::Parts;
use http::uri::PathAndQuery;
use http::{Method, StatusCode, Version};

use super::connection::{ClientCertificate, ConnectionInfo, Transport};
use super::fields::{
    Forwarding, Hop, RoutingHost, request_host, strip_hop_by_hop, upgrade_protocol,
};
use crate::tls::listener_for;
use culvert_wire::{FieldLines, FieldsAs};

/// A request's plan, with what the access log and metrics note of its routing.
#[derive(Debug)]
pub(crate) struct Planned {
    pub(crate) routed: Routed,
    pub(crate) plan: Plan,
}

/// How far a request got in routing.
#[derive(Debug, Default)]
pub(crate) struct Routed {
    /// The host the request was routed on (empty when it named none, or had no
    /// valid one).
    pub(crate) host: RoutingHost,
    /// The route that matched, if one did.
    pub(crate) route: Option<RouteId>,
}

/// What to do with a request.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "made once per request and taken apart at once; boxing would allocate per request"
)]
pub(crate) enum Plan {
    /// Answer it here.
    Answer(LocalAnswer),
    /// Send it to one of the rule's backends.
    Forward(Forward),
}

/// An answer given without asking a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LocalAnswer {
    /// No one valid host to route on (none on HTTP/1.1, two, not `host[:port]`,
    /// userinfo): 400, counted as a malformed request.
    BadHost,
    /// A path that does not normalize, or a target that cannot be written: 400.
    BadTarget,
    /// The TLS connection's SNI chose another listener than the request's host
    /// (RFC 9110 §15.5.20): 421.
    Misdirected,
    /// No route matches: 404.
    NoRoute,
    /// A CORS preflight answered by the rule's policy: 204 with these fields.
    Preflight(HeaderMap),
    /// The rule's redirect, with its `Location` (none if it is no valid field).
    Redirect {
        status: StatusCode,
        location: Option<HeaderValue>,
    },
    /// The rule's path rewrite made a target that cannot be sent: 500.
    BadRewrite,
}

impl LocalAnswer {
    /// The status the client is answered with.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::BadHost | Self::BadTarget => StatusCode::BAD_REQUEST,
            Self::Misdirected => StatusCode::MISDIRECTED_REQUEST,
            Self::NoRoute => StatusCode::NOT_FOUND,
            Self::Preflight(_) => StatusCode::NO_CONTENT,
            Self::Redirect { status, .. } => *status,
            Self::BadRewrite => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The fields the answer carries.
    pub(crate) fn into_headers(self) -> HeaderMap {
        match self {
            Self::Preflight(headers) => headers,
            Self::Redirect {
                location: Some(location),
                ..
            } => {
                let mut headers = HeaderMap::with_capacity(1);
                headers.insert(header::LOCATION, location);
                headers
            }
            _ => HeaderMap::new(),
        }
    }
}

/// A request to forward.
#[derive(Debug)]
pub(crate) struct Forward {
    /// The rule whose backends, retries, timeouts and filters apply.
    pub(crate) rule: RuleId,
    pub(crate) head: UpstreamHead,
    /// The protocol an upgrade asks for (only for a client side that can be handed
    /// over: an HTTP/1.1 connection or a tunnel stream).
    pub(crate) upgrade: Option<HeaderValue>,
    /// CORS fields to add to the response.
    pub(crate) cors_headers: Option<HeaderMap>,
    /// The route is a GRPCRoute.
    pub(crate) grpc: bool,
}

/// The upstream request, minus its body, so each attempt can be built from it.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamHead {
    pub(crate) method: Method,
    /// Origin-form target (path and query).
    pub(crate) target: PathAndQuery,
    /// The host the request was routed on: the authority for HTTP/2 upstreams when
    /// the forwarded fields carry no `Host`.
    pub(crate) host: RoutingHost,
    pub(crate) headers: HeaderMap,
    /// The forwarding fields, in place of `headers`' own of those names.
    pub(crate) added: FieldLines,
    /// Where an HTTP/1.1 backend's response keeps its fields.
    pub(crate) response_fields: FieldsAs,
}

impl UpstreamHead {
    /// The head for one attempt: a copy while another attempt may follow, else the
    /// head itself (this one is left empty).
    pub(crate) fn for_attempt(&mut self, last: bool) -> Self {
        if !last {
            return self.clone();
        }
        let spent = Self {
            method: Method::GET,
            target: PathAndQuery::from_static("/"),
            host: RoutingHost::default(),
            headers: HeaderMap::new(),
            added: FieldLines::default(),
            response_fields: self.response_fields,
        };
        std::mem::replace(self, spent)
    }
}

/// `X-Forwarded-Client-Cert`, the client certificate's identity as backends see it
/// (Envoy's field, `Hash=` element only).
static X_FORWARDED_CLIENT_CERT: HeaderName = HeaderName::from_static("x-forwarded-client-cert");

/// On a listener that forwards client identities: what the client sent in
/// `X-Forwarded-Client-Cert` goes, and a verified certificate's hash takes its place.
fn forward_client_certificate(client: &ClientCertificate, headers: &mut HeaderMap) {
    if !client.forward {
        return;
    }
    headers.remove(&X_FORWARDED_CLIENT_CERT);
    if let Some(identity) = client.verified() {
        if let Ok(value) = HeaderValue::try_from(format!("Hash={}", identity.hash)) {
            headers.insert(X_FORWARDED_CLIENT_CERT.clone(), value);
        }
    }
}

/// Plans the request whose head is `parts` on the route `table`, as it arrived on
/// `connection`. `upgradable` says whether the client side can be handed over, so
/// an upgrade is forwarded as one.
pub(crate) fn plan(
    parts: Parts,
    table: &RouteTable,
    connection: &ConnectionInfo,
    forwarding: Forwarding,
    upgradable: bool,
) -> Planned {
    let mut routed = Routed::default();
    let plan = match route_and_rewrite(
        parts,
        table,
        connection,
        forwarding,
        upgradable,
        &mut routed,
    ) {
        Ok(forward) => Plan::Forward(forward),
        Err(answer) => Plan::Answer(answer),
    };
    Planned { routed, plan }
}

/// [`plan`]'s steps, noting host and route in `routed` as they are learnt.
fn route_and_rewrite(
    parts: Parts,
    table: &RouteTable,
    connection: &ConnectionInfo,
    forwarding: Forwarding,
    upgradable: bool,
    routed: &mut Routed,
) -> Result<Forward, LocalAnswer> {
    let upgrade = if upgradable {
        upgrade_protocol(&parts.headers, parts.version)
    } else {
        None
    };
    let routing_host =
        request_host(&parts.headers, &parts.uri, parts.version).ok_or(LocalAnswer::BadHost)?;
    routed.host = routing_host.clone();
    let host: &str = &routing_host;
    let query = parts.uri.query();
    let path = normalize_path(parts.uri.path()).map_err(|_| LocalAnswer::BadTarget)?;
    // The target as sent (shared, not copied) when its path is normal already.
    let target = match (&path, parts.uri.path_and_query()) {
        (Cow::Borrowed(_), Some(sent)) if sent.path() == path => sent.clone(),
        _ => with_query(&path, query).ok_or(LocalAnswer::BadTarget)?,
    };
    let view = RequestView {
        port: connection.local.port(),
        local_ip: connection.local_ip(),
        host,
        path: target.as_str(),
        method: parts.method.as_str(),
        headers: &parts.headers,
    };
    // A connection whose SNI chose another listener than this request's Host must
    // not be used for it, whether or not a route of the Host's listener would match.
    if let Transport::Tls { sni: Some(sni), .. } = &connection.transport {
        let by_sni = listener_for(table, connection.bound, sni);
        let by_host = listener_for(table, connection.bound, host);
        if by_host.is_some() && by_host != by_sni {
            return Err(LocalAnswer::Misdirected);
        }
    }
    let found = table.route(&view).map_err(|_| LocalAnswer::NoRoute)?;
    routed.route = Some(found.route);
    let filters = found.rule.filters();
    let prefix_len = found.matched_prefix_len.unwrap_or(0);
    if let Some(cors) = &filters.cors {
        if is_preflight(&parts.method, &parts.headers) {
            return Err(LocalAnswer::Preflight(preflight_response(
                cors,
                &parts.headers,
            )));
        }
    }
    if let Some(redirect) = &filters.redirect {
        let location = redirect_location(
            redirect,
            &RedirectRequest {
                scheme: connection.scheme(),
                host,
                listener_port: connection.local.port(),
                path: &path,
                query,
                matched_prefix_len: prefix_len,
            },
        );
        return Err(LocalAnswer::Redirect {
            status: StatusCode::from_u16(redirect.status).unwrap_or(StatusCode::FOUND),
            location: HeaderValue::try_from(location).ok(),
        });
    }
    let cors_headers = filters
        .cors
        .as_ref()
        .map(|cors| cors_response_headers(cors, &parts.headers));

    let mut headers = parts.headers;
    strip_hop_by_hop(&mut headers);
    // `Expect: 100-continue` is answered by the client side when the body is first
    // read (as nginx and Envoy do): the backend never sees it, so a 100 it sends
    // anyway is its own and is relayed like any other 1xx.
    if headers
        .get(header::EXPECT)
        .is_some_and(|expect| expect.as_bytes().eq_ignore_ascii_case(b"100-continue"))
    {
        headers.remove(header::EXPECT);
    }
    // The backend sees exactly the host the request was routed on (one value, the
    // absolute-form authority when there was one), before any filter edits. Routed
    // on the one `Host` value the fields already say so; an authority in the target
    // replaces `Host`, and an HTTP/1.0 request that named no host gets the address
    // it was sent to (an HTTP/1.1 backend requires a `Host`).
    if parts.uri.authority().is_some() || !headers.contains_key(header::HOST) {
        let host = if routing_host.is_empty() {
            HeaderValue::try_from(connection.local.to_string()).ok()
        } else {
            Some(routing_host.value().clone())
        };
        if let Some(host) = host {
            headers.insert(header::HOST, host);
        }
    }
    if let Transport::Tls { client, .. } = &connection.transport {
        forward_client_certificate(client, &mut headers);
    }
    if let Some(modifier) = &filters.request_headers {
        apply_header_modifier(modifier, &mut headers);
    }
    let mut upstream_target = target;
    if let Some(rewrite) = &filters.rewrite {
        if let Some(hostname) = &rewrite.hostname {
            if let Ok(value) = HeaderValue::from_str(hostname) {
                headers.insert(header::HOST, value);
            }
        }
        if let Some(modifier) = &rewrite.path {
            let rewritten = rewrite_path(modifier, &path, prefix_len);
            upstream_target = with_query(&rewritten, query).ok_or(LocalAnswer::BadRewrite)?;
        }
    }
    let added = forwarding.fields(
        &headers,
        &Hop {
            peer: &connection.peer_text,
            scheme: connection.scheme(),
            host,
        },
    );
    // Fields go on as they came only to an HTTP/1.x client and when nothing here
    // changes them; anything else would parse them twice.
    let response_fields = if parts.version <= Version::HTTP_11
        && !connection.tunnel
        && filters.response_headers.is_none()
        && cors_headers.is_none()
    {
        FieldsAs::Raw
    } else {
        FieldsAs::Map
    };
    let grpc = table
        .route_info(found.route)
        .is_some_and(|route| route.kind == RouteKind::Grpc);
    Ok(Forward {
        rule: found.rule_id,
        head: UpstreamHead {
            method: parts.method,
            target: upstream_target,
            host: routing_host.clone(),
            headers,
            added,
            response_fields,
        },
        upgrade,
        cors_headers,
        grpc,
    })
}

/// `path`, with `query` when there is one, as a request target; `None` when that is
/// not one (a character a target cannot carry).
fn with_query(path: &str, query: Option<&str>) -> Option<PathAndQuery> {
    let target = match query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    PathAndQuery::try_from(target).ok()
}
