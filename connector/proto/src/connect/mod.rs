//! `ConnectRequest` / `ConnectResponse` (`quic_metadata_protocol.capnp`, PROTOCOL.md §4.2).
//!
//! One framed Cap'n Proto message follows the data-stream preamble in each direction.
//! Decoding consumes exactly that message and reports how many bytes it used;
//! everything after it is the stream body and is never looked at here. Every field
//! is read into owned values through the generated readers, and encoding writes the
//! fields in pointer order, depth first, with empty text as null (the layout
//! PROTOCOL.md §4.2 derives). For the preamble itself see `preamble`; for the
//! metadata keys see `metadata`.

use capnp::struct_list;

use super::Decoded;
use crate::Error;
use crate::codec::{self, field, list_len, set_enum, text};
use crate::generated::quic_metadata_protocol_capnp::{
    self as schema, connect_request, connect_response, metadata,
};

/// `ConnectionType` (UInt16 enum): what an edge-opened data stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionType {
    /// 0: an HTTP request.
    Http,
    /// 1: a websocket upgrade.
    Websocket,
    /// 2: a raw TCP flow (private network); `dest` is `IP:port`.
    Tcp,
    /// A value this version does not know; kept so it can be refused explicitly.
    Unknown(u16),
}

impl ConnectionType {
    /// The wire value.
    pub fn to_u16(self) -> u16 {
        match self {
            Self::Http => 0,
            Self::Websocket => 1,
            Self::Tcp => 2,
            Self::Unknown(v) => v,
        }
    }

    /// The type for a wire value.
    pub fn from_u16(value: u16) -> Self {
        match value {
            0 => Self::Http,
            1 => Self::Websocket,
            2 => Self::Tcp,
            v => Self::Unknown(v),
        }
    }
}

/// `Metadata` (0 / 2): one key/value pair.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Metadata {
    /// `key @0 :Text` (ptr 0); case-sensitive.
    pub key: String,
    /// `val @1 :Text` (ptr 1).
    pub val: String,
}

impl Metadata {
    /// A pair from anything string-like.
    pub fn new(key: impl Into<String>, val: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            val: val.into(),
        }
    }

    fn write(&self, mut b: metadata::Builder<'_>) {
        if !self.key.is_empty() {
            b.set_key(self.key.as_str());
        }
        if !self.val.is_empty() {
            b.set_val(self.val.as_str());
        }
    }

    fn read(r: metadata::Reader<'_>) -> Result<Self, Error> {
        Ok(Self {
            key: text("Metadata.key", r.get_key())?,
            val: text("Metadata.val", r.get_val())?,
        })
    }

    /// The words this entry takes: its two pointers and its two texts.
    fn words(&self) -> usize {
        2 + text_words(&self.key) + text_words(&self.val)
    }
}

/// The words a `Text` takes, with its NUL; empty text is written as null.
fn text_words(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        (text.len() + 1).div_ceil(8)
    }
}

/// The words a metadata list takes: its tag word and its entries.
fn metadata_words(metadata: &[Metadata]) -> usize {
    1 + metadata.iter().map(Metadata::words).sum::<usize>()
}

fn write_metadata(mut list: struct_list::Builder<'_, metadata::Owned>, metadata: &[Metadata]) {
    for (i, entry) in (0..).zip(metadata) {
        entry.write(list.reborrow().get(i));
    }
}

fn read_metadata(
    what: &'static str,
    list: capnp::Result<struct_list::Reader<'_, metadata::Owned>>,
) -> Result<Vec<Metadata>, Error> {
    field(what, list)?.iter().map(Metadata::read).collect()
}

/// `ConnectRequest` (1 / 2): edge → connector, first message on a data stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectRequest {
    /// `dest @0 :Text` (ptr 0): absolute URL for HTTP and websocket, `IP:port` for TCP.
    pub dest: String,
    /// `type @1 :ConnectionType` (UInt16 at byte 0).
    pub kind: ConnectionType,
    /// `metadata @2 :List(Metadata)` (ptr 1).
    pub metadata: Vec<Metadata>,
}

