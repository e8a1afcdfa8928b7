//! Fuzz bytes read as a stream of choices: a target that builds a value (a method,
//! a framing, a split offset) takes bytes off the front and reads zeros once they
//! run out, so every input, however short, makes a value.

/// The bytes not consumed yet.
pub(crate) struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The next byte, 0 once the input is used up.
    pub(crate) fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&first, rest)) => {
                self.bytes = rest;
                first
            }
            None => 0,
        }
    }

    /// A number below `bound` (which must not be 0) from the next byte.
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        usize::from(self.byte()) % bound
    }

    /// A number from the next `len` bytes (at most 8), little-endian.
    pub(crate) fn number(&mut self, len: usize) -> u64 {
        (0..len.min(8)).fold(0, |n, at| n | (u64::from(self.byte()) << (8 * at)))
    }

    /// The next `len` bytes, or fewer when the input ends first.
    pub(crate) fn take(&mut self, len: usize) -> &'a [u8] {
        let (taken, rest) = self.bytes.split_at(len.min(self.bytes.len()));
        self.bytes = rest;
        taken
    }

    /// Everything left.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }
}

/// Up to `count` offsets into a message of `len` bytes at which to cut it in two: all
/// of them for a short message, else `seed`'s choice, the ends, the middle and
/// evenly spaced ones. Sorted, without repeats.
pub(crate) fn split_offsets(len: usize, seed: u8, count: usize) -> Vec<usize> {
    let mut offsets: Vec<usize> = if len < count {
        (0..=len).collect()
    } else {
        let spaced = (1..count.saturating_sub(4)).map(|k| k * len / count.saturating_sub(4));
        [0, 1, len / 2, len - 1, usize::from(seed) % (len + 1)]
            .into_iter()
            .chain(spaced)
            .collect()
    };
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}
