//! Starting and stopping a whole data plane: the workers, the config API thread and the
//! snapshot they share. Start at [`Server::start`].
//!
//! Order matters: the control address is checked and the initial config (if any) is
//! compiled before anything is bound, so a bad config fails start-up without having
//! opened a socket.
//!
//! Draining ([`Server::start_drain`], or `POST /drain` on the config API): readiness
//! goes false, every worker closes its listeners and idle upstream connections, and
//! client connections close once their requests in flight are answered;
//! [`Server::wait_drained`] resolves when every worker has no connection left. The
//! caller bounds that wait by its grace period. Stopping ([`Server::shutdown`], or
//! dropping the [`Server`]) ends the threads at once; whatever is still in flight is
//! cut.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, mpsc};

use culvert_router::DataPlaneConfig;
use tokio::sync::watch;

use crate::ClientLimits;
use crate::acme::{self, AcmeCertificates, AcmeManagers, AcmeSettings};
use crate::config_api::{self, ConfigApi, ConfigApiTls, ConfigApiTlsFiles, WorkerLink};
use crate::metrics::ConfigApiStats;
use crate::worker::{self, Forwarding, WorkerChannels};
use crate::{AccessLog, ConfigSource, Error, SnapshotCell};
use culvert_connector::io::{Tunnel, TunnelConfig};

