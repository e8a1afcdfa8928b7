//! What the protocol core refuses. Peer input never panics: malformed tokens,
//! frames, Cap'n Proto messages, RPC sequences and metadata all end up here, with a
//! message naming what was wrong.

/// A token, message or RPC sequence the protocol core cannot accept.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The outer layer of a tunnel token is not standard, padded base64.
    #[error("tunnel token is not valid base64")]
    TokenBase64(#[source] base64::DecodeError),
    /// The decoded tunnel token is not a JSON object of strings.
    #[error("tunnel token is not a valid json object")]
    TokenJson(#[source] serde_json::Error),
    /// A required tunnel token field is absent.
    #[error("tunnel token is missing field `{0}`")]
    TokenMissingField(&'static str),
    /// The tunnel token's `t` field is not a canonical UUID.
    #[error("tunnel token field `t` is not a uuid: {0:?}")]
    TokenTunnelId(String),
    /// The tunnel token's `s` field is not standard, padded base64.
    #[error("tunnel token field `s` (tunnel secret) is not valid base64")]
    TokenSecret(#[source] base64::DecodeError),
    /// A text that should be a canonical UUID is not one.
    #[error("invalid uuid {0:?}")]
    Uuid(String),
    /// A Cap'n Proto frame or message is malformed: the `capnp` crate refused to
    /// read or copy it.
    #[error("malformed cap'n proto message: {}{source}", context_prefix(*.context))]
    Capnp {
        /// What was being read or copied, e.g. `ConnectionError.cause`; `None` for
        /// a whole message.
        context: Option<&'static str>,
        /// The `capnp` crate's error (its kind says what was wrong).
        #[source]
        source: capnp::Error,
    },
    /// A Cap'n Proto frame or message exceeds a decode limit (segments, size), or
    /// refers to something it does not carry (a capability outside its table).
    #[error("malformed cap'n proto message: {0}")]
    CapnpLimit(String),
    /// A Cap'n Proto message is well formed but does not fit the schema.
    #[error("invalid {structure}: {problem}")]
    Schema {
        /// The schema structure being decoded, e.g. `ConnectRequest`.
        structure: &'static str,
        /// What was wrong with it.
        problem: String,
    },
    /// An edge-opened stream starts with neither the data nor the RPC signature.
    #[error("unknown stream signature {0:02x?}")]
    UnknownSignature([u8; 6]),
    /// A data stream was expected but the RPC stream signature arrived.
    #[error("expected a data stream, found the rpc stream signature")]
    UnexpectedRpcStream,
    /// Request or response metadata breaks the key conventions.
    #[error("invalid metadata: {0}")]
    Metadata(String),
    /// The peer broke the Cap'n Proto RPC protocol on the control stream.
    #[error("rpc protocol violation: {0}")]
    RpcProtocol(String),
    /// The control stream was already closed (aborted by either side).
    #[error("control stream is closed")]
    ControlClosed,
    /// A reply was given for a call that does not exist or was already answered.
    #[error("no pending call with id {0}")]
    UnknownCall(u32),
}

/// `context: ` before a `capnp` error, when there is a context.
fn context_prefix(context: Option<&'static str>) -> String {
    context.map(|c| format!("{c}: ")).unwrap_or_default()
}
