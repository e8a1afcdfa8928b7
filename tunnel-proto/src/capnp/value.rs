//! The in-memory tree a Cap'n Proto message is decoded into and encoded from.
//!
//! A [`StructValue`] is a data section (64-bit words) plus pointer slots. Reading a
//! field outside the section yields the schema default (zero / null), as Cap'n Proto
//! requires for schema evolution; writing one grows the section. Typed schema code in
//! the sibling modules only ever touches this tree, never raw words.

use crate::Error;

/// Element size of a list whose elements are not pointers or structs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementSize {
    /// Zero bits per element.
    Void,
    /// One bit per element.
    Bit,
    /// One byte per element (`Text` and `Data`).
    Byte,
    /// Two bytes per element.
    TwoBytes,
    /// Four bytes per element.
    FourBytes,
    /// Eight bytes per element.
    EightBytes,
}

impl ElementSize {
    /// The 3-bit code in a list pointer.
    pub(crate) fn code(self) -> u64 {
        match self {
            Self::Void => 0,
            Self::Bit => 1,
            Self::Byte => 2,
            Self::TwoBytes => 3,
            Self::FourBytes => 4,
            Self::EightBytes => 5,
        }
    }

    /// Bits per element.
    pub(crate) fn bits(self) -> u64 {
        match self {
            Self::Void => 0,
            Self::Bit => 1,
            Self::Byte => 8,
            Self::TwoBytes => 16,
            Self::FourBytes => 32,
            Self::EightBytes => 64,
        }
    }

    /// The size for a 3-bit code, if it is not a pointer or composite list.
    pub(crate) fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => Self::Void,
            1 => Self::Bit,
            2 => Self::Byte,
            3 => Self::TwoBytes,
            4 => Self::FourBytes,
            5 => Self::EightBytes,
            _ => return None,
        })
    }
}

/// A struct: data words and pointer slots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StructValue {
    /// The data section, little-endian words.
    pub(crate) data: Vec<u64>,
    /// The pointer section.
    pub(crate) ptrs: Vec<Pointer>,
}

/// What a pointer slot holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Pointer {
    /// The null pointer: the field's default.
    #[default]
    Null,
    /// A struct.
    Struct(StructValue),
    /// A list.
    List(ListValue),
    /// A capability: an index into the message's cap table.
    Capability(u32),
}

/// A list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListValue {
    /// Primitive elements, kept as their packed little-endian bytes.
    Primitive {
        /// Size of each element.
        size: ElementSize,
        /// Number of elements.
        count: u32,
        /// `ceil(count * bits / 8)` bytes.
        bytes: Vec<u8>,
    },
    /// Pointer elements.
    Pointers(Vec<Pointer>),
    /// Struct elements (always written as a composite list).
    Structs(Vec<StructValue>),
}

static NULL: Pointer = Pointer::Null;
static EMPTY_STRUCT: StructValue = StructValue {
    data: Vec::new(),
    ptrs: Vec::new(),
};

impl StructValue {
    /// An all-zero struct with the given section sizes.
    pub(crate) fn new(data_words: usize, ptr_count: usize) -> Self {
        Self {
            data: vec![0; data_words],
            ptrs: vec![Pointer::Null; ptr_count],
        }
    }

    fn bits(&self, bit: usize, width: u32) -> u64 {
        let Some(word) = self.data.get(bit / 64) else {
            return 0;
        };
        let shifted = word >> (bit % 64);
        if width >= 64 {
            shifted
        } else {
            shifted & ((1u64 << width) - 1)
        }
    }

    fn set_bits(&mut self, bit: usize, width: u32, value: u64) {
        let index = bit / 64;
        if self.data.len() <= index {
            self.data.resize(index + 1, 0);
        }
        let shift = bit % 64;
        let mask = if width >= 64 {
            u64::MAX
        } else {
            ((1u64 << width) - 1) << shift
        };
        if let Some(word) = self.data.get_mut(index) {
            *word = (*word & !mask) | ((value << shift) & mask);
        }
    }

