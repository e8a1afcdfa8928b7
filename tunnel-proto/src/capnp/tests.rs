use proptest::prelude::*;

use super::value::{ElementSize, ListValue, Pointer, StructValue};
use super::{decode_message, encode_message};
use crate::Decoded;
use crate::Error;

fn complete(buf: &[u8]) -> (StructValue, usize) {
    match decode_message(buf).unwrap() {
        Decoded::Complete { value, consumed } => (value, consumed),
        Decoded::Incomplete { needed } => panic!("incomplete, needs {needed}"),
    }
}

fn words(ws: &[u64]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn golden_struct_with_data_and_text() {
    // Root struct 1 data word / 1 pointer: data = 0x0102, ptr0 = Text "hi".
    let mut s = StructValue::new(1, 1);
    s.set_u16(0, 0x0102);
    s.set_text(0, "hi");
    // Derivation: frame header u32 0 (one segment), u32 4 (words).
    // w0 root pointer: struct at w1, offset 0, 1 data word (bits 32..48), 1 pointer
    //    (bits 48..64) -> 0x0001_0001_0000_0000.
    // w1 data: 0x0102 at byte 0.
    // w2 ptr0: list at w3 -> offset 0, kind 1, element size 2 (byte) at bits 32..35,
    //    count 3 ("hi" + NUL) at bits 35.. -> low 0x00000001, high 2 | 3 << 3 = 0x1a.
    // w3 "hi\0" padded to a word.
    let expected: Vec<u8> = [
        &[0, 0, 0, 0, 4, 0, 0, 0][..],
        &[0, 0, 0, 0, 1, 0, 1, 0],
        &[0x02, 0x01, 0, 0, 0, 0, 0, 0],
        &[1, 0, 0, 0, 0x1a, 0, 0, 0],
        &[b'h', b'i', 0, 0, 0, 0, 0, 0],
    ]
    .concat();
    assert_eq!(encode_message(&s), expected);
    let (back, consumed) = complete(&expected);
    assert_eq!(consumed, expected.len());
    assert_eq!(back.u16_at(0), 0x0102);
    assert_eq!(back.text_at(0, "test").unwrap(), "hi");
}

#[test]
fn golden_zero_sized_struct_uses_offset_minus_one() {
    let mut s = StructValue::new(0, 1);
    s.set_struct(0, StructValue::default());
    // w0 root: struct at w1, 0 data, 1 pointer -> 0x0001_0000_0000_0000.
    // w1: zero-sized struct, offset -1 -> low word bits 2..32 = 0x3fffffff -> 0xfffffffc.
    let expected: Vec<u8> = [
        &[0, 0, 0, 0, 2, 0, 0, 0][..],
        &[0, 0, 0, 0, 0, 0, 1, 0],
        &[0xfc, 0xff, 0xff, 0xff, 0, 0, 0, 0],
    ]
    .concat();
    assert_eq!(encode_message(&s), expected);
    let (back, _) = complete(&expected);
    assert_eq!(back.ptr(0), &Pointer::Struct(StructValue::default()));
}

#[test]
fn decodes_single_far_pointer_across_segments() {
    // Two segments. seg0 w0: far pointer (kind 2), landing pad at word 0 of segment 1
    // -> 0x0000_0001_0000_0002. seg1 w0: landing pad, struct at seg1 w1, 1 data word;
    // seg1 w1: the data.
    let mut buf = vec![1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
    buf.extend(words(&[0x0000_0001_0000_0002]));
    buf.extend(words(&[0x0000_0001_0000_0000, 0x1122_3344_5566_7788]));
    let (root, consumed) = complete(&buf);
    assert_eq!(consumed, buf.len());
    assert_eq!(root.u64_at(0), 0x1122_3344_5566_7788);
}

#[test]
fn decodes_double_far_pointer() {
    // Three segments. seg0 w0: double-far (bit 2 set) to seg1 w0 -> 0x0000_0001_0000_0006.
    // seg1 w0: far pointer to seg2 w0 -> 0x0000_0002_0000_0002; seg1 w1: tag, struct of
    // 1 data word -> 0x0000_0001_0000_0000. seg2 w0: data 42.
    let mut buf = vec![2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0];
    buf.extend(words(&[0x0000_0001_0000_0006]));
    buf.extend(words(&[0x0000_0002_0000_0002, 0x0000_0001_0000_0000]));
    buf.extend(words(&[42]));
    let (root, _) = complete(&buf);
    assert_eq!(root.u64_at(0), 42);
}

#[test]
fn never_reads_past_the_message() {
    let mut s = StructValue::new(1, 0);
    s.set_u64(0, 7);
    let mut buf = encode_message(&s);
    let len = buf.len();
    buf.extend_from_slice(b"body bytes that are not capnp");
    let (root, consumed) = complete(&buf);
    assert_eq!(consumed, len);
    assert_eq!(root.u64_at(0), 7);
}

#[test]
fn incomplete_reports_what_it_needs() {
    let mut s = StructValue::new(1, 1);
    s.set_text(0, "hello world");
    let buf = encode_message(&s);
    assert_eq!(
        decode_message(&buf[..2]).unwrap(),
        Decoded::Incomplete { needed: 4 }
    );
    assert_eq!(
        decode_message(&buf[..6]).unwrap(),
        Decoded::Incomplete { needed: 8 }
    );
    assert_eq!(
        decode_message(&buf[..9]).unwrap(),
        Decoded::Incomplete { needed: buf.len() }
    );
}

#[test]
fn rejects_too_many_segments_before_waiting_for_them() {
    // 513 segments: u32 512.
    let buf = 512u32.to_le_bytes();
    assert!(matches!(decode_message(&buf), Err(Error::Capnp(_))));
}

#[test]
fn rejects_oversized_message_from_the_header() {
    // One segment of 2^23 + 1 words (> 64 MiB).
    let mut buf = vec![0, 0, 0, 0];
    buf.extend_from_slice(&((1u32 << 23) + 1).to_le_bytes());
    assert!(matches!(decode_message(&buf), Err(Error::Capnp(_))));
}

#[test]
fn rejects_out_of_bounds_pointer() {
    // Root struct claims 5 data words in a 1-word segment.
    let mut buf = vec![0, 0, 0, 0, 1, 0, 0, 0];
    buf.extend(words(&[0x0000_0005_0000_0000]));
    assert!(matches!(decode_message(&buf), Err(Error::Capnp(_))));
}

#[test]
fn rejects_deep_nesting() {
    // Each word is a struct pointer (0 data / 1 pointer) to the next word: 100 deep.
    let n = 100u32;
    let mut buf = vec![0, 0, 0, 0];
    buf.extend_from_slice(&n.to_le_bytes());
    buf.extend(words(&vec![0x0001_0000_0000_0000; n as usize]));
    let err = decode_message(&buf).unwrap_err();
    assert!(err.to_string().contains("nests too deeply"), "{err}");
}

#[test]
fn traversal_budget_stops_amplification() {
    // A pointer list of 60 entries that all point back at the same 60-entry list
    // (offset chosen per slot) would be 60^2 reads at depth 2 and more below; the
    // budget (8 x message words) must stop it long before.
    let n = 60usize;
    let mut ws = vec![0u64; n + 1];
    // w0 root: struct with 0 data / 1 pointer at w1? Simpler: root is a struct whose
    // pointer section is the list itself: 0 data words, n pointers, at w1.
    ws[0] = (n as u64) << 48;
    for i in 0..n {
        let slot = 1 + i;
        // Each slot points to a list of n pointers starting at w1.
        let offset = 1i64 - slot as i64 - 1;
        ws[slot] = 1 | (u64::from((offset as i32 as u32) << 2)) | (6 << 32) | ((n as u64) << 35);
    }
    let mut buf = vec![0, 0, 0, 0];
    buf.extend_from_slice(&((n + 1) as u32).to_le_bytes());
    buf.extend(words(&ws));
    let err = decode_message(&buf).unwrap_err();
    assert!(
        err.to_string().contains("traversal limit") || err.to_string().contains("nests"),
        "{err}"
    );
}

#[test]
fn capability_pointer_round_trips() {
    let mut s = StructValue::new(0, 1);
    s.set_ptr(0, Pointer::Capability(3));
    let buf = encode_message(&s);
    // w1 is 3 (kind "other") with the cap index in the high half.
    assert_eq!(&buf[16..24], &[3, 0, 0, 0, 3, 0, 0, 0]);
    assert_eq!(complete(&buf).0, s);
}

#[test]
fn reading_past_sections_yields_defaults() {
    let s = StructValue::default();
    assert_eq!(s.u64_at(8), 0);
    assert!(!s.bool_at(200));
    assert_eq!(s.text_at(5, "x").unwrap(), "");
    assert!(s.struct_list_at(1, "x").unwrap().is_empty());
}

#[test]
fn type_mismatch_is_a_schema_error() {
    let mut s = StructValue::new(0, 1);
    s.set_struct(0, StructValue::new(1, 0));
    assert!(matches!(s.text_at(0, "f"), Err(Error::Schema { .. })));
}

fn primitive_list() -> impl Strategy<Value = ListValue> {
    (0u64..6, 0u32..40).prop_flat_map(|(code, count)| {
        let size = ElementSize::from_code(code).unwrap();
        let len = (u64::from(count) * size.bits()).div_ceil(8) as usize;
        proptest::collection::vec(any::<u8>(), len).prop_map(move |bytes| ListValue::Primitive {
            size,
            count,
            bytes,
        })
    })
}

fn tree() -> impl Strategy<Value = StructValue> {
    let leaf = proptest::collection::vec(any::<u64>(), 0..3).prop_map(|data| StructValue {
        data,
        ptrs: Vec::new(),
    });
    leaf.prop_recursive(4, 32, 4, |inner| {
        let pointer = prop_oneof![
            Just(Pointer::Null),
            any::<u32>().prop_map(Pointer::Capability),
            inner.clone().prop_map(Pointer::Struct),
            primitive_list().prop_map(Pointer::List),
            // Composite lists hold uniformly sized elements (the encoder pads).
            (0usize..3, proptest::collection::vec(any::<u64>(), 0..4)).prop_map(|(dw, seeds)| {
                let items = seeds
                    .into_iter()
                    .map(|seed| StructValue {
                        data: vec![seed; dw],
                        ptrs: Vec::new(),
                    })
                    .collect();
                Pointer::List(ListValue::Structs(items))
            }),
            proptest::collection::vec(inner.prop_map(Pointer::Struct), 0..3)
                .prop_map(|ps| Pointer::List(ListValue::Pointers(ps))),
        ];
        (
            proptest::collection::vec(any::<u64>(), 0..3),
            proptest::collection::vec(pointer, 0..4),
        )
            .prop_map(|(data, ptrs)| StructValue { data, ptrs })
    })
}

proptest! {
    #[test]
    fn encode_then_decode_is_identity(root in tree()) {
        let buf = encode_message(&root);
        let (back, consumed) = complete(&buf);
        prop_assert_eq!(consumed, buf.len());
        prop_assert_eq!(back, root);
    }

    #[test]
    fn truncated_messages_are_incomplete(root in tree(), cut in any::<prop::sample::Index>()) {
        let buf = encode_message(&root);
        let cut = cut.index(buf.len());
        match decode_message(&buf[..cut]).unwrap() {
            Decoded::Incomplete { needed } => {
                prop_assert!(needed > cut);
                prop_assert!(needed <= buf.len());
            }
            Decoded::Complete { .. } => prop_assert!(false, "decoded a truncated message"),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_or_over_read(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(Decoded::Complete { consumed, .. }) = decode_message(&bytes) {
            prop_assert!(consumed <= bytes.len());
        }
    }

    #[test]
    fn arbitrary_segment_bodies_never_panic(
        segments in proptest::collection::vec(proptest::collection::vec(any::<u64>(), 1..16), 1..4),
        trailing in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        // A well-formed header with random words inside: exercises pointer decoding.
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
        if let Ok(Decoded::Complete { consumed, .. }) = decode_message(&buf) {
            prop_assert_eq!(consumed, len);
        }
    }
}
