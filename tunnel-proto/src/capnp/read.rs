//! Decoding one framed message: the stream header, the segments, and the pointer tree.
//!
//! The decoder looks at no byte past the end of the message it decodes: the header
//! says how long the message is, and everything after that belongs to the caller (a
//! request body, the next RPC message). All limits are checked before any allocation
//! that the peer controls: segment count, total size, nesting depth and a traversal
//! budget linear in the message size (so shared or overlapping pointers cannot
//! amplify work).

use super::value::{ElementSize, ListValue, Pointer, StructValue};
use crate::Decoded;
use crate::Error;

/// At most this many segments per message (cloudflared's limit).
pub(crate) const MAX_SEGMENTS: u64 = 512;
/// At most this many bytes of segments per message (cloudflared's limit, 64 MiB).
pub(crate) const MAX_MESSAGE_BYTES: u64 = 64 * 1024 * 1024;
/// Deepest pointer nesting followed.
const MAX_NESTING: u32 = 64;

/// Decodes the first framed message in `buf` and returns its root struct and the
/// number of bytes the message occupies.
pub(crate) fn decode_message(buf: &[u8]) -> Result<Decoded<StructValue>, Error> {
    let Some(first) = read_u32(buf, 0) else {
        return Ok(Decoded::Incomplete { needed: 4 });
    };
    let segment_count = u64::from(first) + 1;
    if segment_count > MAX_SEGMENTS {
        return Err(malformed(format!(
            "{segment_count} segments exceeds the limit of {MAX_SEGMENTS}"
        )));
    }
    // Both values are bounded by MAX_SEGMENTS, so usize arithmetic cannot overflow.
    let segment_count = segment_count as usize;
    let header_len = (4 + 4 * segment_count + 7) & !7;
    if buf.len() < header_len {
        return Ok(Decoded::Incomplete { needed: header_len });
    }
    let mut sizes = Vec::with_capacity(segment_count);
    let mut total_words: u64 = 0;
    for i in 0..segment_count {
        let words = read_u32(buf, 4 + 4 * i).unwrap_or(0);
        total_words += u64::from(words);
        sizes.push(words as usize);
    }
    if total_words * 8 > MAX_MESSAGE_BYTES {
        return Err(malformed(format!(
            "{} bytes of segments exceeds the limit of {MAX_MESSAGE_BYTES}",
            total_words * 8
        )));
    }
    // Bounded by MAX_MESSAGE_BYTES above.
    let total_len = header_len + total_words as usize * 8;
    if buf.len() < total_len {
        return Ok(Decoded::Incomplete { needed: total_len });
    }
    let mut segments = Vec::with_capacity(segment_count);
    let mut at = header_len;
    for words in sizes {
        let end = at + words * 8;
        segments.push(buf.get(at..end).unwrap_or(&[]));
        at = end;
    }
    if segments.first().is_none_or(|s| s.is_empty()) {
        return Err(malformed("first segment is empty".to_owned()));
    }
    let mut reader = Reader {
        segments,
        budget: total_words.saturating_mul(8).saturating_add(64),
    };
    let root = match reader.read_pointer(0, 0, 0)? {
        Pointer::Null => StructValue::default(),
        Pointer::Struct(s) => s,
        _ => return Err(malformed("root pointer is not a struct".to_owned())),
    };
    Ok(Decoded::Complete {
        value: root,
        consumed: total_len,
    })
}

fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let bytes = buf.get(at..at + 4)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn malformed(problem: String) -> Error {
    Error::Capnp(problem)
}

struct Reader<'a> {
    segments: Vec<&'a [u8]>,
    /// Words the decoder may still visit.
    budget: u64,
}

/// Where a pointer's content lives, and the pointer word that describes it.
struct Target {
    segment: usize,
    start: usize,
    tag: u64,
}

