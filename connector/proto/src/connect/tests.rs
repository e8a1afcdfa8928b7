use proptest::prelude::*;

use super::*;

/// `ConnectResponse { error: "", metadata: [HttpStatus = 200] }`, derived by hand from
/// the PROTOCOL.md §4.2 layout (0 data words / 2 pointers; Metadata 0 / 2) and the encoder's
/// depth-first order:
/// * header: one segment (u32 0), 9 words (u32 9);
/// * w0 root: struct at w1, 0 data, 2 pointers -> `00000000 00000200` (LE bytes);
/// * w1 `error`: empty text is written as null;
/// * w2 `metadata`: list at w3 (offset 0), kind 1, size 7 (composite), 2 words
///   -> low 0x00000001, high 7 | 2 << 3 = 0x17;
/// * w3 tag: 1 element (bits 2..) = 4, 0 data, 2 pointers;
/// * w4 `key`: text at w6 (offset 1) -> low 1 | 1 << 2 = 5, high 2 | 11 << 3 = 0x5a;
/// * w5 `val`: text at w8 (offset 2) -> low 1 | 2 << 2 = 9, high 2 | 4 << 3 = 0x22;
/// * w6..w7 "HttpStatus\0", w8 "200\0".
const RESPONSE_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 9, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 2, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    1, 0, 0, 0, 0x17, 0, 0, 0, //
    4, 0, 0, 0, 0, 0, 2, 0, //
    5, 0, 0, 0, 0x5a, 0, 0, 0, //
    9, 0, 0, 0, 0x22, 0, 0, 0, //
    b'H', b't', b't', b'p', b'S', b't', b'a', b't', //
    b'u', b's', 0, 0, 0, 0, 0, 0, //
    b'2', b'0', b'0', 0, 0, 0, 0, 0,
];

/// `ConnectRequest { dest: "http://a", type: websocket, metadata: [HttpMethod = GET] }`
/// from the PROTOCOL.md §4.2 layout (1 data word / 2 pointers):
/// * header: one segment, 12 words;
/// * w0 root: struct at w1, 1 data word, 2 pointers -> high half 0x0002_0001;
/// * w1 data: `type` = 1 (websocket) as UInt16 at byte 0;
/// * w2 `dest`: text at w4 (offset 1), 9 bytes -> low 5, high 2 | 9 << 3 = 0x4a;
/// * w3 `metadata`: composite list at w6 (offset 2), 2 words -> low 9, high 0x17;
/// * w4..w5 "http://a\0";
/// * w6 tag: 1 element, 0 / 2; w7 key at w9 (offset 1, 11 bytes); w8 val at w11
///   (offset 2, 4 bytes);
/// * w9..w10 "HttpMethod\0", w11 "GET\0".
const REQUEST_GOLDEN: &[u8] = &[
    0, 0, 0, 0, 12, 0, 0, 0, //
    0, 0, 0, 0, 1, 0, 2, 0, //
    1, 0, 0, 0, 0, 0, 0, 0, //
    5, 0, 0, 0, 0x4a, 0, 0, 0, //
    9, 0, 0, 0, 0x17, 0, 0, 0, //
    b'h', b't', b't', b'p', b':', b'/', b'/', b'a', //
    0, 0, 0, 0, 0, 0, 0, 0, //
    4, 0, 0, 0, 0, 0, 2, 0, //
    5, 0, 0, 0, 0x5a, 0, 0, 0, //
    9, 0, 0, 0, 0x22, 0, 0, 0, //
    b'H', b't', b't', b'p', b'M', b'e', b't', b'h', //
    b'o', b'd', 0, 0, 0, 0, 0, 0, //
    b'G', b'E', b'T', 0, 0, 0, 0, 0,
];

fn golden_request() -> ConnectRequest {
    ConnectRequest {
        dest: "http://a".to_owned(),
        kind: ConnectionType::Websocket,
        metadata: vec![Metadata::new("HttpMethod", "GET")],
    }
}

fn golden_response() -> ConnectResponse {
    ConnectResponse {
        error: String::new(),
        metadata: vec![Metadata::new("HttpStatus", "200")],
    }
}

#[test]
fn response_matches_golden_bytes() {
    assert_eq!(golden_response().encode(), RESPONSE_GOLDEN);
    assert_eq!(
        ConnectResponse::decode(RESPONSE_GOLDEN).unwrap(),
        Decoded::Complete {
            value: golden_response(),
            consumed: RESPONSE_GOLDEN.len()
        }
    );
}

#[test]
fn request_matches_golden_bytes() {
    assert_eq!(golden_request().encode(), REQUEST_GOLDEN);
    assert_eq!(
        ConnectRequest::decode(REQUEST_GOLDEN).unwrap(),
        Decoded::Complete {
            value: golden_request(),
            consumed: REQUEST_GOLDEN.len()
        }
    );
}

#[test]
fn decoding_leaves_the_body_alone() {
    let mut buf = REQUEST_GOLDEN.to_vec();
    buf.extend_from_slice(b"POST body");
    let Decoded::Complete { consumed, .. } = ConnectRequest::decode(&buf).unwrap() else {
        panic!("expected a complete request");
    };
    assert_eq!(&buf[consumed..], b"POST body");
}