/// How to start a data plane.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServeConfig {
    /// Where the config API listens; port 0 picks a free port (see
    /// [`Server::control_addr`]).
    pub control: SocketAddr,
    /// Worker threads; `None` = available parallelism.
    pub workers: Option<NonZeroUsize>,
    /// Pin worker `i` to the `i`-th core this process may run on (modulo their
    /// number), so each runtime keeps its caches and its connections stay on one core.
    pub pin_workers: bool,
    /// Bearer token the config API requires, if any.
    pub token: Option<String>,
    /// Allow a non-loopback control address without a token and TLS.
    pub insecure_control: bool,
    /// Certificate and key files of the config API; without them it speaks plain
    /// HTTP (allowed on loopback only, unless `insecure_control`).
    pub control_tls: Option<ConfigApiTlsFiles>,
    /// Config to serve from the start; without one, the plane waits for
    /// `PUT /config`.
    pub initial: Option<DataPlaneConfig>,
    /// Proxies in front of this one whose forwarding headers are believed.
    pub trusted_hops: u32,
    /// What a client may cost before it is refused or cut off.
    pub client_limits: ClientLimits,
    /// Seed of the workers' random numbers (weighted backend picks, mirror and log
    /// sampling), for reproducible runs such as the live conformance harness;
    /// `None` seeds from the clock.
    pub random_seed: Option<u64>,
    /// Fraction of successful requests written to the access log (failures always
    /// are); `None` turns the access log off.
    pub access_log: Option<f64>,
    /// A Cloudflare Tunnel to serve: its connections are spread over the workers and
    /// its requests enter the same pipeline as listener traffic.
    pub tunnel: Option<TunnelConfig>,
    /// A config to serve and follow (the binary's Gateway API manifests); loaded
    /// before anything is bound (a refused load fails start-up), then re-loaded when
    /// it changes.
    pub source: Option<Box<dyn ConfigSource>>,
    /// Configs an embedded control plane publishes (the Kubernetes source): each
    /// new one is applied with the next version; `None` in the channel means none
    /// yet, and the plane is not ready until one arrives.
    pub published: Option<watch::Receiver<Option<Arc<DataPlaneConfig>>>>,
    /// How certificates of listeners with `tls.acme` are obtained; without it such
    /// a listener is refused.
    pub acme: Option<AcmeSettings>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            control: SocketAddr::from(([127, 0, 0, 1], 8081)),
            workers: None,
            pin_workers: false,
            token: None,
            insecure_control: false,
            initial: None,
            trusted_hops: 0,
            client_limits: ClientLimits::default(),
            random_seed: None,
            control_tls: None,
            source: None,
            published: None,
            tunnel: None,
            access_log: None,
            acme: None,
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

    /// Sets [`ServeConfig::pin_workers`].
    #[must_use]
    pub fn with_pinned_workers(mut self, pin: bool) -> Self {
        self.pin_workers = pin;
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

    /// Sets [`ServeConfig::control_tls`].
    #[must_use]
    pub fn with_control_tls(mut self, files: ConfigApiTlsFiles) -> Self {
        self.control_tls = Some(files);
        self
    }

    /// Sets [`ServeConfig::random_seed`].
    #[must_use]
    pub fn with_random_seed(mut self, seed: u64) -> Self {
        self.random_seed = Some(seed);
        self
    }

    /// Sets [`ServeConfig::client_limits`].
    #[must_use]
    pub fn with_client_limits(mut self, limits: ClientLimits) -> Self {
        self.client_limits = limits;
        self
    }

    /// Sets [`ServeConfig::trusted_hops`].
    #[must_use]
    pub fn with_trusted_hops(mut self, hops: u32) -> Self {
        self.trusted_hops = hops;
        self
    }

    /// Sets [`ServeConfig::access_log`].
    #[must_use]
    pub fn with_access_log(mut self, sample: Option<f64>) -> Self {
        self.access_log = sample;
        self
    }

    /// Sets [`ServeConfig::tunnel`].
    #[must_use]
    pub fn with_tunnel(mut self, tunnel: TunnelConfig) -> Self {
        self.tunnel = Some(tunnel);
        self
    }

    /// Sets [`ServeConfig::published`].
    #[must_use]
    pub fn with_published(
        mut self,
        configs: watch::Receiver<Option<Arc<DataPlaneConfig>>>,
    ) -> Self {
        self.published = Some(configs);
        self
    }

    /// Sets [`ServeConfig::source`].
    #[must_use]
    pub fn with_source(mut self, source: impl ConfigSource + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Sets [`ServeConfig::acme`].
    #[must_use]
    pub fn with_acme(mut self, acme: AcmeSettings) -> Self {
        self.acme = Some(acme);
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
    /// `true` once draining.
    draining: Arc<watch::Sender<bool>>,
    /// One per worker: `true` once it has drained.
    drained: Vec<watch::Receiver<bool>>,
    /// The tunnel, if one is served.
    tunnel: Option<Tunnel>,
    /// The ACME managers, if the plane does ACME.
    acme: Option<AcmeManagers>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Checks the settings, compiles the initial config, binds the control address
    /// and every listener, and starts the threads. Returns once every worker is
    /// accepting on the initial config's listeners.
    pub fn start(mut config: ServeConfig) -> Result<Self, Error> {
        config_api::check_exposure(
            config.control,
            config.token.as_deref(),
            config.control_tls.is_some(),
            config.insecure_control,
        )?;
        let control_tls = config
            .control_tls
            .clone()
            .map(ConfigApiTls::load)
            .transpose()?;
        let acme_certificates = config.acme.as_ref().map(|settings| {
            Arc::new(AcmeCertificates::new(
                settings.state_dir.clone(),
                culvert_acme::Challenges::new(),
            ))
        });
        let cell = Arc::new(match &acme_certificates {
            Some(acme) => SnapshotCell::with_acme(Arc::clone(acme)),
            None => SnapshotCell::new(),
        });
        if let Some(initial) = &config.initial {
            cell.apply(initial)?;
        }
        if let Some(source) = &mut config.source {
            let (mut initial, refusals) = source.load().map_err(Error::Source)?;
            for refusal in &refusals {
                tracing::warn!(source = %source.describe(), %refusal, "not accepted");
            }
            initial.version = 1;
            cell.apply(&initial)?;
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
        let (draining, draining_rx) = watch::channel(false);
        let mut server = Self {
            control_addr,
            cell: Arc::clone(&cell),
            shutdown: Some(shutdown),
            draining: Arc::new(draining),
            drained: Vec::with_capacity(workers),
            tunnel: None,
            acme: None,
            threads: Vec::with_capacity(workers + 2),
        };
        let forwarding = Forwarding {
            trusted_hops: config.trusted_hops,
        };
        let access_log = Arc::new(match config.access_log {
            Some(sample) => AccessLog::start(sample)?,
            None => AccessLog::off(),
        });
        let cores = if config.pin_workers {
            core_affinity::get_core_ids().unwrap_or_default()
        } else {
            Vec::new()
        };
        let tunnel = config
            .tunnel
            .take()
            .map(Tunnel::new)
            .transpose()
            .map_err(Error::Tunnel)?;
        server.tunnel.clone_from(&tunnel);
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut links = Vec::with_capacity(workers);
        for index in 0..workers {
            let (generation_tx, generation_rx) = watch::channel(0);
            let (applied_tx, applied_rx) = watch::channel(0);
            let (drained_tx, drained_rx) = watch::channel(false);
            let (scrape_tx, scrape_rx) = tokio::sync::mpsc::channel(1);
            server.drained.push(drained_rx);
            let channels = WorkerChannels {
                generation: generation_rx,
                applied: applied_tx,
                shutdown: shutdown_rx.clone(),
                draining: draining_rx.clone(),
                forwarding,
                client_limits: config.client_limits,
                drained: drained_tx,
                access_log: Arc::clone(&access_log),
                scrape: scrape_rx,
                core: (!cores.is_empty()).then(|| cores[index % cores.len()]),
                seed: config.random_seed.map(|seed| seed ^ index as u64),
                tunnel: tunnel.as_ref().map(|tunnel| {
                    // Connection i runs on worker i mod workers.
                    let mine = tunnel
                        .connection_indices()
                        .filter(|i| usize::from(*i) % workers == index)
                        .collect();
                    (tunnel.clone(), mine)
                }),
            };
            let thread = worker::spawn(index, Arc::clone(&cell), channels, ready_tx.clone())?;
            server.threads.push(thread);
            links.push(WorkerLink {
                generation: generation_tx,
                applied: applied_rx,
                scrape: scrape_tx,
            });
        }
        drop(ready_tx);
        for index in 0..workers {
            // Dropping `server` on an error stops the workers already started.
            ready_rx.recv().map_err(|_| Error::WorkerLost { index })??;
        }
        let api = ConfigApi {
            cell,
            token: config.token,
            workers: links,
            draining: Arc::clone(&server.draining),
            source: config.source.map(RefCell::new),
            published: config.published.map(RefCell::new),
            stats: ConfigApiStats::new(),
            tls: control_tls,
            tunnel,
        };
        api.stats.set_workers(workers);
        if let Some(snapshot) = api.cell.load_full() {
            api.stats.config_swapped(snapshot.config_version);
        }
        if let (Some(settings), Some(certificates)) = (config.acme, acme_certificates) {
            let (thread, managers) = acme::spawn(
                settings,
                certificates,
                Arc::clone(&server.cell),
                shutdown_rx.clone(),
            )?;
            server.threads.push(thread);
            server.acme = Some(managers);
        }
        let thread = config_api::spawn(api, control_listener, shutdown_rx)?;
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

    /// Starts draining: readiness goes false and the workers stop accepting. Returns
    /// at once; see [`Server::wait_drained`].
    pub fn start_drain(&self) {
        self.draining.send_replace(true);
    }

    /// Resolves once draining has started, by [`Server::start_drain`] or by
    /// `POST /drain`.
    pub async fn drain_requested(&self) {
        let mut draining = self.draining.subscribe();
        let _ = draining.wait_for(|draining| *draining).await;
    }

    /// Resolves once every worker has drained (no listener, no client connection)
    /// and the tunnel, if any, has unregistered and finished its streams.
    pub async fn wait_drained(&self) {
        for drained in &self.drained {
            let mut drained = drained.clone();
            // An error means the worker is gone, which is drained too.
            let _ = drained.wait_for(|drained| *drained).await;
        }
        if let Some(tunnel) = &self.tunnel {
            // An error is a tunnel that stopped on its own: nothing left to drain.
            let _ = tunnel.closed().await;
        }
    }

    /// Has every ACME manager run a round now instead of at its next renewal check
    /// (a manager still keeps a certificate that is not due by its clock). Nothing
    /// happens without ACME settings.
    pub fn acme_recheck_now(&self) {
        if let Some(acme) = &self.acme {
            acme.recheck_now();
        }
    }

    /// The hostnames whose certificates ACME managers keep now.
    pub fn acme_names(&self) -> Vec<String> {
        self.acme
            .as_ref()
            .map(AcmeManagers::names)
            .unwrap_or_default()
    }

    /// The tunnel, if one is served (for its status).
    pub fn tunnel(&self) -> Option<&Tunnel> {
        self.tunnel.as_ref()
    }

    /// Stops accepting, ends every thread and waits for them.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(tunnel) = &self.tunnel {
            tunnel.shutdown();
        }
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