impl ConnectRequest {
    /// The request as one framed Cap'n Proto message (no preamble).
    pub fn encode(&self) -> Vec<u8> {
        // Root pointer, 1 data word and 2 pointers, then the texts and the list.
        let words = 4 + text_words(&self.dest) + metadata_words(&self.metadata);
        let mut message = codec::builder(words);
        let mut root = message.init_root::<connect_request::Builder<'_>>();
        if !self.dest.is_empty() {
            root.set_dest(self.dest.as_str());
        }
        match schema::ConnectionType::try_from(self.kind.to_u16()) {
            Ok(kind) => root.set_type(kind),
            Err(capnp::NotInSchema(value)) => {
                // `type` is an enum field of ConnectRequest in the compiled-in schema,
                // the only thing setting it through the schema can fail on.
                set_enum::<schema::ConnectionType>(root.reborrow(), "type", value)
                    .expect("ConnectRequest.type is an enum field");
            }
        }
        write_metadata(
            root.init_metadata(list_len(self.metadata.len())),
            &self.metadata,
        );
        codec::write(&message)
    }

    /// Decodes exactly one framed message from the front of `buf` (no preamble).
    pub fn decode(buf: &[u8]) -> Result<Decoded<Self>, Error> {
        let (message, consumed) = match codec::read(buf)? {
            Decoded::Complete { value, consumed } => (value, consumed),
            Decoded::Incomplete { needed } => return Ok(Decoded::Incomplete { needed }),
        };
        let root: connect_request::Reader<'_> = codec::root(&message)?;
        let kind = match root.get_type() {
            Ok(kind) => u16::from(kind),
            Err(capnp::NotInSchema(value)) => value,
        };
        let request = Self {
            dest: text("ConnectRequest.dest", root.get_dest())?,
            kind: ConnectionType::from_u16(kind),
            metadata: read_metadata("ConnectRequest.metadata", root.get_metadata())?,
        };
        Ok(Decoded::Complete {
            value: request,
            consumed,
        })
    }

    /// The values of every metadata entry with exactly this key, in order.
    pub fn metadata_values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.metadata
            .iter()
            .filter(move |m| m.key == key)
            .map(|m| m.val.as_str())
    }
}

/// `ConnectResponse` (0 / 2): connector → edge, first message on the reply side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectResponse {
    /// `error @0 :Text` (ptr 0): empty means success.
    pub error: String,
    /// `metadata @1 :List(Metadata)` (ptr 1).
    pub metadata: Vec<Metadata>,
}

impl ConnectResponse {
    /// A failure before any response head: the edge turns it into its own 502.
    pub fn failure(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            metadata: Vec::new(),
        }
    }

    /// Whether this is a success (empty `error`).
    pub fn is_success(&self) -> bool {
        self.error.is_empty()
    }

    /// The response as one framed Cap'n Proto message (no preamble).
    pub fn encode(&self) -> Vec<u8> {
        // Root pointer, 0 data words and 2 pointers, then the text and the list.
        let words = 3 + text_words(&self.error) + metadata_words(&self.metadata);
        let mut message = codec::builder(words);
        let mut root = message.init_root::<connect_response::Builder<'_>>();
        if !self.error.is_empty() {
            root.set_error(self.error.as_str());
        }
        write_metadata(
            root.init_metadata(list_len(self.metadata.len())),
            &self.metadata,
        );
        codec::write(&message)
    }

    /// Decodes exactly one framed message from the front of `buf` (no preamble).
    pub fn decode(buf: &[u8]) -> Result<Decoded<Self>, Error> {
        let (message, consumed) = match codec::read(buf)? {
            Decoded::Complete { value, consumed } => (value, consumed),
            Decoded::Incomplete { needed } => return Ok(Decoded::Incomplete { needed }),
        };
        let root: connect_response::Reader<'_> = codec::root(&message)?;
        let response = Self {
            error: text("ConnectResponse.error", root.get_error())?,
            metadata: read_metadata("ConnectResponse.metadata", root.get_metadata())?,
        };
        Ok(Decoded::Complete {
            value: response,
            consumed,
        })
    }
}

#[cfg(test)]
mod tests;
