//! Header conventions of the tunnel: the HTTP/2 transport's serialized response
//! headers, and header names inside metadata keys.
//!
//! Serialized headers that deserialize serialize back to the same headers, and a
//! response head the connector writes over HTTP/2 reads back, on the edge's side, as
//! the origin's fields (less the transport's own and `Transfer-Encoding`). Go's
//! canonical header name is a fixed point and keeps the name's length.

use culvert_connector::proto::http2::{
    RESPONSE_HEADERS, RESPONSE_META, ResponseHead, StreamType, TRACING_HEADER, deserialize_headers,
    is_control_response_header, is_websocket_client_header, response_head, serialize_headers,
};
use culvert_connector::proto::metadata::{canonical_header_name, header_name_of};
use http::StatusCode;
use http::header::{HeaderMap, HeaderName, HeaderValue, TRANSFER_ENCODING};

/// The input as a serialized header set, and as the header that carries one.
pub(super) fn serialized(payload: &[u8]) {
    let text = String::from_utf8_lossy(payload);
    if let Ok(headers) = deserialize_headers(&text) {
        let again = deserialize_headers(&serialize_headers(&headers));
        assert!(
            again.as_ref().is_ok_and(|again| *again == headers),
            "serialized headers read back as {again:?}, not {headers:?}"
        );
        transport_round_trip(&headers);
    }
    if let Ok(value) = HeaderValue::from_bytes(payload) {
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static(RESPONSE_HEADERS), value.clone());
        headers.insert(HeaderName::from_static(RESPONSE_META), value.clone());
        headers.insert(HeaderName::from_static(TRACING_HEADER), value);
        StreamType::of(&headers);
        // A malformed serialized set is an error, not a panic.
        let _ = ResponseHead::decode(StatusCode::OK, &headers);
    }
}

/// The connector writes `origin`'s fields as an HTTP/2 response head; the edge
/// decodes the origin's fields from it.
fn transport_round_trip(origin: &HeaderMap) {
    for status in [StatusCode::OK, StatusCode::SWITCHING_PROTOCOLS] {
        let head = response_head(status, origin);
        let decoded = ResponseHead::decode(head.status(), head.headers());
        let Ok(decoded) = decoded else {
            panic!("the edge cannot read the connector's head {head:?}: {decoded:?}");
        };
        let mut expected = HeaderMap::new();
        for (name, value) in origin {
            let name_text = name.as_str();
            let serialized =
                !is_control_response_header(name_text) || is_websocket_client_header(name_text);
            if (serialized || name_text == TRACING_HEADER) && *name != TRANSFER_ENCODING {
                expected.append(name.clone(), value.clone());
            }
        }
        assert_eq!(decoded.headers, expected, "{status}: origin fields");
        assert!(!decoded.from_connector, "{status}: an origin's answer");
        let sent = if status == StatusCode::SWITCHING_PROTOCOLS {
            StatusCode::OK
        } else {
            status
        };
        assert_eq!(decoded.status, sent);
    }
}

/// The input as a metadata key and as a header name.
pub(super) fn metadata_keys(payload: &[u8]) {
    let text = String::from_utf8_lossy(payload);
    let _ = header_name_of(&text);
    let canonical = canonical_header_name(&text);
    assert_eq!(canonical.len(), text.len(), "canonical name length");
    assert_eq!(
        canonical_header_name(&canonical),
        canonical,
        "canonical name is not a fixed point"
    );
}
