//! `ConnectRequest` / `ConnectResponse` (`quic_metadata_protocol.capnp`, PROTOCOL.md §4.2).
//!
//! One framed Cap'n Proto message follows the data-stream preamble in each direction.
//! Decoding consumes exactly that message and reports how many bytes it used;
//! everything after it is the stream body and is never looked at here. For the
//! preamble itself see `preamble`; for the metadata keys see `metadata`.

use super::Decoded;
use super::capnp::{StructValue, decode_message, encode_message};
use crate::Error;

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

    fn to_struct(&self) -> StructValue {
        let mut s = StructValue::new(0, 2);
        s.set_text(0, &self.key);
        s.set_text(1, &self.val);
        s
    }

    fn from_struct(s: &StructValue) -> Result<Self, Error> {
        Ok(Self {
            key: s.text_at(0, "Metadata.key")?,
            val: s.text_at(1, "Metadata.val")?,
        })
    }
}

fn metadata_list(
    s: &StructValue,
    index: usize,
    what: &'static str,
) -> Result<Vec<Metadata>, Error> {
    s.struct_list_at(index, what)?
        .iter()
        .map(Metadata::from_struct)
        .collect()
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
        let mut s = StructValue::new(1, 2);
        s.set_text(0, &self.dest);
        s.set_u16(0, self.kind.to_u16());
        s.set_struct_list(1, self.metadata.iter().map(Metadata::to_struct).collect());
        encode_message(&s)
    }

    /// Decodes exactly one framed message from the front of `buf` (no preamble).
    pub fn decode(buf: &[u8]) -> Result<Decoded<Self>, Error> {
        let (value, consumed) = match decode_message(buf)? {
            Decoded::Complete { value, consumed } => (value, consumed),
            Decoded::Incomplete { needed } => return Ok(Decoded::Incomplete { needed }),
        };
        let request = Self {
            dest: value.text_at(0, "ConnectRequest.dest")?,
            kind: ConnectionType::from_u16(value.u16_at(0)),
            metadata: metadata_list(&value, 1, "ConnectRequest.metadata")?,
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
        let mut s = StructValue::new(0, 2);
        s.set_text(0, &self.error);
        s.set_struct_list(1, self.metadata.iter().map(Metadata::to_struct).collect());
        encode_message(&s)
    }

    /// Decodes exactly one framed message from the front of `buf` (no preamble).
    pub fn decode(buf: &[u8]) -> Result<Decoded<Self>, Error> {
        match decode_message(buf)? {
            Decoded::Complete { value, consumed } => Ok(Decoded::Complete {
                value: Self {
                    error: value.text_at(0, "ConnectResponse.error")?,
                    metadata: metadata_list(&value, 1, "ConnectResponse.metadata")?,
                },
                consumed,
            }),
            Decoded::Incomplete { needed } => Ok(Decoded::Incomplete { needed }),
        }
    }
}

#[cfg(test)]
mod tests;