#[test]
fn connection_type_values_follow_the_schema() {
    assert_eq!(ConnectionType::Http.to_u16(), 0);
    assert_eq!(ConnectionType::Websocket.to_u16(), 1);
    assert_eq!(ConnectionType::Tcp.to_u16(), 2);
    assert_eq!(ConnectionType::from_u16(9), ConnectionType::Unknown(9));
}

#[test]
fn null_error_and_empty_error_are_success() {
    // A response whose `error` pointer is an explicit empty text ("\0"): w1 points at a
    // 1-byte list (count 1) at w3, w2 null.
    let buf: &[u8] = &[
        0, 0, 0, 0, 4, 0, 0, 0, //
        0, 0, 0, 0, 0, 0, 2, 0, //
        5, 0, 0, 0, 0x0a, 0, 0, 0, //
        0, 0, 0, 0, 0, 0, 0, 0, //
        0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let Decoded::Complete { value, .. } = ConnectResponse::decode(buf).unwrap() else {
        panic!("expected complete");
    };
    assert!(value.is_success());
    assert!(value.metadata.is_empty());
    assert!(!ConnectResponse::failure("Unable to reach the origin service").is_success());
}

#[test]
fn unknown_connection_types_travel_as_they_came() {
    let request = ConnectRequest {
        dest: "http://a".to_owned(),
        kind: ConnectionType::Unknown(9),
        metadata: vec![Metadata::new("HttpMethod", "GET")],
    };
    let buf = request.encode();
    // REQUEST_GOLDEN with `type` (byte 0 of w1) 9 instead of 1.
    let mut expected = REQUEST_GOLDEN.to_vec();
    expected[16] = 9;
    assert_eq!(buf, expected);
    assert_eq!(
        ConnectRequest::decode(&buf).unwrap(),
        Decoded::Complete {
            value: request,
            consumed: buf.len()
        }
    );
}

#[test]
fn text_without_its_nul_is_refused() {
    // RESPONSE_GOLDEN with the val "200\0" cut to 3 bytes (w5: count 3, high 2 | 3 << 3).
    let mut buf = RESPONSE_GOLDEN.to_vec();
    buf[8 + 5 * 8 + 4] = 0x1a;
    assert!(matches!(
        ConnectResponse::decode(&buf),
        Err(Error::Schema {
            structure: "Metadata.val",
            ..
        })
    ));
}

#[test]
fn malformed_pointers_are_errors() {
    // REQUEST_GOLDEN with the metadata list (w3) pointing past the segment.
    let mut buf = REQUEST_GOLDEN.to_vec();
    buf[8 + 3 * 8] = 0x7d;
    assert!(matches!(
        ConnectRequest::decode(&buf),
        Err(Error::Capnp { .. })
    ));
}

fn metadata() -> impl Strategy<Value = Vec<Metadata>> {
    proptest::collection::vec(
        (".{0,12}", ".{0,12}").prop_map(|(k, v)| Metadata::new(k, v)),
        0..6,
    )
}

fn kind() -> impl Strategy<Value = ConnectionType> {
    any::<u16>().prop_map(ConnectionType::from_u16)
}

proptest! {
    #[test]
    fn request_round_trips(dest in ".{0,40}", kind in kind(), metadata in metadata(), body in proptest::collection::vec(any::<u8>(), 0..32)) {
        let request = ConnectRequest { dest, kind, metadata };
        let mut buf = request.encode();
        let len = buf.len();
        buf.extend_from_slice(&body);
        prop_assert_eq!(
            ConnectRequest::decode(&buf).unwrap(),
            Decoded::Complete { value: request, consumed: len }
        );
    }

    #[test]
    fn response_round_trips(error in ".{0,40}", metadata in metadata()) {
        let response = ConnectResponse { error, metadata };
        let buf = response.encode();
        prop_assert_eq!(
            ConnectResponse::decode(&buf).unwrap(),
            Decoded::Complete { value: response, consumed: buf.len() }
        );
    }

    #[test]
    fn truncated_request_needs_more(dest in ".{0,40}", metadata in metadata(), cut in any::<prop::sample::Index>()) {
        let buf = ConnectRequest { dest, kind: ConnectionType::Http, metadata }.encode();
        let cut = cut.index(buf.len());
        let decoded = ConnectRequest::decode(&buf[..cut]).unwrap();
        let ok = matches!(decoded, Decoded::Incomplete { needed } if needed > cut && needed <= buf.len());
        prop_assert!(ok, "prefix of {} bytes decoded as {:?}", cut, decoded);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(Decoded::Complete { consumed, .. }) = ConnectRequest::decode(&bytes) {
            prop_assert!(consumed <= bytes.len());
        }
        if let Ok(Decoded::Complete { consumed, .. }) = ConnectResponse::decode(&bytes) {
            prop_assert!(consumed <= bytes.len());
        }
    }
}
