//! The simulator's QUIC side: accepts connections, runs the edge end of each control
//! stream with [`ControlServer`] ([`run_control`], shared with the HTTP/2 side in
//! `edge_h2.rs` through the [`ControlStream`] trait), and decides registrations.
//!
//! Registration rules: the tunnel ID must be one the simulator knows (the start-up
//! tunnel or one created through the API) and not deleted, and the account tag and
//! secret must match that tunnel's (otherwise a permanent `ConnectionError` whose cause does
//! not contain `Unauthorized`, so connectors stop instead of retrying); a second live
//! registration of the same client and connIndex on the same listener gets
//! `EDUPCONN`. An unregister marks the connection draining at once and is answered
//! when its in-flight streams are done (bounded), for 2023.7.3 compatibility; the
//! connection is closed (code 0) once the connector has closed its control stream,
//! or shortly after the answer. A connection whose tunnel is deleted with `cascade`
//! through the API is closed at once.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quinn::VarInt;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use culvert_connector::io::{InFlight, random_uuid};
use culvert_tunnel_proto::{
    ConnectionDetails, ConnectionError, ConnectionResponse, ControlServer, RegisterConnection,
    ServerCallId, ServerEvent, Uuid, registration::DUPLICATE_CONNECTION_CAUSE,
};

use crate::api::time::now_rfc3339;
use crate::registry::SimConn;
use crate::shared::SimShared;

/// How long a connector may take to open (QUIC) or accept (HTTP/2) the control stream.
pub(crate) const CONTROL_STREAM_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after answering an unregister the connection is closed at the latest.
const CLOSE_AFTER_UNREGISTER: Duration = Duration::from_secs(2);