    /// The bool at bit offset `bit` of the data section.
    pub(crate) fn bool_at(&self, bit: usize) -> bool {
        self.bits(bit, 1) == 1
    }

    /// The UInt8 at byte offset `byte`.
    pub(crate) fn u8_at(&self, byte: usize) -> u8 {
        self.bits(byte * 8, 8) as u8
    }

    /// The UInt16 at byte offset `byte` (must be 2-aligned in the schema).
    pub(crate) fn u16_at(&self, byte: usize) -> u16 {
        self.bits(byte * 8, 16) as u16
    }

    /// The UInt32 at byte offset `byte` (must be 4-aligned in the schema).
    pub(crate) fn u32_at(&self, byte: usize) -> u32 {
        self.bits(byte * 8, 32) as u32
    }

    /// The UInt64 at byte offset `byte` (must be 8-aligned in the schema).
    pub(crate) fn u64_at(&self, byte: usize) -> u64 {
        self.bits(byte * 8, 64)
    }

    /// Sets the bool at bit offset `bit`.
    pub(crate) fn set_bool(&mut self, bit: usize, value: bool) {
        self.set_bits(bit, 1, u64::from(value));
    }

    /// Sets the UInt8 at byte offset `byte`.
    pub(crate) fn set_u8(&mut self, byte: usize, value: u8) {
        self.set_bits(byte * 8, 8, u64::from(value));
    }

    /// Sets the UInt16 at byte offset `byte`.
    pub(crate) fn set_u16(&mut self, byte: usize, value: u16) {
        self.set_bits(byte * 8, 16, u64::from(value));
    }

    /// Sets the UInt32 at byte offset `byte`.
    pub(crate) fn set_u32(&mut self, byte: usize, value: u32) {
        self.set_bits(byte * 8, 32, u64::from(value));
    }

    /// Sets the UInt64 at byte offset `byte`.
    pub(crate) fn set_u64(&mut self, byte: usize, value: u64) {
        self.set_bits(byte * 8, 64, value);
    }

    /// Pointer slot `index`, or null past the end of the section.
    pub(crate) fn ptr(&self, index: usize) -> &Pointer {
        self.ptrs.get(index).unwrap_or(&NULL)
    }

    /// Sets pointer slot `index`, growing the section if needed.
    pub(crate) fn set_ptr(&mut self, index: usize, value: Pointer) {
        if self.ptrs.len() <= index {
            self.ptrs.resize(index + 1, Pointer::Null);
        }
        if let Some(slot) = self.ptrs.get_mut(index) {
            *slot = value;
        }
    }

    /// The struct in slot `index`; null reads as the all-default struct.
    pub(crate) fn struct_at(
        &self,
        index: usize,
        what: &'static str,
    ) -> Result<&StructValue, Error> {
        match self.ptr(index) {
            Pointer::Null => Ok(&EMPTY_STRUCT),
            Pointer::Struct(s) => Ok(s),
            _ => Err(mismatch(what, "a struct")),
        }
    }

    /// The `Data` in slot `index`; null reads as empty.
    pub(crate) fn data_at(&self, index: usize, what: &'static str) -> Result<Vec<u8>, Error> {
        Ok(bytes_of(self.ptr(index), what)?.to_vec())
    }

    /// The `Text` in slot `index`; null reads as empty. The NUL terminator is removed.
    pub(crate) fn text_at(&self, index: usize, what: &'static str) -> Result<String, Error> {
        text_of(self.ptr(index), what)
    }

    /// The `List(Text)` in slot `index`; null reads as empty.
    pub(crate) fn text_list_at(
        &self,
        index: usize,
        what: &'static str,
    ) -> Result<Vec<String>, Error> {
        match self.ptr(index) {
            Pointer::Null => Ok(Vec::new()),
            Pointer::List(ListValue::Pointers(items)) => {
                items.iter().map(|p| text_of(p, what)).collect()
            }
            Pointer::List(ListValue::Primitive { count: 0, .. }) => Ok(Vec::new()),
            _ => Err(mismatch(what, "a list of text")),
        }
    }

