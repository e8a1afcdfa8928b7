//! Thread-per-core workers: each one an OS thread running a tokio current-thread
//! runtime, with its own SO_REUSEPORT listening sockets, its own upstream connection
//! pool and its own random numbers. Nothing on the request path is shared between
//! workers except the read-only [`Snapshot`](crate::Snapshot) behind one atomic load.
//!
//! A worker never makes a routing decision itself (that is
//! `culvert_router::RouteTable::route`, asked through [`crate::pipeline`]) and never
//! holds a snapshot guard across an `.await`. Start at [`spawn`].
//!
//! The modules are layers, each using only the ones below it: `downstream` (client
//! connections and their protocols) → `exchange` (carrying out the pipeline's plan
//! for a request) → `upstream` (backend connections) → `body`, `io` and `runtime`
//! (request bodies, transports, the worker's clock, drain signal and listeners).
//!
//! Listener set: the config API thread bumps a per-worker `watch` generation after each
//! swap; the worker then binds the listeners the new snapshot adds and closes the
//! ones it removes (connections already accepted on a closed listener finish), and
//! acknowledges the generation on its own `watch`.

mod body;
mod downstream;
mod exchange;
mod io;
mod runtime;
mod trace;
mod upstream;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::runtime::LocalOptions;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::ClientLimits;
use crate::access_log::AccessLog;
use crate::metrics::{Refusal, StatsSnapshot};
pub(crate) use crate::pipeline::fields::Forwarding;
use crate::{Error, SnapshotCell};
use culvert_connector::io::{Tunnel, TunnelHandler};
use downstream::connection;
use downstream::tunnel::TunnelEntry;
use exchange::Worker;
use runtime::listen;
use runtime::tick::TICK;

/// The channels a worker thread is driven by.
pub(crate) struct WorkerChannels {
    /// Bumped by the config API thread after each snapshot swap.
    pub(crate) generation: watch::Receiver<u64>,
    /// The last generation this worker reconciled its listeners for.
    pub(crate) applied: watch::Sender<u64>,
    /// Closed (sender dropped) when the data plane stops.
    pub(crate) shutdown: watch::Receiver<()>,
    /// Turns `true` when the data plane drains: stop accepting, finish what is in
    /// flight.
    pub(crate) draining: watch::Receiver<bool>,
    /// How forwarding headers are written.
    pub(crate) forwarding: Forwarding,
    /// What a client may cost.
    pub(crate) client_limits: ClientLimits,
    /// Set to `true` once draining and every client connection has closed.
    pub(crate) drained: watch::Sender<bool>,
    /// Where request lines go.
    pub(crate) access_log: Arc<AccessLog>,
    /// Scrape requests from the config API thread, answered with a copy of the stats.
    pub(crate) scrape: tokio::sync::mpsc::Receiver<oneshot::Sender<StatsSnapshot>>,
    /// Seed of the worker's random numbers (weighted picks, sampling); the clock
    /// when `None`.
    pub(crate) seed: Option<u64>,
    /// The core to pin the thread to, if any.
    pub(crate) core: Option<core_affinity::CoreId>,
    /// The tunnel and the connection indices this worker drives.
    pub(crate) tunnel: Option<(Tunnel, Vec<u8>)>,
}

/// Starts worker `index` on its own thread. It reports on `ready` once it has bound
/// the listeners of the current snapshot (or failed to).
pub(crate) fn spawn(
    index: usize,
    cell: Arc<SnapshotCell>,
    channels: WorkerChannels,
    ready: mpsc::Sender<Result<(), Error>>,
) -> Result<std::thread::JoinHandle<()>, Error> {
    let name = format!("culvert-worker-{index}");
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            // A panic in the worker's own loop (connection tasks are caught by the
            // runtime) ends this thread; its listeners close and the others serve.
            let run = std::panic::AssertUnwindSafe(|| run(index, cell, channels, &ready));
            if std::panic::catch_unwind(run).is_err() {
                tracing::error!(
                    worker = index,
                    "worker stopped after a panic: its listeners are closed, the other \
                     workers serve, and /healthz answers 503 until the process restarts"
                );
            }
        })
        .map_err(|source| Error::Thread { name, source })
}

