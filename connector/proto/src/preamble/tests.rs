use proptest::prelude::*;

use super::*;
use crate::connect::{ConnectionType, Metadata};

fn request() -> ConnectRequest {
    ConnectRequest {
        dest: "http://test.com/path".to_owned(),
        kind: ConnectionType::Http,
        metadata: vec![
            Metadata::new("HttpMethod", "POST"),
            Metadata::new("HttpHeader:Content-Length", "4"),
        ],
    }
}

#[test]
fn signatures_are_the_spec_bytes() {
    assert_eq!(DATA_STREAM_SIGNATURE, [0x0A, 0x36, 0xCD, 0x12, 0xA1, 0x3E]);
    assert_eq!(RPC_STREAM_SIGNATURE, [0x52, 0xBB, 0x82, 0x5C, 0xDB, 0x65]);
    assert_eq!(DATA_STREAM_VERSION, [0x30, 0x31]);
}

#[test]
fn request_head_is_preamble_then_message() {
    let head = encode_request_head(&request());
    // Golden: the 6 signature bytes, ASCII "01", then exactly the message bytes.
    assert_eq!(
        &head[..8],
        &[0x0A, 0x36, 0xCD, 0x12, 0xA1, 0x3E, b'0', b'1']
    );
    assert_eq!(&head[8..], &request().encode()[..]);
}

#[test]
fn data_preamble_decodes_with_version() {
    let buf = [0x0A, 0x36, 0xCD, 0x12, 0xA1, 0x3E, b'0', b'1', 0xFF];
    assert_eq!(
        decode_preamble(&buf).unwrap(),
        Decoded::Complete {
            value: StreamKind::Data { version: *b"01" },
            consumed: 8
        }
    );
}

#[test]
fn rpc_preamble_has_no_version() {
    let buf = [0x52, 0xBB, 0x82, 0x5C, 0xDB, 0x65, 0, 0, 0, 0];
    assert_eq!(
        decode_preamble(&buf).unwrap(),
        Decoded::Complete {
            value: StreamKind::Rpc,
            consumed: 6
        }
    );
}

#[test]
fn partial_preamble_is_incomplete() {
    assert_eq!(
        decode_preamble(&[0x0A, 0x36]).unwrap(),
        Decoded::Incomplete { needed: 6 }
    );
    assert_eq!(
        decode_preamble(&DATA_STREAM_SIGNATURE).unwrap(),
        Decoded::Incomplete { needed: 8 }
    );
    assert_eq!(
        decode_preamble(&[]).unwrap(),
        Decoded::Incomplete { needed: 6 }
    );
}

#[test]
fn unknown_signature_fails_at_first_wrong_byte() {
    let err = decode_preamble(&[0x0A, 0x37]).unwrap_err();
    assert!(matches!(
        err,
        Error::UnknownSignature([0x0A, 0x37, 0, 0, 0, 0])
    ));
    assert!(decode_preamble(b"GET / HTTP/1.1").is_err());
}

#[test]
fn request_head_decodes_exactly_and_leaves_body() {
    let mut buf = encode_request_head(&request());
    let head_len = buf.len();
    buf.extend_from_slice(b"body");
    assert_eq!(
        decode_request_head(&buf).unwrap(),
        Decoded::Complete {
            value: request(),
            consumed: head_len
        }
    );
}

#[test]
fn response_head_round_trips() {
    let response = ConnectResponse::failure("Unable to reach the origin service");
    let buf = encode_response_head(&response);
    assert_eq!(
        decode_response_head(&buf).unwrap(),
        Decoded::Complete {
            value: response,
            consumed: buf.len()
        }
    );
}

#[test]
fn rpc_stream_is_not_a_request_head() {
    let mut buf = RPC_STREAM_SIGNATURE.to_vec();
    buf.extend_from_slice(&request().encode());
    assert!(matches!(
        decode_request_head(&buf),
        Err(Error::UnexpectedRpcStream)
    ));
}

proptest! {
    #[test]
    fn truncated_head_needs_more_and_offsets_include_preamble(cut in any::<prop::sample::Index>()) {
        let buf = encode_request_head(&request());
        let cut = cut.index(buf.len());
        match decode_request_head(&buf[..cut]).unwrap() {
            Decoded::Incomplete { needed } => prop_assert!(needed > cut && needed <= buf.len()),
            Decoded::Complete { .. } => prop_assert!(false, "complete from a prefix"),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        if let Ok(Decoded::Complete { consumed, .. }) = decode_preamble(&bytes) {
            prop_assert!(consumed <= bytes.len());
        }
        let mut with_signature = DATA_STREAM_SIGNATURE.to_vec();
        with_signature.extend_from_slice(b"01");
        with_signature.extend_from_slice(&bytes);
        if let Ok(Decoded::Complete { consumed, .. }) = decode_request_head(&with_signature) {
            prop_assert!(consumed <= with_signature.len());
        }
    }
}
