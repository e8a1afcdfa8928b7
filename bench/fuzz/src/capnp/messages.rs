//! Data-stream messages: the preamble, `ConnectRequest` / `ConnectResponse`, and the
//! HTTP heads their metadata carries.
//!
//! A decoder reads exactly one message: a complete answer consumed no more than the
//! buffer held and decodes the same from those bytes alone; an incomplete one asks
//! for more than it had. A decoded message encodes to bytes that decode to it again,
//! with and without the preamble. The head a message's metadata describes converts
//! back to metadata that describes the same head (the edge's and the connector's
//! conversions agree).

use culvert_connector::proto::metadata::{
    http_response, request_body_expected, request_metadata, request_parts, response_parts,
};
use culvert_connector::proto::preamble::{
    DATA_PREAMBLE_LEN, decode_preamble, decode_request_head, decode_response_head,
    encode_request_head, encode_response_head,
};
use culvert_connector::proto::{ConnectRequest, ConnectResponse, Decoded, StreamKind};
use http::header::{HOST, TRANSFER_ENCODING};

/// Checks a `Decoded` answer against the buffer of `len` bytes it came from; the
/// value and its length when complete.
fn complete<T>(decoded: Decoded<T>, len: usize) -> Option<(T, usize)> {
    match decoded {
        Decoded::Complete { value, consumed } => {
            assert!(consumed <= len, "consumed {consumed} of {len} bytes");
            Some((value, consumed))
        }
        Decoded::Incomplete { needed } => {
            assert!(needed > len, "asked for {needed} bytes with {len} at hand");
            None
        }
    }
}

/// `ConnectRequest::decode`, its encoding, and the request head it describes.
pub(super) fn connect_request(payload: &[u8]) {
    let Ok(decoded) = ConnectRequest::decode(payload) else {
        return;
    };
    let Some((request, consumed)) = complete(decoded, payload.len()) else {
        return;
    };
    let alone = ConnectRequest::decode(&payload[..consumed]).ok();
    assert_eq!(
        alone,
        Some(Decoded::Complete {
            value: request.clone(),
            consumed
        }),
        "the message's own bytes decode otherwise"
    );
    let encoded = request.encode();
    assert_eq!(
        ConnectRequest::decode(&encoded).ok(),
        Some(Decoded::Complete {
            value: request.clone(),
            consumed: encoded.len()
        }),
        "a decoded request re-encodes to something else"
    );
    let head = encode_request_head(&request);
    assert_eq!(
        decode_request_head(&head).ok(),
        Some(Decoded::Complete {
            value: request.clone(),
            consumed: head.len()
        }),
        "a request behind its preamble decodes otherwise"
    );
    request_body_expected(&request);
    let Ok(parts) = request_parts(&request) else {
        return;
    };
    // The edge's metadata for that head gives the connector the same head back.
    let again = ConnectRequest {
        metadata: request_metadata(&parts),
        ..request
    };
    let Ok(again) = request_parts(&again) else {
        panic!("metadata made from a request head is refused: {again:?}");
    };
    assert_eq!(again.method, parts.method, "method");
    assert_eq!(again.uri, parts.uri, "uri");
    let mut headers = parts.headers.clone();
    let mut headers_again = again.headers.clone();
    headers.remove(HOST);
    headers_again.remove(HOST);
    assert_eq!(headers_again, headers, "request fields");
}

/// `ConnectResponse::decode`, its encoding, and the response head it describes.
pub(super) fn connect_response(payload: &[u8]) {
    let Ok(decoded) = ConnectResponse::decode(payload) else {
        return;
    };
    let Some((response, consumed)) = complete(decoded, payload.len()) else {
        return;
    };
    let alone = ConnectResponse::decode(&payload[..consumed]).ok();
    assert_eq!(
        alone,
        Some(Decoded::Complete {
            value: response.clone(),
            consumed
        }),
        "the message's own bytes decode otherwise"
    );
    let encoded = response.encode();
    assert_eq!(
        ConnectResponse::decode(&encoded).ok(),
        Some(Decoded::Complete {
            value: response.clone(),
            consumed: encoded.len()
        }),
        "a decoded response re-encodes to something else"
    );
    let head = encode_response_head(&response);
    assert_eq!(
        decode_response_head(&head).ok(),
        Some(Decoded::Complete {
            value: response.clone(),
            consumed: head.len()
        }),
        "a response behind its preamble decodes otherwise"
    );
    let Ok(parts) = response_parts(&response) else {
        return;
    };
    // The connector's metadata for that head gives the edge the same head back
    // (Transfer-Encoding stays behind: the body on a stream is always raw).
    let again = http_response(parts.status, &parts.headers);
    let Ok(again) = response_parts(&again) else {
        panic!("metadata made from a response head is refused: {again:?}");
    };
    assert_eq!(again.status, parts.status, "status");
    let mut headers = parts.headers.clone();
    headers.remove(TRANSFER_ENCODING);
    assert_eq!(again.headers, headers, "response fields");
}

/// The preamble, and the data-stream heads that start with one.
pub(super) fn preamble(payload: &[u8]) {
    let len = payload.len();
    if let Ok(decoded) = decode_preamble(payload) {
        if let Some((kind, consumed)) = complete(decoded, len) {
            let expected = match kind {
                StreamKind::Data { .. } => DATA_PREAMBLE_LEN,
                StreamKind::Rpc => 6,
            };
            assert_eq!(consumed, expected, "{kind:?} preamble length");
        }
    }
    if let Ok(decoded) = decode_request_head(payload) {
        if let Some((request, consumed)) = complete(decoded, len) {
            let alone = ConnectRequest::decode(&payload[DATA_PREAMBLE_LEN..consumed]).ok();
            assert_eq!(
                alone,
                Some(Decoded::Complete {
                    value: request,
                    consumed: consumed - DATA_PREAMBLE_LEN
                }),
                "a request head is its preamble and one message"
            );
        }
    }
    if let Ok(decoded) = decode_response_head(payload) {
        if let Some((response, consumed)) = complete(decoded, len) {
            let alone = ConnectResponse::decode(&payload[DATA_PREAMBLE_LEN..consumed]).ok();
            assert_eq!(
                alone,
                Some(Decoded::Complete {
                    value: response,
                    consumed: consumed - DATA_PREAMBLE_LEN
                }),
                "a response head is its preamble and one message"
            );
        }
    }
}
