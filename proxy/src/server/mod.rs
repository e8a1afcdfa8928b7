//! Starting and stopping a whole data plane: the workers, the control thread and the
//! snapshot they share. Start at [`Server::start`].
//!
//! Order matters: the control address is checked and the initial config (if any) is
//! compiled before anything is bound, so a bad config fails start-up without having
//! opened a socket.
//!
//! Stopping ([`Server::shutdown`], or dropping the [`Server`]) closes every listener
//! and ends the threads at once; in-flight requests are cut. A graceful drain
//! (stop accepting, let requests finish within a grace period) is a later step.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, mpsc};

use culvert_router::DataPlaneConfig;
use tokio::sync::watch;

use crate::control::{self, Control, WorkerLink};
use crate::worker::{self, WorkerChannels};
use crate::{Error, SnapshotCell};

/// How to start a data plane.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// Where the config API listens; port 0 picks a free port (see
    /// [`Server::control_addr`]).
    pub control: SocketAddr,
    /// Worker threads; `None` = available parallelism.
    pub workers: Option<NonZeroUsize>,
    /// Bearer token the config API requires, if any.
    pub token: Option<String>,
    /// Allow a non-loopback control address without a token.
    pub insecure_control: bool,
    /// Config to serve from the start; without one, the plane waits for
    /// `PUT /config`.
    pub initial: Option<DataPlaneConfig>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            control: SocketAddr::from(([127, 0, 0, 1], 8081)),
            workers: None,
            token: None,
            insecure_control: false,
            initial: None,
        }
    }
}

impl ServeConfig {
    /// The defaults with the config API on `control`.
    pub fn new(control: SocketAddr) -> Self {
        Self {
            control,
            ..Self::default()
        }
    }

    /// Sets [`ServeConfig::workers`].
    #[must_use]
    pub fn with_workers(mut self, workers: NonZeroUsize) -> Self {
        self.workers = Some(workers);
        self
    }

    /// Sets [`ServeConfig::token`].
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Sets [`ServeConfig::insecure_control`].
    #[must_use]
    pub fn with_insecure_control(mut self, insecure: bool) -> Self {
        self.insecure_control = insecure;
        self
    }

    /// Sets [`ServeConfig::initial`].
    #[must_use]
    pub fn with_initial(mut self, config: DataPlaneConfig) -> Self {
        self.initial = Some(config);
        self
    }
}

/// A running data plane. Stops on [`Server::shutdown`] or when dropped.
#[derive(Debug)]
pub struct Server {
    control_addr: SocketAddr,
    cell: Arc<SnapshotCell>,
    /// Dropping it tells every thread to stop.
    shutdown: Option<watch::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Checks the settings, compiles the initial config, binds the control address
    /// and every listener, and starts the threads. Returns once every worker is
    /// accepting on the initial config's listeners.
    pub fn start(config: ServeConfig) -> Result<Self, Error> {
        control::check_exposure(
            config.control,
            config.token.as_deref(),
            config.insecure_control,
        )?;
        let cell = Arc::new(SnapshotCell::new());
        if let Some(initial) = &config.initial {
            cell.apply(initial)?;
        }
        let control_listener =
            std::net::TcpListener::bind(config.control).map_err(|source| Error::Bind {
                addr: config.control,
                source,
            })?;
        let control_addr = control_listener
            .local_addr()
            .and_then(|addr| control_listener.set_nonblocking(true).map(|()| addr))
            .map_err(|source| Error::Bind {
                addr: config.control,
                source,
            })?;
        let workers = config
            .workers
            .or_else(|| std::thread::available_parallelism().ok())
            .map_or(1, NonZeroUsize::get);

        let (shutdown, shutdown_rx) = watch::channel(());
        let mut server = Self {
            control_addr,
            cell: Arc::clone(&cell),
            shutdown: Some(shutdown),
            threads: Vec::with_capacity(workers + 1),
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut links = Vec::with_capacity(workers);
        for index in 0..workers {
            let (generation_tx, generation_rx) = watch::channel(0);
            let (applied_tx, applied_rx) = watch::channel(0);
            let channels = WorkerChannels {
                generation: generation_rx,
                applied: applied_tx,
                shutdown: shutdown_rx.clone(),
            };
            let thread = worker::spawn(index, Arc::clone(&cell), channels, ready_tx.clone())?;
            server.threads.push(thread);
            links.push(WorkerLink {
                generation: generation_tx,
                applied: applied_rx,
            });
        }
        drop(ready_tx);
        for index in 0..workers {
            // Dropping `server` on an error stops the workers already started.
            ready_rx.recv().map_err(|_| Error::WorkerLost { index })??;
        }
        let control = Control {
            cell,
            token: config.token,
            workers: links,
        };
        let thread = control::spawn(control, control_listener, shutdown_rx)?;
        server.threads.push(thread);
        Ok(server)
    }

    /// Where the config API listens.
    pub fn control_addr(&self) -> SocketAddr {
        self.control_addr
    }

    /// The snapshot cell every worker reads.
    pub fn snapshot(&self) -> &Arc<SnapshotCell> {
        &self.cell
    }

    /// Stops accepting, ends every thread and waits for them.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shutdown.take();
        for thread in self.threads.drain(..) {
            // A panicked thread has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
