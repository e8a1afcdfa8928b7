use capnp::{any_pointer, raw};
use proptest::prelude::*;

use super::*;
use crate::generated::quic_metadata_protocol_capnp::{ConnectionType, connect_request};
use crate::generated::rpc_capnp::payload;
use crate::generated::tunnelrpc_capnp::connection_error;
use crate::{Decoded, Error};

fn words(ws: &[u64]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Opens a whole message and returns its root pointer's target size in words,
/// which walks every pointer in it.
fn walk(buf: &[u8]) -> Result<u64, Error> {
    let Decoded::Complete { value, consumed } = read(buf)? else {
        panic!("incomplete");
    };
    assert!(consumed <= buf.len());
    let root: any_pointer::Reader<'_> = root(&value)?;
    let size = root.target_size().map_err(|source| Error::Capnp {
        context: None,
        source,
    })?;
    Ok(size.word_count)
}

/// The data section of the root struct.
fn root_data(buf: &[u8]) -> Vec<u8> {
    let Decoded::Complete { value, .. } = read(buf).unwrap() else {
        panic!("incomplete");
    };
    // Any struct type reads any struct's sections.
    let root: connection_error::Reader<'_> = root(&value).unwrap();
    raw::get_struct_data_section(root).to_vec()
}

/// A framed `ConnectionError { retryAfter: retry }`: root pointer, 2 data words,
/// 1 pointer.
fn connection_error(retry: i64) -> Vec<u8> {
    let mut message = builder(4);
    message
        .init_root::<connection_error::Builder<'_>>()
        .set_retry_after(retry);
    write(&message)
}

#[test]
fn never_reads_past_the_message() {
    let mut buf = connection_error(7);
    let len = buf.len();
    buf.extend_from_slice(b"body bytes that are not capnp");
    let Decoded::Complete { value, consumed } = read(&buf).unwrap() else {
        panic!("incomplete");
    };
    assert_eq!(consumed, len);
    let root: connection_error::Reader<'_> = root(&value).unwrap();
    assert_eq!(root.get_retry_after(), 7);
}

#[test]
fn incomplete_reports_what_it_needs() {
    let buf = connection_error(7);
    assert!(matches!(
        read(&buf[..2]),
        Ok(Decoded::Incomplete { needed: 4 })
    ));
    assert!(matches!(
        read(&buf[..6]),
        Ok(Decoded::Incomplete { needed: 8 })
    ));
    let needed = buf.len();
    assert!(matches!(read(&buf[..9]), Ok(Decoded::Incomplete { needed: n }) if n == needed));
}

#[test]
fn segment_limit_is_checked_before_waiting_for_the_segments() {
    // The first word holds the segment count minus one.
    let too_many = (MAX_SEGMENTS as u32).to_le_bytes();
    assert!(matches!(read(&too_many), Err(Error::CapnpLimit(_))));
    // The largest allowed count waits for its whole table (4 + 4 x 511 bytes).
    let most = (MAX_SEGMENTS as u32 - 1).to_le_bytes();
    assert!(matches!(
        read(&most),
        Ok(Decoded::Incomplete { needed: 2048 })
    ));
}

#[test]
fn rejects_oversized_message_from_the_header() {
    let words = u32::try_from(MAX_MESSAGE_BYTES / 8 + 1).unwrap();
    let mut buf = vec![0, 0, 0, 0];
    buf.extend_from_slice(&words.to_le_bytes());
    assert!(matches!(read(&buf), Err(Error::CapnpLimit(_))));
}

#[test]
fn decodes_single_far_pointer_across_segments() {
    // Two segments of one and two words. seg0 w0: far pointer (kind 2) to the landing
    // pad at word 0 of segment 1 -> 0x0000_0001_0000_0002. seg1 w0: landing pad, a
    // struct at seg1 w1 of 1 data word; seg1 w1: the data.
    let mut buf = vec![1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
    buf.extend(words(&[0x0000_0001_0000_0002]));
    buf.extend(words(&[0x0000_0001_0000_0000, 0x1122_3344_5566_7788]));
    assert_eq!(root_data(&buf), 0x1122_3344_5566_7788u64.to_le_bytes());
}

#[test]
fn decodes_double_far_pointer() {
    // Three segments. seg0 w0: double far (bit 2) to seg1 w0 -> 0x0000_0001_0000_0006.
    // seg1 w0: far pointer to seg2 w0 -> 0x0000_0002_0000_0002; seg1 w1: the tag, a
    // struct of 1 data word. seg2 w0: the data, 42.
    let mut buf = vec![2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0];
    buf.extend(words(&[0x0000_0001_0000_0006]));
    buf.extend(words(&[0x0000_0002_0000_0002, 0x0000_0001_0000_0000]));
    buf.extend(words(&[42]));
    assert_eq!(root_data(&buf), 42u64.to_le_bytes());
}

#[test]
fn rejects_out_of_bounds_pointer() {
    // The root struct claims 5 data words in a 1-word segment.
    let mut buf = vec![0, 0, 0, 0, 1, 0, 0, 0];
    buf.extend(words(&[0x0000_0005_0000_0000]));
    let err = walk(&buf).unwrap_err();
    assert!(err.to_string().contains("out-of-bounds"), "{err}");
}

#[test]
fn rejects_deep_nesting() {
    // Each word is a struct pointer (0 data / 1 pointer) to the next word: 100 deep.
    let n = 100u32;
    let mut buf = vec![0, 0, 0, 0];
    buf.extend_from_slice(&n.to_le_bytes());
    buf.extend(words(&vec![0x0001_0000_0000_0000; n as usize]));
    let err = walk(&buf).unwrap_err();
    assert!(err.to_string().contains("nested"), "{err}");
}

#[test]
fn traversal_budget_stops_amplification() {
    // A root struct whose 60 pointers each point at a list of those same 60 pointers
    // would be 60^2 reads at depth 2 and more below; the budget (8 x message words
    // plus 64) stops it long before.
    let n = 60usize;
    let mut ws = vec![0u64; n + 1];
    ws[0] = (n as u64) << 48;
    for i in 0..n {
        let slot = 1 + i;
        let offset = 1i64 - slot as i64 - 1;
        ws[slot] = 1 | (u64::from((offset as i32 as u32) << 2)) | (6 << 32) | ((n as u64) << 35);
    }
    let mut buf = vec![0, 0, 0, 0];
    buf.extend_from_slice(&((n + 1) as u32).to_le_bytes());
    buf.extend(words(&ws));
    let err = walk(&buf).unwrap_err().to_string();
    assert!(err.contains("Read limit exceeded"), "{err}");
}

#[test]
fn empty_first_segment_is_an_error() {
    let buf = [0, 0, 0, 0, 0, 0, 0, 0];
    assert!(matches!(walk(&buf), Err(Error::Capnp { .. })));
}

#[test]
fn capability_pointers_are_their_index() {
    let mut message = builder(4);
    let payload = message.init_root::<payload::Builder<'_>>();
    write_capability(payload.init_content(), 2);
    let buf = write(&message);
    // w2, the content pointer: kind "other" (3) with the index in the high half.
    assert_eq!(&buf[16..24], &[3, 0, 0, 0, 2, 0, 0, 0]);
    let Decoded::Complete { value, .. } = read(&buf).unwrap() else {
        panic!("incomplete");
    };
    let payload: payload::Reader<'_> = root(&value).unwrap();
    assert_eq!(read_capability(payload.get_content(), 3).unwrap(), 2);
    // An index the cap table does not have is refused.
    assert!(read_capability(payload.get_content(), 2).is_err());
}

#[test]
fn objects_are_equal_when_their_values_are() {
    let zero = Object::build::<connection_error::Owned>(|mut b| b.set_retry_after(0));
    // The same value with no data section at all.
    let empty = Object::build::<connection_error::Owned>(|_| {});
    let one = Object::build::<connection_error::Owned>(|mut b| b.set_retry_after(1));
    assert_eq!(zero, empty);
    assert_ne!(zero, one);
    let copy = {
        let reader = one.reader();
        let root: any_pointer::Reader<'_> = root(&reader).unwrap();
        Object::of_pointer(root).unwrap()
    };
    assert_eq!(copy, one);
    let reader = copy.reader();
    let back: connection_error::Reader<'_> = root(&reader).unwrap();
    assert_eq!(back.get_retry_after(), 1);
}

#[test]
fn enum_fields_take_values_the_schema_does_not_name() {
    let mut message = builder(4);
    let request = message.init_root::<connect_request::Builder<'_>>();
    set_enum::<ConnectionType>(request, "type", 9).unwrap();
    let buf = write(&message);
    let Decoded::Complete { value, .. } = read(&buf).unwrap() else {
        panic!("incomplete");
    };
    let request: connect_request::Reader<'_> = root(&value).unwrap();
    assert!(matches!(request.get_type(), Err(capnp::NotInSchema(9))));
}

#[test]
fn pointer_kind_mismatch_is_a_schema_error() {
    // A ConnectRequest whose `dest` (ptr 0) is a struct pointer instead of text:
    // w0 root (1 / 2) at w1; w2 dest -> struct (1 / 0) at w4 (offset 1); w4 data.
    let mut buf = vec![0, 0, 0, 0, 5, 0, 0, 0];
    buf.extend(words(&[
        0x0002_0001_0000_0000,
        0,
        0x0000_0001_0000_0004,
        0,
        0,
    ]));
    let Decoded::Complete { value, .. } = read(&buf).unwrap() else {
        panic!("incomplete");
    };
    let request: connect_request::Reader<'_> = root(&value).unwrap();
    let err = text("ConnectRequest.dest", request.get_dest()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Schema {
                structure: "ConnectRequest.dest",
                ..
            }
        ),
        "{err}"
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_or_over_read(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        match read(&bytes) {
            Ok(Decoded::Complete { consumed, .. }) => prop_assert!(consumed <= bytes.len()),
            Ok(Decoded::Incomplete { needed }) => prop_assert!(needed > bytes.len()),
            Err(_) => {}
        }
    }

    #[test]
    fn arbitrary_segment_bodies_never_panic(
        segments in proptest::collection::vec(proptest::collection::vec(any::<u64>(), 1..16), 1..4),
        trailing in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        // A well-formed table with random words inside: walks, copies and compares
        // whatever the pointers say.
        let mut buf = Vec::new();
        buf.extend_from_slice(&(segments.len() as u32 - 1).to_le_bytes());
        for s in &segments {
            buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
        if buf.len() % 8 != 0 {
            buf.extend_from_slice(&[0; 4]);
        }
        for s in &segments {
            buf.extend(words(s));
        }
        let len = buf.len();
        buf.extend_from_slice(&trailing);
        let Ok(Decoded::Complete { value, consumed }) = read(&buf) else {
            return Err(TestCaseError::fail("a whole message was not found"));
        };
        prop_assert_eq!(consumed, len);
        if let Ok(root) = root::<any_pointer::Reader<'_>, _>(&value) {
            let walked = root.target_size();
            if let Ok(copy) = Object::of_pointer(root) {
                // A copy holds the same value, laid out again.
                prop_assert!(walked.is_ok());
                prop_assert_eq!(copy.clone(), copy);
            }
        }
    }
}
