//! The tunnel entry of a worker: the `TunnelHandler` the connector calls for each
//! stream of the tunnel connections this worker drives. HTTP and websocket streams
//! enter the same pipeline as listener traffic (`Worker::handle_tunnel`); TCP
//! streams are refused (Culvert routes HTTP only), which the edge reports as an
//! origin error.

use std::rc::Rc;

use culvert_connector::io::{ServeFuture, StreamInfo, TunnelBody, TunnelHandler, box_body};
use culvert_connector::proto::ConnectionType;
use tracing::Instrument as _;

use crate::worker::exchange::Worker;
use crate::worker::trace;

/// Serves tunnel streams on one worker.
pub(crate) struct TunnelEntry(pub(crate) Rc<Worker>);

impl TunnelHandler for TunnelEntry {
    /// Serves one stream in its `tunnel_stream` span (see [`trace::tunnel_stream`]),
    /// the parent of its request's.
    fn serve(&self, request: http::Request<TunnelBody>) -> ServeFuture {
        let worker = Rc::clone(&self.0);
        let stream = request.extensions().get::<StreamInfo>();
        let kind = stream.map(|info| info.kind);
        let span = trace::tunnel_stream(worker.index(), stream.map(|info| info.conn_index), kind);
        Box::pin(
            async move {
                if let Some(kind @ (ConnectionType::Tcp | ConnectionType::Unknown(_))) = kind {
                    return Err(
                        format!("{kind:?} streams are not served; Culvert routes HTTP").into(),
                    );
                }
                let response = worker.handle_tunnel(request).await;
                Ok(response.map(box_body))
            }
            .instrument(span),
        )
    }
}
