//! The config API, served on the control address by its own thread and
//! current-thread runtime, never by a worker.
//!
//! - `PUT /config`: a whole `DataPlaneConfig` JSON document (at most 16 MiB → 413;
//!   `Content-Type` not JSON → 415; unparsable or refused by the router → 400 with
//!   `{"error": reason}`; older than the serving version → 409 with
//!   `{"currentVersion": N}`; the serving version with other content → 409 too;
//!   applied, or already serving that version and content → 200
//!   `{"version", "hash"}`, the hash being `DataPlaneConfig::content_hash`, plus
//!   `"tunnel": {"registered": N}` on a plane serving a tunnel). The document is
//!   compiled here, off the request path, then swapped in with one store; a refused
//!   one leaves the current snapshot serving. The answer waits (bounded) until every
//!   worker has reconciled its listeners for the new snapshot.
//! - `GET /config`: `{"version", "hash", "ready"}`, and `tunnel` as above.
//! - `GET /healthz`: 200, or 503 once a worker has stopped after a panic. `GET /readyz`: 200 once a config is serving, the plane is
//!   not draining and (with a tunnel) at least one tunnel connection is registered,
//!   else 503.
//! - `POST /drain`: starts draining (202); see `Server::start_drain`.
//!
//! Every [`CERTIFICATE_POLL`] the thread also checks the certificate files the
//! serving config names and recompiles it when one has changed, and every
//! [`SOURCE_POLL`] it checks the manifests it serves (if any) and applies their new
//! translation, with the next version; a broken edit is reported and the running
//! config stays.
//!
//! With TLS files set ([`ConfigApiTlsFiles`]) the API speaks HTTPS only; the files
//! are re-read when they change. With a token set, `/config` and `/drain` need `Authorization: Bearer <token>` (compared in
//! constant time) → 401 otherwise. A non-loopback control address needs both a token
//! and TLS, unless explicitly overridden (`--insecure-control`).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::LocalSet;

mod tls;

pub(crate) use tls::ConfigApiTls;
pub use tls::ConfigApiTlsFiles;

use crate::metrics::{self, ConfigApiStats, StatsSnapshot};
use crate::{Applied, ConfigSource, Error, SnapshotCell};
use culvert_router::DataPlaneConfig;

/// Largest accepted config document.
pub const MAX_CONFIG_BYTES: usize = 16 * 1024 * 1024;
/// How long a client of the API may take to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `/metrics` waits for each worker's stats.
const SCRAPE_WAIT: Duration = Duration::from_secs(1);
/// How often the manifests of a file source are checked for changes.
const SOURCE_POLL: Duration = Duration::from_secs(1);
/// How often certificate files are checked for changes.
const CERTIFICATE_POLL: Duration = Duration::from_secs(2);
/// How long `PUT /config` waits for the workers to reconcile their listeners.
const RECONCILE_WAIT: Duration = Duration::from_secs(5);

/// One worker as the config API thread sees it.
pub(crate) struct WorkerLink {
    /// Bumped after each swap.
    pub(crate) generation: watch::Sender<u64>,
    /// The generation the worker has reconciled.
    pub(crate) applied: watch::Receiver<u64>,
    /// Asks the worker for a copy of its stats.
    pub(crate) scrape: tokio::sync::mpsc::Sender<oneshot::Sender<StatsSnapshot>>,
}

/// What the config API thread needs.
pub(crate) struct ConfigApi {
    pub(crate) cell: Arc<SnapshotCell>,
    pub(crate) token: Option<String>,
    pub(crate) workers: Vec<WorkerLink>,
    /// `true` once draining; `POST /drain` sets it.
    pub(crate) draining: Arc<watch::Sender<bool>>,
    /// Manifests to follow, if the plane serves a directory or file.
    pub(crate) source: Option<RefCell<Box<dyn ConfigSource>>>,
    /// Configs published by an embedded control plane, if one runs.
    pub(crate) published: Option<RefCell<watch::Receiver<Option<Arc<DataPlaneConfig>>>>>,
    /// Config version, swaps and rejections, for `/metrics`.
    pub(crate) stats: ConfigApiStats,
    /// TLS of the API itself, if configured.
    pub(crate) tls: Option<ConfigApiTls>,
    /// The tunnel, if one is served: ready needs a registered connection.
    pub(crate) tunnel: Option<culvert_connector::io::Tunnel>,
}

/// Starts the config API thread on an already bound, non-blocking `listener`; it stops
/// when `shutdown`'s sender is dropped.
pub(crate) fn spawn(
    control: ConfigApi,
    listener: std::net::TcpListener,
    shutdown: watch::Receiver<()>,
) -> Result<std::thread::JoinHandle<()>, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let name = "culvert-control".to_owned();
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            let local = LocalSet::new();
            local.block_on(&runtime, serve(Rc::new(control), listener, shutdown));
        })
        .map_err(|source| Error::Thread { name, source })
}