    /// The struct list in slot `index`; null reads as empty.
    pub(crate) fn struct_list_at(
        &self,
        index: usize,
        what: &'static str,
    ) -> Result<&[StructValue], Error> {
        match self.ptr(index) {
            Pointer::Null => Ok(&[]),
            Pointer::List(ListValue::Structs(items)) => Ok(items),
            Pointer::List(ListValue::Primitive { count: 0, .. }) => Ok(&[]),
            Pointer::List(ListValue::Pointers(items)) if items.is_empty() => Ok(&[]),
            _ => Err(mismatch(what, "a list of structs")),
        }
    }

    /// Sets slot `index` to `Text`; the empty string is written as null, which reads
    /// back as empty.
    pub(crate) fn set_text(&mut self, index: usize, value: &str) {
        self.set_ptr(index, text_pointer(value));
    }

    /// Sets slot `index` to `Data`; empty data is written as null.
    pub(crate) fn set_data(&mut self, index: usize, value: &[u8]) {
        let pointer = if value.is_empty() {
            Pointer::Null
        } else {
            Pointer::List(ListValue::Primitive {
                size: ElementSize::Byte,
                count: len_u32(value.len()),
                bytes: value.to_vec(),
            })
        };
        self.set_ptr(index, pointer);
    }

    /// Sets slot `index` to a struct.
    pub(crate) fn set_struct(&mut self, index: usize, value: StructValue) {
        self.set_ptr(index, Pointer::Struct(value));
    }

    /// Sets slot `index` to a struct list (an empty list is still written, not null).
    pub(crate) fn set_struct_list(&mut self, index: usize, value: Vec<StructValue>) {
        self.set_ptr(index, Pointer::List(ListValue::Structs(value)));
    }

    /// Sets slot `index` to a `List(Text)`.
    pub(crate) fn set_text_list(&mut self, index: usize, value: &[String]) {
        let items = value.iter().map(|t| text_pointer(t)).collect();
        self.set_ptr(index, Pointer::List(ListValue::Pointers(items)));
    }
}

/// A `Text` pointer for `value`, including the NUL terminator; empty is null.
pub(crate) fn text_pointer(value: &str) -> Pointer {
    if value.is_empty() {
        return Pointer::Null;
    }
    let mut bytes = Vec::with_capacity(value.len() + 1);
    bytes.extend_from_slice(value.as_bytes());
    bytes.push(0);
    Pointer::List(ListValue::Primitive {
        size: ElementSize::Byte,
        count: len_u32(bytes.len()),
        bytes,
    })
}

/// Lengths we encode come from our own values; anything past `u32::MAX` cannot be
/// framed anyway, so it saturates instead of panicking.
pub(crate) fn len_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn bytes_of<'a>(pointer: &'a Pointer, what: &'static str) -> Result<&'a [u8], Error> {
    match pointer {
        Pointer::Null => Ok(&[]),
        Pointer::List(ListValue::Primitive {
            size: ElementSize::Byte,
            bytes,
            ..
        }) => Ok(bytes),
        Pointer::List(ListValue::Primitive { count: 0, .. }) => Ok(&[]),
        _ => Err(mismatch(what, "a byte list")),
    }
}

fn text_of(pointer: &Pointer, what: &'static str) -> Result<String, Error> {
    let bytes = bytes_of(pointer, what)?;
    // Text carries a NUL terminator on the wire; tolerate a peer that omits it.
    let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    String::from_utf8(bytes.to_vec()).map_err(|_| Error::Schema {
        structure: what,
        problem: "text is not valid utf-8".to_owned(),
    })
}

fn mismatch(what: &'static str, expected: &str) -> Error {
    Error::Schema {
        structure: what,
        problem: format!("expected {expected} pointer"),
    }
}