fn run(
    index: usize,
    cell: Arc<SnapshotCell>,
    channels: WorkerChannels,
    ready: &mpsc::Sender<Result<(), Error>>,
) {
    if let Some(core) = channels.core {
        if !core_affinity::set_for_current(core) {
            tracing::warn!(
                worker = index,
                core = core.id,
                "could not pin the worker to its core"
            );
        }
    }
    // A local runtime runs `!Send` tasks itself: a task woken on this thread goes
    // straight onto its run queue, where a `LocalSet` inside an ordinary runtime
    // would also wake the runtime's own future (an eventfd write per wake-up).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build_local(LocalOptions::default())
    {
        Ok(runtime) => runtime,
        Err(err) => {
            // The receiver only goes away if start-up was abandoned; nothing to tell.
            let _ = ready.send(Err(Error::Runtime(err)));
            return;
        }
    };
    runtime.block_on(async move {
        let WorkerChannels {
            mut generation,
            applied,
            mut shutdown,
            mut draining,
            forwarding,
            client_limits,
            drained,
            access_log,
            mut scrape,
            core: _,
            tunnel,
            seed,
        } = channels;
        let worker = Rc::new(Worker::new(
            index,
            cell,
            (forwarding, client_limits),
            access_log,
            seed,
        ));
        let mut listeners = Listeners::default();
        let first = *generation.borrow_and_update();
        let result = listeners.reconcile(&worker).await;
        let started = result.is_ok();
        let _ = ready.send(result);
        if !started {
            return;
        }
        applied.send_replace(first);
        if let Some((tunnel, indices)) = &tunnel {
            let entry: Rc<dyn TunnelHandler> = Rc::new(TunnelEntry(Rc::clone(&worker)));
            tunnel.spawn_local(indices.iter().copied(), entry);
        }
        let mut drain_started = false;
        let mut drain_reported = false;
        let mut sweep = tokio::time::interval(upstream::IDLE_SWEEP);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => worker.tick(),
                _ = sweep.tick() => worker.upstreams().sweep_idle(),
                changed = generation.changed(), if !drain_started => {
                    if changed.is_err() {
                        break;
                    }
                    let current = *generation.borrow_and_update();
                    if let Err(err) = listeners.reconcile(&worker).await {
                        tracing::error!(worker = index, error = %err.chain(), "new listeners not bound");
                    }
                    applied.send_replace(current);
                }
                _ = shutdown.changed() => break,
                Some(reply) = scrape.recv() => {
                    let _ = reply.send(worker.stats().snapshot());
                }
                _ = draining.wait_for(|draining| *draining), if !drain_started => {
                    // Stop accepting; connections finish on their own (each one
                    // watches the worker's drain signal).
                    drain_started = true;
                    tracing::debug!(worker = index, "draining");
                    worker.drain().start();
                    if let Some((tunnel, _)) = &tunnel {
                        tunnel.drain();
                    }
                    listeners.close_all().await;
                    worker.upstreams().close_idle();
                }
                () = worker.all_connections_closed(), if drain_started && !drain_reported => {
                    drain_reported = true;
                    tracing::debug!(worker = index, "drained");
                    drained.send_replace(true);
                }
            }
        }
        listeners.close_all().await;
    });
}

/// The listening sockets of one worker, each served by one accept task.
#[derive(Default)]
struct Listeners {
    open: BTreeMap<SocketAddr, (oneshot::Sender<()>, JoinHandle<()>)>,
}

impl Listeners {
    /// Binds the listeners the current snapshot wants and closes the others. Returns
    /// the first bind error; the other listeners are reconciled anyway.
    async fn reconcile(&mut self, worker: &Rc<Worker>) -> Result<(), Error> {
        let wanted = worker
            .cell()
            .load_full()
            .map(|snapshot| snapshot.listen_addrs())
            .unwrap_or_default();
        let removed: Vec<SocketAddr> = self
            .open
            .keys()
            .filter(|addr| !wanted.contains(addr))
            .copied()
            .collect();
        for addr in removed {
            if let Some((stop, task)) = self.open.remove(&addr) {
                drop(stop);
                // Wait until the accept task has dropped its socket, so the port is
                // closed once the generation is acknowledged. A join error means the
                // task is gone already, which is what we want.
                let _ = task.await;
                tracing::info!(worker = worker.index(), %addr, "listener closed");
            }
        }
        let mut first_error = None;
        for addr in wanted {
            if self.open.contains_key(&addr) {
                continue;
            }
            match listen::bind(addr) {
                Ok(listener) => {
                    let (stop, stopped) = oneshot::channel();
                    let task = tokio::task::spawn_local(accept_loop(
                        Rc::clone(worker),
                        listener,
                        addr,
                        stopped,
                    ));
                    self.open.insert(addr, (stop, task));
                    tracing::info!(worker = worker.index(), %addr, "listening");
                }
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    async fn close_all(&mut self) {
        for (_, (stop, task)) in std::mem::take(&mut self.open) {
            drop(stop);
            let _ = task.await;
        }
    }
}

/// Accepts until `stop` fires (its sender is dropped), then drops the socket.
/// Connections already accepted run on as their own tasks.
async fn accept_loop(
    worker: Rc<Worker>,
    listener: TcpListener,
    bound: SocketAddr,
    mut stop: oneshot::Receiver<()>,
) {
    let stats = worker.stats().listener(&bound.to_string());
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if worker.open_connections() >= worker.limits().max_connections_per_worker => {
                    // Full: closed at once, so the client retries elsewhere instead
                    // of waiting in this worker's queue.
                    worker.stats().refused(Refusal::ConnectionLimit);
                    drop(stream);
                }
                Ok((stream, peer)) => {
                    let worker = Rc::clone(&worker);
                    let open = stats.connection_opened();
                    connection::spawn(worker, stream, peer, bound, open);
                }
                Err(_) => {
                    // Usually out of file descriptors: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests;
