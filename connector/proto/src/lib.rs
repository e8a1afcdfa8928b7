//! The sans-IO Cloudflare Tunnel protocol core (`connector/PROTOCOL.md`), a crate of
//! its own so that Cargo keeps it free of runtimes, sockets and clocks (its only
//! dependencies are codecs), as `quinn-proto` is to `quinn`.
//!
//! Everything here is pure: bytes and events go in through `handle_*(…, now)`, bytes,
//! deadlines and events come out of `poll_*()`. There are no sockets, no runtime and
//! no clock; time is always an argument and every random value (client ID, connection
//! UUID) is chosen by the caller. The QUIC driver and the edge simulator sit on top.
//!
//! Where to start reading:
//! * [`token`]: the `--token` credential ([`TunnelToken`]).
//! * [`control`]: the control stream, [`ControlClient`] (connector) and
//!   [`ControlServer`] (edge), speaking two-party Cap'n Proto RPC.
//! * [`registration`]: the `RegistrationServer` argument and result structures.
//! * [`preamble`] and [`connect`]: the data-stream signature and the
//!   `ConnectRequest` / `ConnectResponse` codec.
//! * [`metadata`]: the metadata key conventions and HTTP conversions.
//! * [`http2`]: the HTTP/2 transport's stream marking and serialized response headers.
//! * [`reconnect`] and [`backoff`]: what a connection does after an attempt ended
//!   (where, over which transport, after what jittered delay).
//!
//! Internal: `generated` (the readers and builders generated from `schema/*.capnp`),
//! `codec` (framing and decode limits on the `capnp` crate) and `rpc` (the RPC
//! message structures).
#![forbid(unsafe_code)]

pub mod backoff;
mod codec;
pub mod connect;
pub mod control;
mod error;
mod generated;
pub mod http2;
pub mod metadata;
pub mod preamble;
pub mod reconnect;
pub mod registration;
mod rpc;
pub mod schema;
pub mod token;
pub mod uuid;

pub use connect::{ConnectRequest, ConnectResponse, ConnectionType, Metadata};
pub use control::{ClientEvent, ControlClient, ControlServer, ServerCallId, ServerEvent};
pub use error::Error;
pub use preamble::StreamKind;
pub use registration::{
    ClientInfo, ConnectionDetails, ConnectionError, ConnectionOptions, ConnectionResponse,
    RegisterConnection, RegistrationError, TunnelAuth,
};
pub use token::TunnelToken;
pub use uuid::Uuid;

/// The result of decoding from a byte buffer that may hold only part of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded<T> {
    /// A whole value was decoded from the first `consumed` bytes. Bytes after those
    /// were not looked at and belong to whatever follows (a body, the next message).
    Complete {
        /// The decoded value.
        value: T,
        /// How many bytes of the buffer it occupied.
        consumed: usize,
    },
    /// The buffer ends early: call again once it holds at least `needed` bytes in total
    /// (more may be asked for after that, as more of the header becomes known).
    Incomplete {
        /// The minimum total buffer length for the next attempt.
        needed: usize,
    },
}

impl<T> Decoded<T> {
    /// Applies `f` to a complete value, keeping `consumed`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Decoded<U> {
        match self {
            Self::Complete { value, consumed } => Decoded::Complete {
                value: f(value),
                consumed,
            },
            Self::Incomplete { needed } => Decoded::Incomplete { needed },
        }
    }
}
