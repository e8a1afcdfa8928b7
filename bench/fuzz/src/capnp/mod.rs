//! `capnp`: the tunnel protocol's decoders, from the Cap'n Proto reader up.
//!
//! The first byte picks what reads the rest (`choice % 8`):
//!
//! | choice | decoder |
//! | --- | --- |
//! | 0 | `ConnectRequest::decode`, then the request head its metadata describes |
//! | 1 | `ConnectResponse::decode`, then the response head its metadata describes |
//! | 2 | the stream preamble and the data-stream heads behind it |
//! | 3 | `ControlServer::handle_input`: the edge's side of the control stream |
//! | 4 | `ControlClient::handle_input` with every call outstanding: the connector's side |
//! | 5 | the HTTP/2 transport's serialized headers and response heads |
//! | 6 | metadata keys: header names in keys, Go's canonical names |
//! | 7 | all of the above over the same bytes |
//!
//! The Cap'n Proto layer (the `capnp` crate's reader under the generated code, with
//! the framing and limits of the protocol crate's `codec`) is internal to the
//! protocol crate; every message above goes through it (segments, far pointers,
//! limits), and the registration structures and RPC messages through the control
//! stream. See the modules for the properties each path checks.

mod control;
mod headers;
mod messages;

/// Feeds the input to the decoder its first byte picks; panics on a violated
/// property.
pub fn capnp(data: &[u8]) {
    let Some((&choice, payload)) = data.split_first() else {
        return;
    };
    match choice % 8 {
        0 => messages::connect_request(payload),
        1 => messages::connect_response(payload),
        2 => messages::preamble(payload),
        3 => control::server(payload),
        4 => control::client(payload),
        5 => headers::serialized(payload),
        6 => headers::metadata_keys(payload),
        _ => {
            messages::connect_request(payload);
            messages::connect_response(payload);
            messages::preamble(payload);
            control::server(payload);
            control::client(payload);
            headers::serialized(payload);
            headers::metadata_keys(payload);
        }
    }
}
