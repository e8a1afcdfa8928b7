//! A small hand-written Cap'n Proto codec: unpacked stream framing, segments and
//! pointers, with no schema compiler.
//!
//! Messages are decoded into a [`StructValue`] tree ([`decode_message`]) and encoded
//! from one ([`encode_message`]); the schema modules (`registration`, `rpc`,
//! `connect`) map that tree to typed Rust values. The decoder follows multi-segment
//! messages and far pointers as peers may send them; the encoder always writes one
//! segment. It must never read past the message it was asked to decode, and never
//! panic on peer bytes.

mod read;
mod value;
mod write;

pub(crate) use read::decode_message;
pub(crate) use value::{Pointer, StructValue};
pub(crate) use write::encode_message;

#[cfg(test)]
mod tests;
