//! The Cap'n Proto layer under the schema modules, on top of the `capnp` crate:
//! framing and decode limits, owned copies of objects, capability indexes and the
//! mapping of `capnp` errors.
//!
//! [`read`] finds one framed message (unpacked stream framing) at the front of a
//! buffer and opens exactly those bytes with the decode limits; [`write`] frames a
//! built message. The typed readers and builders are generated (`crate::generated`);
//! `connect`, `registration` and `rpc` map them to Rust values. Nothing here looks
//! at a byte past the message it was asked to decode, and peer bytes never panic:
//! every failure is an [`Error`](crate::Error).

mod cap;
mod fields;
mod frame;
mod object;

pub(crate) use cap::{read_capability, write_capability};
pub(crate) use fields::{data, field, field_error, list_len, set_enum, text};
pub(crate) use frame::{builder, read, root, write};
pub(crate) use object::Object;

#[cfg(test)]
pub(crate) use frame::{MAX_MESSAGE_BYTES, MAX_SEGMENTS};

#[cfg(test)]
mod tests;
