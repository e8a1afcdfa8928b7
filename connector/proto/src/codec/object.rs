//! [`Object`]: an owned Cap'n Proto object (a struct or a list, with everything it
//! points to), apart from any message.
//!
//! The RPC state machines keep what a payload carries (call params, call results, an
//! echoed message) after the message's bytes are gone, and build params and results
//! before the message that carries them. An object is copied out of a message as it
//! is (section sizes and order kept, far pointers resolved), and copied into the
//! next one the same way, so what goes out has the layout the builders gave it.
//! Two objects are equal when their canonical forms are: the same values, however
//! they are laid out. The copies hold no capabilities (the copy fails on one).

use capnp::message::{self, HeapAllocator, ReaderOptions, ReaderSegments};
use capnp::traits::{Owned, SetterInput};
use capnp::{Word, any_pointer};

use super::frame::{builder, options};
use crate::Error;

/// The largest copy (in words) the `capnp` crate starts a segment with.
const MAX_WORDS: u64 = 1 << 29;

/// An owned object: segments whose first word is the root pointer.
#[derive(Clone)]
pub(crate) struct Object {
    segments: Vec<Vec<Word>>,
}

impl Object {
    /// The null object: reads as a struct of all defaults.
    pub(crate) fn null() -> Self {
        Self {
            segments: vec![Word::allocate_zeroed_vec(1)],
        }
    }

    /// Copies `value`, whose content (as `total_size` counts it) is `words` words.
    pub(crate) fn copy<T: Owned>(value: impl SetterInput<T>, words: u64) -> Result<Self, Error> {
        let words = words.saturating_add(1);
        if words > MAX_WORDS {
            return Err(Error::CapnpLimit(format!(
                "object of {words} words is too large to keep"
            )));
        }
        // A first segment that holds the whole copy (the total size is what a copy
        // takes, without far pointers); a larger copy would only take more segments.
        let mut message = builder(words as usize);
        message.set_root(value).map_err(|source| Error::Capnp {
            context: Some("cannot copy object"),
            source,
        })?;
        Ok(Self::of_builder(&message))
    }

    /// Copies the object a pointer points to.
    pub(crate) fn of_pointer(value: any_pointer::Reader<'_>) -> Result<Self, Error> {
        let size = value.target_size().map_err(|source| Error::Capnp {
            context: None,
            source,
        })?;
        Self::copy::<any_pointer::Owned>(value, size.word_count)
    }

    /// A struct of type `T` filled in by `fill`.
    pub(crate) fn build<T: Owned>(fill: impl for<'b> FnOnce(T::Builder<'b>)) -> Self {
        let mut message = builder(64);
        fill(message.init_root::<T::Builder<'_>>());
        Self::of_builder(&message)
    }

    fn of_builder(message: &message::Builder<HeapAllocator>) -> Self {
        let segments = message
            .get_segments_for_output()
            .iter()
            .map(|bytes| {
                let mut words = Word::allocate_zeroed_vec(bytes.len() / 8);
                Word::words_to_bytes_mut(&mut words).copy_from_slice(bytes);
                words
            })
            .collect();
        Self { segments }
    }

    /// A message reader over the object, to read its root with.
    pub(crate) fn reader(&self) -> message::Reader<&Self> {
        message::Reader::new(self, self.options())
    }

    fn options(&self) -> ReaderOptions {
        options(self.segments.iter().map(|s| s.len() as u64).sum())
    }
}

impl ReaderSegments for Object {
    fn get_segment(&self, index: u32) -> Option<&[u8]> {
        let segment = self.segments.get(usize::try_from(index).ok()?)?;
        Some(Word::words_to_bytes(segment))
    }

    fn len(&self) -> usize {
        self.segments.len()
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        match (self.reader().canonicalize(), other.reader().canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            // Not canonicalizable (never so for the objects kept here): compare as laid out.
            _ => self.segments == other.segments,
        }
    }
}

impl Eq for Object {}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: usize = self.segments.iter().map(Vec::len).sum();
        write!(f, "Object({words} words)")
    }
}
