//! The tunnel entry of a worker: the `TunnelHandler` the connector calls for each
//! stream of the tunnel connections this worker drives. HTTP and websocket streams
//! enter the same pipeline as listener traffic (`Worker::handle_tunnel`); TCP
//! streams are refused (Culvert routes HTTP only), which the edge reports as an
//! origin error.

use std::rc::Rc;

use culvert_connector::io::{ServeFuture, StreamInfo, TunnelBody, TunnelHandler, box_body};
use culvert_connector::proto::ConnectionType;

use crate::worker::exchange::Worker;

/// Serves tunnel streams on one worker.
pub(crate) struct TunnelEntry(pub(crate) Rc<Worker>);

impl TunnelHandler for TunnelEntry {
    fn serve(&self, request: http::Request<TunnelBody>) -> ServeFuture {
        let worker = Rc::clone(&self.0);
        Box::pin(async move {
            let kind = request
                .extensions()
                .get::<StreamInfo>()
                .map(|info| info.kind);
            if let Some(kind @ (ConnectionType::Tcp | ConnectionType::Unknown(_))) = kind {
                return Err(format!("{kind:?} streams are not served; Culvert routes HTTP").into());
            }
            let response = worker.handle_tunnel(request).await;
            Ok(response.map(box_body))
        })
    }
}
