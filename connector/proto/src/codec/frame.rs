//! One framed message: where it ends, the limits it is opened with, and the bytes a
//! built message becomes.
//!
//! The stream framing is a segment table (`u32` segment count minus one, one `u32`
//! word count per segment, padded to a word) followed by the segments. [`read`]
//! parses the table itself so that a partial message is reported as
//! [`Decoded::Incomplete`] with the length it needs, and so that the segment and
//! size limits are checked before any segment has arrived; then the `capnp` crate
//! reads exactly the message's bytes, never what follows them (a request body, the
//! next RPC message).

use capnp::message::{self, HeapAllocator, ReaderOptions};
use capnp::serialize::{self, BufferSegments};
use capnp::traits::FromPointerReader;

use crate::{Decoded, Error};

/// At most this many segments per message: the `capnp` crate refuses 512 or more
/// (cloudflared allows 512; no peer comes near either).
pub(crate) const MAX_SEGMENTS: u64 = 511;
/// At most this many bytes of segments per message (cloudflared's limit, 64 MiB).
pub(crate) const MAX_MESSAGE_BYTES: u64 = 64 * 1024 * 1024;
/// Deepest pointer nesting followed (the `capnp` crate's default, and cloudflared's).
const NESTING_LIMIT: i32 = 64;
/// Words a builder may start with: the `capnp` crate's largest segment.
const MAX_FIRST_SEGMENT_WORDS: usize = 1 << 29;

/// A message opened on the bytes it was framed in.
pub(crate) type Message<'a> = message::Reader<Segments<'a>>;

/// Where a framed message's segments are in its bytes. Nearly every message has one
/// segment, found without the table of segment bounds the crate would allocate.
pub(crate) enum Segments<'a> {
    /// The only segment.
    One(&'a [u8]),
    /// Several segments, through the `capnp` crate's table.
    Many(BufferSegments<&'a [u8]>),
}

impl message::ReaderSegments for Segments<'_> {
    fn get_segment(&self, index: u32) -> Option<&[u8]> {
        match self {
            Self::One(segment) => (index == 0).then_some(*segment),
            Self::Many(segments) => segments.get_segment(index),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Many(segments) => segments.len(),
        }
    }
}

/// The reader options for a message of `words` segment words: nesting as deep as
/// [`NESTING_LIMIT`] and a traversal budget of eight times the message plus 64
/// words, so that pointers sharing or overlapping content cannot make a small
/// message cost more than a linear amount of work.
pub(crate) fn options(words: u64) -> ReaderOptions {
    let budget = words.saturating_mul(8).saturating_add(64);
    ReaderOptions {
        traversal_limit_in_words: Some(usize::try_from(budget).unwrap_or(usize::MAX)),
        nesting_limit: NESTING_LIMIT,
    }
}

/// Opens the first framed message in `buf`; `consumed` is its length in bytes.
pub(crate) fn read(buf: &[u8]) -> Result<Decoded<Message<'_>>, Error> {
    let (words, len) = match frame(buf)? {
        Decoded::Complete { value, consumed } => (value, consumed),
        Decoded::Incomplete { needed } => return Ok(Decoded::Incomplete { needed }),
    };
    let bytes = buf.get(..len).unwrap_or(buf);
    let segments = if read_u32(bytes, 0) == Some(0) {
        // One segment: the table is this word, the segment all the rest.
        Segments::One(bytes.get(8..).unwrap_or_default())
    } else {
        let mut bytes = bytes;
        let message = serialize::read_message_from_flat_slice(&mut bytes, options(words))
            .map_err(malformed)?;
        Segments::Many(message.into_segments())
    };
    Ok(Decoded::Complete {
        value: message::Reader::new(segments, options(words)),
        consumed: len,
    })
}

/// The message's root struct.
pub(crate) fn root<'a, T: FromPointerReader<'a>, S: message::ReaderSegments>(
    message: &'a message::Reader<S>,
) -> Result<T, Error> {
    message.get_root().map_err(malformed)
}

/// An empty message whose first segment holds `words` words, so that a message of
/// that size is built in one segment (a smaller hint only costs more segments).
pub(crate) fn builder(words: usize) -> message::Builder<HeapAllocator> {
    let words = u32::try_from(words.clamp(1, MAX_FIRST_SEGMENT_WORDS)).unwrap_or(1);
    message::Builder::new(HeapAllocator::new().first_segment_words(words))
}

/// The framed bytes of a built message.
pub(crate) fn write(message: &message::Builder<HeapAllocator>) -> Vec<u8> {
    serialize::write_message_to_words(message)
}

/// Reads the segment table at the front of `buf`: the message's segment words and,
/// as `consumed`, its total length in bytes. Limits are checked as soon as the table
/// is known, before waiting for the segments.
fn frame(buf: &[u8]) -> Result<Decoded<u64>, Error> {
    let Some(first) = read_u32(buf, 0) else {
        return Ok(Decoded::Incomplete { needed: 4 });
    };
    let segments = u64::from(first) + 1;
    if segments > MAX_SEGMENTS {
        return Err(Error::CapnpLimit(format!(
            "{segments} segments exceeds the limit of {MAX_SEGMENTS}"
        )));
    }
    // Bounded by MAX_SEGMENTS, so these conversions and sums cannot overflow.
    let segments = segments as usize;
    let table_len = (4 + 4 * segments).next_multiple_of(8);
    if buf.len() < table_len {
        return Ok(Decoded::Incomplete { needed: table_len });
    }
    let words: u64 = (0..segments)
        .map(|i| u64::from(read_u32(buf, 4 + 4 * i).unwrap_or(0)))
        .sum();
    if words * 8 > MAX_MESSAGE_BYTES {
        return Err(Error::CapnpLimit(format!(
            "{} bytes of segments exceeds the limit of {MAX_MESSAGE_BYTES}",
            words * 8
        )));
    }
    // Bounded by MAX_MESSAGE_BYTES above.
    let len = table_len + words as usize * 8;
    if buf.len() < len {
        return Ok(Decoded::Incomplete { needed: len });
    }
    Ok(Decoded::Complete {
        value: words,
        consumed: len,
    })
}

fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let bytes = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

fn malformed(error: capnp::Error) -> Error {
    Error::Capnp {
        context: None,
        source: error,
    }
}
