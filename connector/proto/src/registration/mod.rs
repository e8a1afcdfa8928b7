//! `RegistrationServer` arguments and results (PROTOCOL.md §3.3, §3.4).
//!
//! Typed structures for `registerConnection` (params [`RegisterConnection`], result
//! [`ConnectionResponse`]) and their nested structs, plus [`RegistrationError`], the
//! connector's classification of a failed registration. Their mapping to and from
//! the generated `tunnelrpc.capnp` readers and builders is in `codec`. Both
//! directions exist: the connector encodes params and decodes results, the edge
//! simulator the reverse.

mod codec;

use std::time::Duration;

use super::uuid::Uuid;

pub(crate) use codec::{
    empty_results, read_update_local_configuration, register_params, register_results,
    unregister_params, update_local_configuration_params,
};

/// `TunnelAuth` (0 data words / 2 pointers).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TunnelAuth {
    /// `accountTag @0 :Text` (ptr 0).
    pub account_tag: String,
    /// `tunnelSecret @1 :Data` (ptr 1): the raw secret bytes.
    pub tunnel_secret: Vec<u8>,
}

impl std::fmt::Debug for TunnelAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunnelAuth")
            .field("account_tag", &self.account_tag)
            .field(
                "tunnel_secret",
                &format_args!("<{} bytes>", self.tunnel_secret.len()),
            )
            .finish()
    }
}

/// `ClientInfo` (0 / 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    /// `clientId @0 :Data` (ptr 0): the 16-byte connector UUID, one per process.
    pub client_id: Vec<u8>,
    /// `features @1 :List(Text)` (ptr 1), e.g. `serialized_headers`.
    pub features: Vec<String>,
    /// `version @2 :Text` (ptr 2).
    pub version: String,
    /// `arch @3 :Text` (ptr 3), `GOOS_GOARCH` style, e.g. `linux_amd64`.
    pub arch: String,
}

/// `ConnectionOptions` (1 / 2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// `client @0 :ClientInfo` (ptr 0).
    pub client: ClientInfo,
    /// `originLocalIp @1 :Data` (ptr 1): IP bytes, informational only.
    pub origin_local_ip: Vec<u8>,
    /// `replaceExisting @2 :Bool` (bit 0).
    pub replace_existing: bool,
    /// `compressionQuality @3 :UInt8` (byte 1).
    pub compression_quality: u8,
    /// `numPreviousAttempts @4 :UInt8` (byte 2): backoff retries so far.
    pub num_previous_attempts: u8,
}

/// `registerConnection` params (1 / 3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterConnection {
    /// `auth` (ptr 0).
    pub auth: TunnelAuth,
    /// `tunnelId` (ptr 1): 16 raw UUID bytes.
    pub tunnel_id: Vec<u8>,
    /// `connIndex` (byte 0): the HA connection index, 0..3.
    pub conn_index: u8,
    /// `options` (ptr 2).
    pub options: ConnectionOptions,
}

/// `ConnectionError` (2 / 1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionError {
    /// `cause @0 :Text` (ptr 0). `EDUPCONN` marks a duplicate connection.
    pub cause: String,
    /// `retryAfter @1 :Int64` (bytes 0..8), nanoseconds.
    pub retry_after_nanos: i64,
    /// `shouldRetry @2 :Bool` (bit 64): false means permanent.
    pub should_retry: bool,
}

/// `ConnectionDetails` (1 / 2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionDetails {
    /// `uuid @0 :Data` (ptr 0): the connection ID; must be exactly 16 bytes.
    pub uuid: Vec<u8>,
    /// `locationName @1 :Text` (ptr 1): colo code.
    pub location_name: String,
    /// `tunnelIsRemotelyManaged @2 :Bool` (bit 0).
    pub tunnel_is_remotely_managed: bool,
}

/// `ConnectionResponse` (1 / 1): a union, discriminant UInt16 at byte 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionResponse {
    /// Discriminant 0: `error @0 :ConnectionError`.
    Error(ConnectionError),
    /// Discriminant 1: `connectionDetails @1 :ConnectionDetails`.
    Details(ConnectionDetails),
}

/// The `cause` the edge uses for "this connection is already registered here".
pub const DUPLICATE_CONNECTION_CAUSE: &str = "EDUPCONN";

/// Why a registration failed, classified the way cloudflared acts on it (PROTOCOL.md §3.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrationError {
    /// Cause exactly `EDUPCONN`: move this connIndex to another edge address.
    Duplicate,
    /// `shouldRetry = true`: retry with backoff. cloudflared ignores `retry_after`.
    Retryable {
        /// The edge's cause text.
        cause: String,
        /// The edge's hint, when positive.
        retry_after: Option<Duration>,
    },
    /// `shouldRetry = false`: permanent, unless the cause contains `Unauthorized`
    /// (see [`RegistrationError::is_unauthorized`]).
    Permanent {
        /// The edge's cause text.
        cause: String,
    },
    /// The call failed with an RPC exception; treated as permanent.
    Exception {
        /// The exception's reason.
        reason: String,
    },
    /// The edge answered with something unusable (e.g. a connection UUID that is not
    /// 16 bytes, which fails registration in cloudflared too).
    InvalidResponse {
        /// What was wrong.
        problem: String,
    },
    /// No answer within the RPC timeout.
    Timeout,
}

impl RegistrationError {
    /// Classifies an edge `ConnectionError`.
    pub fn from_connection_error(error: &ConnectionError) -> Self {
        if error.cause == DUPLICATE_CONNECTION_CAUSE {
            return Self::Duplicate;
        }
        if error.should_retry {
            let retry_after = u64::try_from(error.retry_after_nanos)
                .ok()
                .filter(|n| *n > 0)
                .map(Duration::from_nanos);
            return Self::Retryable {
                cause: error.cause.clone(),
                retry_after,
            };
        }
        Self::Permanent {
            cause: error.cause.clone(),
        }
    }

    /// Whether the cause mentions `Unauthorized`: cloudflared retries that even on
    /// connIndex 0 before anything connected (tunnel propagation lag).
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, Self::Permanent { cause } | Self::Retryable { cause, .. } if cause.contains("Unauthorized"))
    }

    /// Whether the connector should try again (with backoff) at all.
    pub fn should_retry(&self) -> bool {
        match self {
            Self::Duplicate | Self::Retryable { .. } | Self::Timeout => true,
            Self::Permanent { .. } => self.is_unauthorized(),
            Self::Exception { .. } | Self::InvalidResponse { .. } => false,
        }
    }
}

impl std::fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Duplicate => f.write_str("duplicate connection (EDUPCONN)"),
            Self::Retryable { cause, .. } => write!(f, "retryable registration error: {cause}"),
            Self::Permanent { cause } => write!(f, "permanent registration error: {cause}"),
            Self::Exception { reason } => write!(f, "registration rpc failed: {reason}"),
            Self::InvalidResponse { problem } => {
                write!(f, "invalid registration response: {problem}")
            }
            Self::Timeout => f.write_str("registration timed out"),
        }
    }
}

impl ConnectionDetails {
    /// The connection UUID, if it is exactly 16 bytes as cloudflared requires.
    pub fn connection_id(&self) -> Option<Uuid> {
        Uuid::from_slice(&self.uuid)
    }
}

#[cfg(test)]
mod tests;
