//! Encoding a [`StructValue`] tree as one single-segment, unpacked, framed message.
//!
//! Layout is depth-first: the root pointer is word 0, then each object, and each
//! object's children right after it in field order (for lists, after the whole list).
//! This is the order the golden tests in `tests.rs` are derived from.

use super::value::{ListValue, Pointer, StructValue, len_u32};

/// Encodes `root` as a framed message: `u32 0` (one segment), `u32` segment words,
/// then the segment.
pub(crate) fn encode_message(root: &StructValue) -> Vec<u8> {
    let mut words = vec![0u64];
    write_struct(&mut words, 0, root);
    let mut out = Vec::with_capacity(8 + words.len() * 8);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&len_u32(words.len()).to_le_bytes());
    for word in words {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out
}

/// The offset field (bits 2..32) for content at `start` from a pointer at `slot`.
fn offset_bits(slot: usize, start: usize) -> u64 {
    let offset = start as i64 - slot as i64 - 1;
    u64::from((offset as i32 as u32) << 2)
}

fn set(words: &mut [u64], slot: usize, value: u64) {
    if let Some(word) = words.get_mut(slot) {
        *word = value;
    }
}

fn write_struct(words: &mut Vec<u64>, slot: usize, value: &StructValue) {
    let data_words = value.data.len();
    let ptr_count = value.ptrs.len();
    if data_words + ptr_count == 0 {
        // A zero-sized struct points just before itself (offset -1), so the pointer
        // is never mistaken for null.
        set(words, slot, offset_bits(slot, slot));
        return;
    }
    let start = words.len();
    words.extend_from_slice(&value.data);
    words.resize(start + data_words + ptr_count, 0);
    set(
        words,
        slot,
        offset_bits(slot, start) | ((data_words as u64) << 32) | ((ptr_count as u64) << 48),
    );
    for (i, p) in value.ptrs.iter().enumerate() {
        write_pointer(words, start + data_words + i, p);
    }
}

fn write_pointer(words: &mut Vec<u64>, slot: usize, value: &Pointer) {
    match value {
        Pointer::Null => set(words, slot, 0),
        Pointer::Capability(index) => set(words, slot, 3 | (u64::from(*index) << 32)),
        Pointer::Struct(s) => write_struct(words, slot, s),
        Pointer::List(list) => write_list(words, slot, list),
    }
}

fn write_list(words: &mut Vec<u64>, slot: usize, list: &ListValue) {
    let start = words.len();
    match list {
        ListValue::Primitive { size, count, bytes } => {
            let byte_len = (u64::from(*count) * size.bits()).div_ceil(8) as usize;
            let word_len = byte_len.div_ceil(8);
            let mut padded = bytes.clone();
            padded.resize(word_len * 8, 0);
            for chunk in padded.chunks_exact(8) {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                words.push(u64::from_le_bytes(word));
            }
            set(
                words,
                slot,
                1 | offset_bits(slot, start) | (size.code() << 32) | (u64::from(*count) << 35),
            );
        }
        ListValue::Pointers(items) => {
            words.resize(start + items.len(), 0);
            set(
                words,
                slot,
                1 | offset_bits(slot, start) | (6 << 32) | ((items.len() as u64) << 35),
            );
            for (i, p) in items.iter().enumerate() {
                write_pointer(words, start + i, p);
            }
        }
        ListValue::Structs(items) => {
            // Every element gets the largest section sizes of any element.
            let data_words = items.iter().map(|s| s.data.len()).max().unwrap_or(0);
            let ptr_count = items.iter().map(|s| s.ptrs.len()).max().unwrap_or(0);
            let stride = data_words + ptr_count;
            let body = items.len() * stride;
            words.resize(start + 1 + body, 0);
            set(
                words,
                start,
                ((items.len() as u64) << 2)
                    | ((data_words as u64) << 32)
                    | ((ptr_count as u64) << 48),
            );
            set(
                words,
                slot,
                1 | offset_bits(slot, start) | (7 << 32) | ((body as u64) << 35),
            );
            for (i, item) in items.iter().enumerate() {
                let at = start + 1 + i * stride;
                for (j, word) in item.data.iter().enumerate() {
                    set(words, at + j, *word);
                }
            }
            for (i, item) in items.iter().enumerate() {
                let at = start + 1 + i * stride + data_words;
                for (j, p) in item.ptrs.iter().enumerate() {
                    write_pointer(words, at + j, p);
                }
            }
        }
    }
}