/// Accepts QUIC connections on one endpoint until shutdown.
pub(crate) async fn accept_loop(
    shared: Arc<SimShared>,
    endpoint: quinn::Endpoint,
    listener: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    let mut stop = shutdown.clone();
    loop {
        tokio::select! {
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => {
                    let shared = Arc::clone(&shared);
                    let shutdown = shutdown.clone();
                    tasks.spawn(serve_connection(shared, incoming, listener, shutdown));
                }
                None => break,
            },
            _ = stop.wait_for(|stop| *stop) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    // Let connection tasks close their connections with code 0, bounded.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
}

async fn serve_connection(
    shared: Arc<SimShared>,
    incoming: quinn::Incoming,
    listener: SocketAddr,
    mut shutdown: watch::Receiver<bool>,
) {
    let peer = incoming.remote_address();
    let conn = match incoming.await {
        Ok(conn) => conn,
        Err(e) => {
            shared.event(format!(
                "quic handshake from {peer} on {listener} failed: {e}"
            ));
            return;
        }
    };
    let (id, in_flight) = shared.registry().add(listener, SimConn::Quic(conn.clone()));
    shared.event(format!("connection {id}: quic from {peer} on {listener}"));
    let reason = control(&shared, id, &conn, &in_flight, &mut shutdown).await;
    conn.close(VarInt::from_u32(0), b"");
    let removed = shared.registry().remove(id);
    if let Some(info) = removed {
        shared.event(format!(
            "connection {id}: closed (connIndex {:?}): {reason}",
            info.conn_index
        ));
    }
}

/// The edge's end of a control stream, whatever transport carries it.
pub(crate) trait ControlStream {
    /// The next bytes from the connector; `None` once it ended its side.
    async fn read_chunk(&mut self) -> Result<Option<Bytes>, String>;
    /// Sends bytes to the connector.
    async fn write_all(&mut self, bytes: &[u8]) -> Result<(), String>;
}

/// A QUIC control stream: the connector's first bidirectional stream.
struct QuicControl {
    send: quinn::SendStream,
    recv: quinn::RecvStream,
}

impl ControlStream for QuicControl {
    async fn read_chunk(&mut self) -> Result<Option<Bytes>, String> {
        match self.recv.read_chunk(64 * 1024, true).await {
            Ok(chunk) => Ok(chunk.map(|c| c.bytes)),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn write_all(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.send.write_all(bytes).await.map_err(|e| e.to_string())
    }
}

/// Accepts the QUIC control stream, then runs it.
async fn control(
    shared: &Arc<SimShared>,
    id: u64,
    conn: &quinn::Connection,
    in_flight: &Arc<InFlight>,
    shutdown: &mut watch::Receiver<bool>,
) -> String {
    let accepted = tokio::select! {
        r = tokio::time::timeout(CONTROL_STREAM_TIMEOUT, conn.accept_bi()) => r,
        _ = shutdown.wait_for(|stop| *stop) => return "simulator shut down".to_owned(),
    };
    let (send, recv) = match accepted {
        Ok(Ok(streams)) => streams,
        Ok(Err(e)) => return format!("no control stream: {e}"),
        Err(_) => return "no control stream within 10 s".to_owned(),
    };
    let closed = async { format!("connection closed: {}", conn.closed().await) };
    run_control(
        shared,
        id,
        QuicControl { send, recv },
        closed,
        in_flight,
        shutdown,
    )
    .await
}

/// Runs the edge end of a control stream until the connection should close;
/// returns why. `closed` resolves when the connection itself went away.
pub(crate) async fn run_control(
    shared: &Arc<SimShared>,
    id: u64,
    mut stream: impl ControlStream,
    closed: impl Future<Output = String>,
    in_flight: &Arc<InFlight>,
    shutdown: &mut watch::Receiver<bool>,
) -> String {
    tokio::pin!(closed);
    let evicted = evicted(shared.registry().evicted(id));
    tokio::pin!(evicted);
    let mut server = ControlServer::new();
    let mut out = Vec::new();
    let mut pending_unregister: Option<(ServerCallId, Instant)> = None;
    let mut close_at: Option<Instant> = None;
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    loop {
        server.poll_transmit(&mut out);
        if !out.is_empty() {
            if let Err(e) = stream.write_all(&out).await {
                return format!("writing the control stream: {e}");
            }
            out.clear();
        }
        let unregister_deadline = pending_unregister.map(|(_, d)| d);
        tokio::select! {
            read = stream.read_chunk() => match read {
                Ok(Some(bytes)) => {
                    if let Err(e) = server.handle_input(&bytes, Instant::now().into_std()) {
                        shared.event(format!("connection {id}: control stream error: {e}"));
                    }
                }
                Ok(None) => return "connector closed the control stream".to_owned(),
                Err(e) => return format!("control stream: {e}"),
            },
            () = in_flight.wait_idle(), if pending_unregister.is_some() => {
                if let Some((call, _)) = pending_unregister.take() {
                    let _ = server.respond_empty(call);
                    shared.event(format!("connection {id}: unregistered (in-flight streams done)"));
                    close_at = Some(Instant::now() + CLOSE_AFTER_UNREGISTER);
                }
            }
            () = sleep_until(unregister_deadline.unwrap_or(far)), if unregister_deadline.is_some() => {
                if let Some((call, _)) = pending_unregister.take() {
                    let _ = server.respond_empty(call);
                    shared.event(format!(
                        "connection {id}: unregistered after timeout with {} streams in flight",
                        in_flight.count()
                    ));
                    close_at = Some(Instant::now() + CLOSE_AFTER_UNREGISTER);
                }
            }
            () = sleep_until(close_at.unwrap_or(far)), if close_at.is_some() => {
                return "closed after unregister".to_owned();
            }
            reason = &mut closed => return reason,
            () = &mut evicted => return "tunnel deleted".to_owned(),
            _ = shutdown.wait_for(|stop| *stop) => return "simulator shut down".to_owned(),
        }
        while let Some(event) = server.poll_event() {
            match event {
                ServerEvent::RegisterConnection { call, request } => {
                    let response = decide(shared, id, &request);
                    let _ = server.respond_register(call, &response);
                }
                ServerEvent::UnregisterConnection { call } => {
                    shared.registry().unregister(id);
                    shared.event(format!(
                        "connection {id}: unregister requested, {} streams in flight",
                        in_flight.count()
                    ));
                    pending_unregister = Some((call, Instant::now() + shared.unregister_timeout));
                }
                ServerEvent::UpdateLocalConfiguration { call, config } => {
                    shared.registry().set_local_config(id, &config);
                    shared.event(format!(
                        "connection {id}: updateLocalConfiguration ({} bytes)",
                        config.len()
                    ));
                    let _ = server.respond_empty(call);
                }
                ServerEvent::Closed { reason } => {
                    shared.event(format!("connection {id}: connector aborted rpc: {reason}"));
                }
            }
        }
        if server.is_closed() && pending_unregister.is_none() && close_at.is_none() {
            close_at = Some(Instant::now() + CLOSE_AFTER_UNREGISTER);
        }
    }
}

/// Resolves once the connection is evicted; never if it cannot be.
async fn evicted(receiver: Option<watch::Receiver<bool>>) {
    if let Some(mut receiver) = receiver
        && receiver.wait_for(|e| *e).await.is_ok()
    {
        return;
    }
    std::future::pending::<()>().await;
}

fn refusal(cause: String, should_retry: bool) -> ConnectionResponse {
    ConnectionResponse::Error(ConnectionError {
        cause,
        retry_after_nanos: 0,
        should_retry,
    })
}

/// Accepts or refuses one registration.
fn decide(shared: &SimShared, id: u64, request: &RegisterConnection) -> ConnectionResponse {
    let index = request.conn_index;
    let tunnel_id = Uuid::from_slice(&request.tunnel_id);
    let known = tunnel_id.and_then(|t| {
        let cloud = shared.cloud();
        cloud
            .tunnel(t)
            .filter(|t| t.deleted_at.is_none())
            .map(|t| (t.id, t.account_tag.clone(), t.secret.clone()))
    });
    let response = if let Some((tunnel, account_tag, secret)) = &known
        && request.auth.account_tag == *account_tag
        && request.auth.tunnel_secret == *secret
    {
        if shared.registry().is_duplicate(id, request) {
            refusal(DUPLICATE_CONNECTION_CAUSE.to_owned(), true)
        } else {
            match random_uuid() {
                Ok(connection_id) => {
                    shared
                        .registry()
                        .register(id, request, connection_id, *tunnel, now_rfc3339());
                    if let Some(t) = shared.cloud().tunnel_mut(*tunnel) {
                        t.ever_registered = true;
                    }
                    ConnectionResponse::Details(ConnectionDetails {
                        uuid: connection_id.as_bytes().to_vec(),
                        location_name: shared.location.clone(),
                        tunnel_is_remotely_managed: false,
                    })
                }
                Err(e) => refusal(format!("edge error: {e}"), true),
            }
        }
    } else if known.is_none() {
        refusal(
            format!(
                "tunnel {} is not known to this edge",
                Uuid::from_slice(&request.tunnel_id)
                    .map_or_else(|| format!("{:02x?}", request.tunnel_id), |u| u.to_string())
            ),
            false,
        )
    } else {
        refusal(
            "tunnel credentials rejected: account tag or tunnel secret does not match".to_owned(),
            false,
        )
    };
    let client = &request.options.client;
    match &response {
        ConnectionResponse::Details(details) => shared.event(format!(
            "connection {id}: registered connIndex {index} (client {}, version {:?}, arch {:?}, features {:?}, previous attempts {}), connection id {}",
            Uuid::from_slice(&client.client_id)
                .map_or_else(|| "?".to_owned(), |u| u.to_string()),
            client.version,
            client.arch,
            client.features,
            request.options.num_previous_attempts,
            details
                .connection_id()
                .map_or_else(|| "?".to_owned(), |u| u.to_string()),
        )),
        ConnectionResponse::Error(error) => shared.event(format!(
            "connection {id}: refused connIndex {index}: {} (shouldRetry {})",
            error.cause, error.should_retry
        )),
    }
    response
}