async fn serve(
    control: Rc<ConfigApi>,
    listener: std::net::TcpListener,
    mut shutdown: watch::Receiver<()>,
) {
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(err) => {
            tracing::error!(error = %err, "config API listener unusable; the config API is not served");
            return;
        }
    };
    let mut certificate_poll = tokio::time::interval(CERTIFICATE_POLL);
    certificate_poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut source_poll = tokio::time::interval(SOURCE_POLL);
    source_poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            _ = certificate_poll.tick() => control.reload_certificates().await,
            _ = source_poll.tick() => control.reload_source().await,
            () = next_published(&control) => control.apply_published().await,
            accepted = listener.accept() => {
                let Ok((stream, _peer)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let control = Rc::clone(&control);
                let acceptor = control.tls.as_ref().map(ConfigApiTls::acceptor);
                tokio::task::spawn_local(async move {
                    match acceptor {
                        None => serve_connection(control, stream).await,
                        Some(acceptor) => {
                            let handshake = tokio::time::timeout(
                                HANDSHAKE_TIMEOUT,
                                acceptor.accept(stream),
                            );
                            if let Ok(Ok(stream)) = handshake.await {
                                serve_connection(control, stream).await;
                            }
                        }
                    }
                });
            }
        }
    }
}

/// Resolves when the embedded control plane has published a config not applied
/// yet; never without one (or once it has stopped).
async fn next_published(control: &ConfigApi) {
    let Some(published) = &control.published else {
        return std::future::pending().await;
    };
    let mut receiver = published.borrow().clone();
    if receiver.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Serves config API requests on one connection until it closes.
async fn serve_connection<I>(control: Rc<ConfigApi>, io: I)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    let service = service_fn(move |request| {
        let control = Rc::clone(&control);
        async move { Ok::<_, std::convert::Infallible>(control.handle(request).await) }
    });
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .serve_connection(TokioIo::new(io), service)
        .await;
}

impl ConfigApi {
    /// Workers whose thread has ended (after a panic: they stop only with the
    /// whole plane otherwise): their end of the scrape channel is gone.
    fn stopped_workers(&self) -> usize {
        self.workers
            .iter()
            .filter(|link| link.scrape.is_closed())
            .count()
    }

    async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        match (request.method(), path) {
            (&Method::GET, "/healthz") => {
                let (status, body) = health(self.stopped_workers());
                json(status, &body)
            }
            (&Method::GET, "/readyz") => {
                let tunnel_up = self.tunnel.as_ref().is_none_or(|t| t.registered() > 0);
                if self.cell.load().is_some() && !*self.draining.borrow() && tunnel_up {
                    json(StatusCode::OK, &serde_json::json!({"ready": true}))
                } else {
                    json(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &serde_json::json!({"ready": false}),
                    )
                }
            }
            (&Method::GET, "/metrics") => self.metrics().await,
            (_, "/config" | "/drain") if !self.authorized(request.headers()) => {
                let mut answer = error(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
                answer
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                answer
            }
            (&Method::POST, "/drain") => {
                self.draining.send_replace(true);
                json(StatusCode::ACCEPTED, &serde_json::json!({"draining": true}))
            }
            (_, "/drain") => error(StatusCode::METHOD_NOT_ALLOWED, "use POST"),
            (_, "/config") => match *request.method() {
                Method::GET => self.current(),
                Method::PUT => self.put_config(request).await,
                _ => error(StatusCode::METHOD_NOT_ALLOWED, "use GET or PUT"),
            },
            _ => error(StatusCode::NOT_FOUND, "no such endpoint"),
        }
    }

    fn authorized(&self, headers: &http::HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let offered = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
            .unwrap_or_default();
        constant_time_eq(offered, token.as_bytes())
    }

    fn current(&self) -> Response<Full<Bytes>> {
        let mut body = match &*self.cell.load() {
            Some(snapshot) => serde_json::json!({
                "version": snapshot.config_version,
                "hash": snapshot.content_hash,
                "ready": true,
            }),
            None => serde_json::json!({"version": null, "hash": null, "ready": false}),
        };
        self.add_tunnel(&mut body);
        json(StatusCode::OK, &body)
    }

    /// Adds `"tunnel": {"registered": N}` to `body` when a tunnel is served, so
    /// whoever pushes learns whether the plane is reachable through it.
    fn add_tunnel(&self, body: &mut serde_json::Value) {
        if let Some(tunnel) = &self.tunnel {
            body["tunnel"] = serde_json::json!({"registered": tunnel.registered()});
        }
    }

