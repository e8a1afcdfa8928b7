//! The tunnel driver: moves bytes and timers between the transports (QUIC with
//! quinn, HTTP/2 with h2 over tokio-rustls) and the sans-IO
//! [`proto`](crate::proto) core. It never makes a protocol decision of its own.
//!
//! Where to start:
//! * [`Tunnel`] (in `tunnel/`): HA connections, drain and readiness
//!   ([`TunnelStatus`], `status.rs`); `tunnel/supervisor.rs` runs one connection
//!   index as the sans-IO [`proto::reconnect`](crate::proto::reconnect) says.
//!   Configuration is [`TunnelConfig`] (`config.rs`); `shared/` is the state every
//!   thread shares (address pools, discovery, the status channel).
//! * [`TunnelHandler`] (in `handler.rs`): what the data plane implements to serve
//!   requests; the module doc there has the per-connection-type contract.
//! * `connection.rs`: one QUIC connection, from dial to close; `stream.rs`: one
//!   request stream. `attempt.rs`: what both transports share about one attempt
//!   (its `Outcome`, registration arguments, the control
//!   stream's flush and teardown); `control_loop.rs`: their drain and
//!   control-event handling.
//! * `http2/`: one HTTP/2 connection (the connector is the HTTP/2 server, the edge
//!   opens the control stream and every request) and its request streams. Pick
//!   the transport with [`TunnelConfig::transport`] ([`Transport`]).
//!
//! Layers, each importing only those below it: `tunnel/` (the handle and the
//! supervisor) → the drivers (`connection.rs`, `http2/`, `stream.rs`) →
//! `control_loop.rs`, `attempt.rs` → `shared/` → `config.rs`, `status.rs`,
//! `transport.rs`, `tls.rs`, `random.rs`, `body.rs`, `handler.rs`.
//!
//! Threading model: [`Tunnel`] is `Send + Sync` and shared by all workers; each
//! worker runs some connection indices with [`Tunnel::spawn_local`] on its own
//! current-thread runtime (a `LocalRuntime`, or inside a `LocalSet`). Connections,
//! streams, handlers and their futures stay on that thread and need not be `Send`:
//!
//! ```no_run
//! # use std::rc::Rc;
//! # use culvert_connector::io::{Tunnel, TunnelConfig, TunnelHandler, ServeFuture, TunnelBody, BoxBody};
//! # fn handler() -> Rc<dyn TunnelHandler> {
//! #     Rc::new(|_req: http::Request<TunnelBody>| -> ServeFuture { Box::pin(async { Err("x".into()) }) })
//! # }
//! # async fn example(config: TunnelConfig) -> Result<(), culvert_connector::Error> {
//! let tunnel = Tunnel::new(config)?;
//! // On each worker, on its local runtime:
//! tunnel.spawn_local(tunnel.connection_indices(), handler());
//! tunnel.wait_registered(1).await?;   // readiness: tunnel.status()
//! tunnel.drain();                      // SIGTERM or POST /drain
//! tunnel.closed().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Edges come from [`TunnelConfig::edges`] or, when that is empty, from
//! [`crate::discovery`] (re-resolved when a connection needs a new address after the
//! answer's TTL ran out).
//!
//! Not done yet: edge-opened RPC streams
//! and HTTP/2 configuration pushes (refused), UDP sessions and datagrams (accepted
//! and ignored).

mod attempt;
mod body;
mod config;
mod connection;
mod control_loop;
mod handler;
mod http2;
mod random;
mod shared;
mod status;
pub(crate) mod stream;
mod tls;
mod transport;
mod tunnel;

pub use crate::proto::backoff::{Backoff, BackoffConfig};
pub use body::{TunnelBody, TunnelStream, TunnelUpgrade};
pub use config::{
    DEFAULT_FEATURES, DEFAULT_GRACE_PERIOD, DEFAULT_HA_CONNECTIONS, DEFAULT_MAX_CONCURRENT_STREAMS,
    MAX_GRACE_PERIOD, TunnelConfig,
};
pub use handler::{BoxBody, BoxError, ServeFuture, StreamInfo, TunnelHandler, box_body};
pub use http2::DIAL_TIMEOUT as H2_DIAL_TIMEOUT;
pub use status::{ConnectionState, ConnectionStatus, TunnelFailure, TunnelStatus};
pub use tls::{ALPN, EdgeRoots, H2_SERVER_NAME, IDLE_TIMEOUT, KEEP_ALIVE, QUIC_SERVER_NAME};
pub use transport::Transport;
pub use tunnel::Tunnel;

// What the edge simulator (`culvert-edge-sim`) shares with the driver, so both ends
// of a loopback tunnel use the same stream bodies, TLS provider and transport
// settings. Not the connector's API: hidden from its documentation.
#[doc(hidden)]
pub use body::{InFlight, InFlightGuard, h2_send_all};
#[doc(hidden)]
pub use random::{random_bytes, random_uuid};
#[doc(hidden)]
pub use stream::{HeadError, read_head};
#[doc(hidden)]
pub use tls::{crypto_provider, pem_certificates, transport};
