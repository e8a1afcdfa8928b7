//! The preamble of edge-opened streams (PROTOCOL.md §4.1): a 6-byte signature saying what
//! the stream carries, then for data streams the 2-byte ASCII version `"01"`.
//!
//! Data streams carry the preamble in both directions; RPC streams only from the
//! edge, without version bytes. The control stream has no preamble at all. The
//! helpers here read exactly the preamble (and, for whole data-stream heads, exactly
//! one message after it) and report how many bytes they consumed.

use super::Decoded;
use super::connect::{ConnectRequest, ConnectResponse};
use crate::Error;

/// The signature that opens a data stream.
pub const DATA_STREAM_SIGNATURE: [u8; 6] = [0x0A, 0x36, 0xCD, 0x12, 0xA1, 0x3E];
/// The signature that opens an edge-to-connector RPC stream.
pub const RPC_STREAM_SIGNATURE: [u8; 6] = [0x52, 0xBB, 0x82, 0x5C, 0xDB, 0x65];
/// The protocol version after a data-stream signature.
pub const DATA_STREAM_VERSION: [u8; 2] = *b"01";
/// Length of a data-stream preamble (signature and version).
pub const DATA_PREAMBLE_LEN: usize = 8;

/// What an edge-opened stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// A request stream; `version` is whatever the peer sent (cloudflared ignores it).
    Data {
        /// The two version bytes, normally `"01"`.
        version: [u8; 2],
    },
    /// An RPC stream (edge as RPC client, connector as server).
    Rpc,
}

/// Reads a stream preamble from the front of `buf`: 8 bytes for a data stream, 6 for
/// an RPC stream. A signature that can no longer match either is an error as soon as
/// its first differing byte arrives.
pub fn decode_preamble(buf: &[u8]) -> Result<Decoded<StreamKind>, Error> {
    let seen = &buf[..buf.len().min(6)];
    let data = DATA_STREAM_SIGNATURE.starts_with(seen);
    let rpc = RPC_STREAM_SIGNATURE.starts_with(seen);
    if !data && !rpc {
        let mut signature = [0u8; 6];
        signature[..seen.len()].copy_from_slice(seen);
        return Err(Error::UnknownSignature(signature));
    }
    if seen.len() < 6 {
        return Ok(Decoded::Incomplete { needed: 6 });
    }
    if rpc {
        return Ok(Decoded::Complete {
            value: StreamKind::Rpc,
            consumed: 6,
        });
    }
    match buf.get(6..DATA_PREAMBLE_LEN) {
        Some(&[a, b]) => Ok(Decoded::Complete {
            value: StreamKind::Data { version: [a, b] },
            consumed: DATA_PREAMBLE_LEN,
        }),
        _ => Ok(Decoded::Incomplete {
            needed: DATA_PREAMBLE_LEN,
        }),
    }
}

/// Appends the data-stream preamble to `out`.
pub fn encode_data_preamble(out: &mut Vec<u8>) {
    out.extend_from_slice(&DATA_STREAM_SIGNATURE);
    out.extend_from_slice(&DATA_STREAM_VERSION);
}

/// The bytes the edge writes first on a request stream: preamble, then the request,
/// in one buffer so they go out in one write.
pub fn encode_request_head(request: &ConnectRequest) -> Vec<u8> {
    let mut out = Vec::new();
    encode_data_preamble(&mut out);
    out.extend_from_slice(&request.encode());
    out
}

/// The bytes the connector writes first on its reply: preamble, then the response.
pub fn encode_response_head(response: &ConnectResponse) -> Vec<u8> {
    let mut out = Vec::new();
    encode_data_preamble(&mut out);
    out.extend_from_slice(&response.encode());
    out
}

/// Reads a data-stream preamble followed by one message with `decode`, consuming
/// nothing past that message.
fn decode_head<T>(
    buf: &[u8],
    decode: impl FnOnce(&[u8]) -> Result<Decoded<T>, Error>,
) -> Result<Decoded<T>, Error> {
    let start = match decode_preamble(buf)? {
        Decoded::Complete {
            value: StreamKind::Data { .. },
            consumed,
        } => consumed,
        Decoded::Complete {
            value: StreamKind::Rpc,
            ..
        } => return Err(Error::UnexpectedRpcStream),
        Decoded::Incomplete { needed } => return Ok(Decoded::Incomplete { needed }),
    };
    let rest = buf.get(start..).unwrap_or(&[]);
    Ok(match decode(rest)? {
        Decoded::Complete { value, consumed } => Decoded::Complete {
            value,
            consumed: start + consumed,
        },
        Decoded::Incomplete { needed } => Decoded::Incomplete {
            needed: start + needed,
        },
    })
}

/// Reads the head of a request stream (connector side): preamble and `ConnectRequest`.
pub fn decode_request_head(buf: &[u8]) -> Result<Decoded<ConnectRequest>, Error> {
    decode_head(buf, ConnectRequest::decode)
}

/// Reads the head of a reply (edge side): preamble and `ConnectResponse`.
pub fn decode_response_head(buf: &[u8]) -> Result<Decoded<ConnectResponse>, Error> {
    decode_head(buf, ConnectResponse::decode)
}

#[cfg(test)]
mod tests;
