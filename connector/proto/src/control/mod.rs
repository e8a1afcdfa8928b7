//! The control stream (PROTOCOL.md §3): two-party Cap'n Proto RPC in unpacked framing, the
//! connector as RPC client and the edge as RPC server whose bootstrap capability is a
//! `RegistrationServer`.
//!
//! [`ControlClient`] is the connector's side: it sends `Bootstrap`, pipelines
//! `registerConnection` on the unresolved bootstrap answer, and later
//! `updateLocalConfiguration` and `unregisterConnection`. [`ControlServer`] is the
//! edge's side for the simulator: it answers the bootstrap, accepts calls aimed at
//! either the promised answer or the import, and hands each call to its owner as an
//! event to answer whenever it likes (so a simulator can delay the unregister reply).
//!
//! Both are sans-IO: `handle_input(bytes, now)` takes whatever the stream delivered,
//! `poll_transmit` appends bytes to write, `poll_event` yields what happened and
//! `poll_timeout` / `handle_timeout` drive the RPC timeout with injected time.

mod client;
mod server;

pub use client::{ClientEvent, ControlClient, DEFAULT_RPC_TIMEOUT};
pub use server::{ControlServer, ServerCallId, ServerEvent};

use super::Decoded;
use crate::Error;
use crate::rpc::Message;

/// The reason cloudflared puts in the `Abort` it sends when it closes the RPC
/// connection normally.
pub const SHUTDOWN_REASON: &str = "rpc: shutdown";

/// Bytes received but not yet decoded into whole messages.
#[derive(Debug, Default)]
struct Inbox {
    buf: Vec<u8>,
}

impl Inbox {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, if one has fully arrived.
    fn next_message(&mut self) -> Result<Option<Message>, Error> {
        match Message::decode(&self.buf)? {
            Decoded::Complete { value, consumed } => {
                self.buf.drain(..consumed.min(self.buf.len()));
                Ok(Some(value))
            }
            Decoded::Incomplete { .. } => Ok(None),
        }
    }
}

/// Moves all pending output into `out`; returns how many bytes were appended.
fn drain_into(outbox: &mut Vec<u8>, out: &mut Vec<u8>) -> usize {
    let n = outbox.len();
    out.append(outbox);
    n
}

#[cfg(test)]
mod tests;
