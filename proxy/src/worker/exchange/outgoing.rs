//! The request as it goes to a backend: each attempt's request built from the
//! routed and rewritten head the pipeline planned ([`UpstreamHead`]), in the
//! form the backend's protocol takes, the backend's own header filter applied.
//!
//! An HTTP/1.1 attempt is written from the head's parts: its target is not parsed
//! into a `Uri` and its forwarding fields stay field lines. They go into the header
//! map only when something reads or edits the map (a backend header filter, hyper
//! for an h2c backend or an upgrade).

use culvert_router::outcome::apply_header_modifier;
use culvert_router::rule::Backend;
use http::header;
use http::{Request, Uri, Version};

use crate::pipeline::UpstreamHead;
use crate::worker::upstream::{Http1Head, Protocol, RequestBody, UpstreamRequest, is_origin_form};

impl UpstreamHead {
    /// Moves the added fields into the header map.
    fn insert_added(&mut self) {
        std::mem::take(&mut self.added).insert_into(&mut self.headers);
    }

    /// Applies `backend`'s request header filter, if it has one.
    fn filter_for(&mut self, backend: &Backend) {
        if let Some(modifier) = &backend.request_headers {
            self.insert_added();
            apply_header_modifier(modifier, &mut self.headers);
        }
    }

    /// The head as an `http::Request` for hyper, with every field in its map.
    fn into_request(
        mut self,
        uri: Uri,
        version: Version,
        body: RequestBody,
    ) -> Request<RequestBody> {
        self.insert_added();
        let mut request = Request::new(body);
        *request.method_mut() = self.method;
        *request.uri_mut() = uri;
        *request.version_mut() = version;
        *request.headers_mut() = self.headers;
        request
    }
}

/// The request for one attempt to `backend`: the head with the backend's own header
/// filter, origin-form for HTTP/1.1, absolute-form for HTTP/2. `None` when the
/// target (or, for HTTP/2, the authority) does not form a valid request target:
/// answered 500, never sent as something else.
pub(super) fn build_request(
    mut head: UpstreamHead,
    backend: &Backend,
    body: RequestBody,
    protocol: Protocol,
) -> Option<UpstreamRequest> {
    match protocol {
        Protocol::Http1 => {
            head.filter_for(backend);
            if !is_origin_form(&head.target) {
                return None;
            }
            let UpstreamHead {
                method,
                target,
                headers,
                added,
                ..
            } = head;
            let head = Http1Head {
                method,
                target,
                headers,
                added,
            };
            Some(UpstreamRequest::Http1(head, body))
        }
        Protocol::H2c => {
            // The forwarded `Host` (as the route's filters left it) is the authority.
            let authority = head
                .headers
                .get(header::HOST)
                .and_then(|value| value.to_str().ok())
                .unwrap_or(&head.host);
            let uri = format!("http://{authority}{}", head.target)
                .parse::<Uri>()
                .ok()?;
            head.filter_for(backend);
            head.headers.remove(header::HOST);
            Some(UpstreamRequest::H2c(head.into_request(
                uri,
                Version::HTTP_2,
                body,
            )))
        }
    }
}

/// The request that asks `backend` for an upgrade, for hyper (the connection is
/// handed over once it answers `101`); `None` as for [`build_request`].
pub(super) fn upgrade_request(
    mut head: UpstreamHead,
    backend: &Backend,
    body: RequestBody,
) -> Option<Request<RequestBody>> {
    head.filter_for(backend);
    if !is_origin_form(&head.target) {
        return None;
    }
    let uri = Uri::from(head.target.clone());
    Some(head.into_request(uri, Version::HTTP_11, body))
}