    async fn put_config(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        if !is_json(request.headers()) {
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json",
            );
        }
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|len| len > MAX_CONFIG_BYTES as u64) {
            return too_large();
        }
        let body = match Limited::new(request.into_body(), MAX_CONFIG_BYTES)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => return too_large(),
            Err(err) => return error(StatusCode::BAD_REQUEST, &format!("reading the body: {err}")),
        };
        let config: DataPlaneConfig = match serde_json::from_slice(&body) {
            Ok(config) => config,
            Err(err) => return error(StatusCode::BAD_REQUEST, &Error::ConfigJson(err).chain()),
        };
        match self.apply(&config).await {
            Ok(snapshot) => {
                tracing::info!(
                    version = snapshot.config_version,
                    hash = %snapshot.content_hash,
                    "config pushed; serving it"
                );
                let mut body = serde_json::json!({
                    "version": snapshot.config_version,
                    "hash": snapshot.content_hash,
                });
                self.add_tunnel(&mut body);
                json(StatusCode::OK, &body)
            }
            Err(err @ Error::StaleVersion { current, .. }) => json(
                StatusCode::CONFLICT,
                &serde_json::json!({"error": err.to_string(), "currentVersion": current}),
            ),
            Err(err @ Error::VersionConflict { version, .. }) => json(
                StatusCode::CONFLICT,
                &serde_json::json!({"error": err.to_string(), "currentVersion": version}),
            ),
            Err(err) => error(StatusCode::BAD_REQUEST, &err.chain()),
        }
    }

    /// Every worker's stats added up, with the config API thread's, as Prometheus
    /// text. A worker that does not answer within [`SCRAPE_WAIT`] is left out.
    async fn metrics(&self) -> Response<Full<Bytes>> {
        let mut merged = StatsSnapshot::new();
        for link in &self.workers {
            let (reply, answer) = oneshot::channel();
            if link.scrape.send(reply).await.is_err() {
                continue;
            }
            if let Ok(Ok(snapshot)) = tokio::time::timeout(SCRAPE_WAIT, answer).await {
                merged.merge(&snapshot);
            }
        }
        let tunnel = self.tunnel.as_ref().map(tunnel_states).unwrap_or_default();
        self.stats
            .set_workers(self.workers.len() - self.stopped_workers());
        let text = metrics::encode(&self.stats, &merged, &tunnel);
        let mut response = Response::new(Full::new(Bytes::from(text)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(metrics::CONTENT_TYPE),
        );
        response
    }

    /// Applies `config`, counting the swap or the rejection, and tells the workers
    /// of a swap. A config the plane already serves (same version and content) is
    /// neither.
    async fn apply(&self, config: &DataPlaneConfig) -> Result<Arc<crate::Snapshot>, Error> {
        match self.cell.apply(config) {
            Ok(Applied::Swapped(snapshot)) => {
                self.stats.config_swapped(snapshot.config_version);
                self.notify_workers().await;
                Ok(snapshot)
            }
            Ok(Applied::AlreadyServing(snapshot)) => Ok(snapshot),
            Err(err) => {
                self.stats.config_rejected();
                Err(err)
            }
        }
    }

    /// The version an embedded source's next config gets: one above the serving one.
    fn next_version(&self) -> u64 {
        self.cell
            .load()
            .as_ref()
            .map_or(1, |snapshot| snapshot.config_version + 1)
    }

    /// Applies the config the embedded control plane published last, with the
    /// next version. A refused one is reported; the running config stays.
    async fn apply_published(&self) {
        let Some(published) = &self.published else {
            return;
        };
        let Some(latest) = published.borrow_mut().borrow_and_update().clone() else {
            return;
        };
        let mut config = DataPlaneConfig::clone(&latest);
        config.version = self.next_version();
        match self.apply(&config).await {
            Ok(snapshot) => tracing::info!(
                version = snapshot.config_version,
                hash = %snapshot.content_hash,
                "cluster changed; serving its config"
            ),
            Err(err) => tracing::warn!(
                error = %err.chain(),
                "the cluster's config is refused; still serving the previous one"
            ),
        }
    }

    /// Applies the file source's new translation when its files changed.
    async fn reload_source(&self) {
        let Some(source) = &self.source else {
            return;
        };
        if !source.borrow().changed() {
            return;
        }
        let loaded = source.borrow_mut().load();
        let path = source.borrow().describe();
        let (mut config, refusals) = match loaded {
            Ok(loaded) => loaded,
            Err(err) => {
                tracing::warn!(
                    source = %path,
                    error = %err,
                    "manifests changed but are refused; still serving the previous config"
                );
                return;
            }
        };
        for refusal in &refusals {
            tracing::warn!(source = %path, %refusal, "not accepted");
        }
        config.version = self.next_version();
        match self.apply(&config).await {
            Ok(snapshot) => tracing::info!(
                source = %path,
                version = snapshot.config_version,
                hash = %snapshot.content_hash,
                "manifests changed; serving their config"
            ),
            Err(err) => tracing::warn!(
                source = %path,
                error = %err.chain(),
                "manifests changed but their config is refused; still serving the previous one"
            ),
        }
    }

    /// Recompiles the serving config if a certificate file it names has changed, and
    /// re-reads the API's own certificate if its files changed.
    async fn reload_certificates(&self) {
        if let Some(tls) = &self.tls {
            match tls.reload_if_changed() {
                Ok(true) => tracing::info!("config API certificate files changed; reloaded"),
                Ok(false) => {}
                Err(err) => tracing::warn!(
                    error = %err.chain(),
                    "config API certificate files changed but do not load; still serving the old ones"
                ),
            }
        }
        match self.cell.reload_changed_files() {
            Ok(true) => {
                if let Some(snapshot) = self.cell.load_full() {
                    tracing::info!(
                        version = snapshot.config_version,
                        "certificate files changed; reloaded"
                    );
                    self.stats.config_swapped(snapshot.config_version);
                }
                self.notify_workers().await;
            }
            Ok(false) => {}
            Err(err) => tracing::warn!(
                error = %err.chain(),
                "certificate files changed but do not load; still serving the old ones"
            ),
        }
    }

    /// Tells every worker a new snapshot is serving and waits (bounded) until each
    /// has reconciled its listeners.
    async fn notify_workers(&self) {
        let mut waits = Vec::with_capacity(self.workers.len());
        for link in &self.workers {
            let mut generation = 0;
            link.generation.send_modify(|current| {
                *current += 1;
                generation = *current;
            });
            waits.push((link.applied.clone(), generation));
        }
        let all = async {
            for (mut applied, generation) in waits {
                // An error means the worker is gone; nothing to wait for.
                let _ = applied.wait_for(|done| *done >= generation).await;
            }
        };
        if tokio::time::timeout(RECONCILE_WAIT, all).await.is_err() {
            tracing::warn!(wait = ?RECONCILE_WAIT, "workers did not reconcile their listeners in time");
        }
    }
}