impl Reader<'_> {
    fn word(&self, segment: usize, index: usize) -> Result<u64, Error> {
        let seg = self
            .segments
            .get(segment)
            .ok_or_else(|| malformed(format!("pointer to missing segment {segment}")))?;
        let at = index
            .checked_mul(8)
            .ok_or_else(|| malformed("pointer out of bounds".to_owned()))?;
        let bytes = seg
            .get(at..at + 8)
            .ok_or_else(|| malformed("pointer out of bounds".to_owned()))?;
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(word))
    }

    fn segment_words(&self, segment: usize) -> usize {
        self.segments.get(segment).map_or(0, |s| s.len() / 8)
    }

    fn charge(&mut self, words: u64) -> Result<(), Error> {
        let words = words.max(1);
        if words > self.budget {
            return Err(malformed("message exceeds the traversal limit".to_owned()));
        }
        self.budget -= words;
        Ok(())
    }

    /// Checks that `words` words starting at `start` lie inside `segment`.
    fn check_range(&self, segment: usize, start: usize, words: u64) -> Result<(), Error> {
        let end = (start as u64).saturating_add(words);
        if end > self.segment_words(segment) as u64 {
            return Err(malformed("pointer content out of bounds".to_owned()));
        }
        Ok(())
    }

    /// Follows the pointer at word `index` of `segment`, including far pointers.
    fn resolve(&self, segment: usize, index: usize, word: u64) -> Result<Target, Error> {
        match word & 3 {
            0 | 1 => Ok(Target {
                segment,
                start: offset_target(index, word)?,
                tag: word,
            }),
            2 => {
                let double = (word >> 2) & 1 == 1;
                let pad = ((word >> 3) & 0x1fff_ffff) as usize;
                let pad_segment = (word >> 32) as usize;
                let landing = self.word(pad_segment, pad)?;
                if !double {
                    if landing & 3 > 1 {
                        return Err(malformed("far pointer lands on a far pointer".to_owned()));
                    }
                    return Ok(Target {
                        segment: pad_segment,
                        start: offset_target(pad, landing)?,
                        tag: landing,
                    });
                }
                let tag = self.word(pad_segment, pad + 1)?;
                if landing & 7 != 2 || tag & 3 > 1 {
                    return Err(malformed("malformed double-far landing pad".to_owned()));
                }
                Ok(Target {
                    segment: (landing >> 32) as usize,
                    start: ((landing >> 3) & 0x1fff_ffff) as usize,
                    tag,
                })
            }
            _ => Err(malformed("unexpected pointer kind".to_owned())),
        }
    }

    fn read_pointer(&mut self, segment: usize, index: usize, depth: u32) -> Result<Pointer, Error> {
        let word = self.word(segment, index)?;
        if word == 0 {
            return Ok(Pointer::Null);
        }
        if word & 3 == 3 {
            if (word >> 2) & 0x3fff_ffff != 0 {
                return Err(malformed("unknown \"other\" pointer".to_owned()));
            }
            return Ok(Pointer::Capability((word >> 32) as u32));
        }
        if depth >= MAX_NESTING {
            return Err(malformed("message nests too deeply".to_owned()));
        }
        let target = self.resolve(segment, index, word)?;
        if target.tag & 3 == 0 {
            let data_words = ((target.tag >> 32) & 0xffff) as usize;
            let ptr_count = (target.tag >> 48) as usize;
            let s = self.read_struct(target.segment, target.start, data_words, ptr_count, depth)?;
            Ok(Pointer::Struct(s))
        } else {
            Ok(Pointer::List(self.read_list(target, depth)?))
        }
    }

    fn read_struct(
        &mut self,
        segment: usize,
        start: usize,
        data_words: usize,
        ptr_count: usize,
        depth: u32,
    ) -> Result<StructValue, Error> {
        let size = (data_words + ptr_count) as u64;
        self.check_range(segment, start, size)?;
        self.charge(size)?;
        let mut data = Vec::with_capacity(data_words);
        for i in 0..data_words {
            data.push(self.word(segment, start + i)?);
        }
        let mut ptrs = Vec::with_capacity(ptr_count);
        for i in 0..ptr_count {
            ptrs.push(self.read_pointer(segment, start + data_words + i, depth + 1)?);
        }
        Ok(StructValue { data, ptrs })
    }

    fn read_list(&mut self, target: Target, depth: u32) -> Result<ListValue, Error> {
        let Target {
            segment,
            start,
            tag,
        } = target;
        let code = (tag >> 32) & 7;
        let count = tag >> 35;
        if let Some(size) = ElementSize::from_code(code) {
            let bits = count * size.bits();
            let words = bits.div_ceil(64);
            self.check_range(segment, start, words)?;
            // Void lists occupy no words but may claim many elements; charge for them
            // so a tiny message cannot describe an enormous list.
            self.charge(words.max(if size == ElementSize::Void {
                count / 64
            } else {
                0
            }))?;
            let byte_len = bits.div_ceil(8) as usize;
            let begin = start * 8;
            let bytes = self
                .segments
                .get(segment)
                .and_then(|s| s.get(begin..begin + byte_len))
                .ok_or_else(|| malformed("list out of bounds".to_owned()))?
                .to_vec();
            return Ok(ListValue::Primitive {
                size,
                count: count as u32,
                bytes,
            });
        }
        if code == 6 {
            self.check_range(segment, start, count)?;
            self.charge(count)?;
            let mut items = Vec::with_capacity(count as usize);
            for i in 0..count as usize {
                items.push(self.read_pointer(segment, start + i, depth + 1)?);
            }
            return Ok(ListValue::Pointers(items));
        }
        // Composite: `count` is the word count after the tag word.
        let words = count;
        self.check_range(segment, start, words + 1)?;
        let element_tag = self.word(segment, start)?;
        if element_tag & 3 != 0 {
            return Err(malformed(
                "composite list tag is not a struct tag".to_owned(),
            ));
        }
        let elements = (element_tag >> 2) & 0x3fff_ffff;
        let data_words = (element_tag >> 32) & 0xffff;
        let ptr_count = element_tag >> 48;
        let stride = data_words + ptr_count;
        if elements.saturating_mul(stride) > words {
            return Err(malformed(
                "composite list elements overrun the list".to_owned(),
            ));
        }
        // Zero-sized elements cost one unit each, again against amplification.
        self.charge(words.max(elements))?;
        let mut items = Vec::with_capacity(elements.min(words.max(1)) as usize);
        for i in 0..elements {
            let at = start + 1 + (i * stride) as usize;
            items.push(self.read_struct(
                segment,
                at,
                data_words as usize,
                ptr_count as usize,
                depth + 1,
            )?);
        }
        Ok(ListValue::Structs(items))
    }
}

/// The word index a near pointer (or landing pad) at `index` points to.
fn offset_target(index: usize, word: u64) -> Result<usize, Error> {
    // Bits 2..32 hold a signed word offset from the end of the pointer.
    let offset = i64::from((word as u32 as i32) >> 2);
    let target = index as i64 + 1 + offset;
    usize::try_from(target).map_err(|_| malformed("pointer offset out of bounds".to_owned()))
}