/// How many tunnel connections are in each state, every state listed.
fn tunnel_states(tunnel: &culvert_connector::io::Tunnel) -> Vec<(&'static str, u64)> {
    use culvert_connector::io::ConnectionState;
    let status = tunnel.status().borrow().clone();
    let mut counts = [
        ("idle", 0),
        ("waiting", 0),
        ("connecting", 0),
        ("registered", 0),
        ("draining", 0),
        ("backoff", 0),
        ("stopped", 0),
    ];
    for connection in &status.connections {
        let index = match connection.state {
            ConnectionState::Idle => 0,
            ConnectionState::Waiting => 1,
            ConnectionState::Connecting => 2,
            ConnectionState::Registered { .. } => 3,
            ConnectionState::Draining => 4,
            ConnectionState::Backoff { .. } => 5,
            ConnectionState::Stopped => 6,
        };
        counts[index].1 += 1;
    }
    counts.to_vec()
}

/// Whether the `Content-Type` is `application/json` (parameters such as `charset`
/// allowed) or another `+json` type.
fn is_json(headers: &http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Compares two byte strings in time that depends only on their lengths, so a
/// mismatch position in a token cannot be timed.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, &expected) in b.iter().enumerate() {
        let offered = a.get(i).copied().unwrap_or(0);
        diff |= offered ^ expected;
    }
    std::hint::black_box(diff) == 0
}

fn too_large() -> Response<Full<Bytes>> {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("config larger than {MAX_CONFIG_BYTES} bytes"),
    )
}

/// `/healthz`: 200 while every worker runs; 503 once one has stopped (a worker
/// is not restarted in place, so the process should be).
fn health(stopped_workers: usize) -> (StatusCode, serde_json::Value) {
    if stopped_workers == 0 {
        return (StatusCode::OK, serde_json::json!({"status": "ok"}));
    }
    (
        StatusCode::SERVICE_UNAVAILABLE,
        serde_json::json!({"status": "degraded", "stoppedWorkers": stopped_workers}),
    )
}

fn error(status: StatusCode, reason: &str) -> Response<Full<Bytes>> {
    json(status, &serde_json::json!({ "error": reason }))
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Whether the control address may be used with these settings: loopback always;
/// any other address only with both a token and TLS, or when `insecure` says so.
pub(crate) fn check_exposure(
    addr: SocketAddr,
    token: Option<&str>,
    tls: bool,
    insecure: bool,
) -> Result<(), Error> {
    if addr.ip().is_loopback() || (token.is_some() && tls) || insecure {
        Ok(())
    } else {
        Err(Error::InsecureControl { addr })
    }
}

#[cfg(test)]
mod tests;
