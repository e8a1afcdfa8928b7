//! The two ways a run paces its connections, each connection measured on its own.
//!
//! Open loop (`--rate`): every `1 / rate` seconds a connection is due; the schedule
//! never waits for answers. The runtime's timer has a millisecond grain, so the
//! connections due within one millisecond start together; how late each started
//! against its due time is reported as the start lag (a large lag means this
//! generator, not the server, fell behind).
//!
//! Closed loop (`--connections`): that many connections at a time, each one followed
//! by the next as soon as it ends, as wrk runs; the server's pace sets the rate.
//!
//! Either way, a connection counts when it starts after the warm-up and before the
//! end, and two latencies are kept: from its start (the connect call) to its
//! response's last byte, and from its request going out to that byte (the part wrk
//! times, which leaves out the TCP and TLS handshakes).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::runtime::LocalOptions;
use tokio::time::Instant;

use culvert_bench::tls::AcceptAnyCertificate;

use crate::exchange::{Answer, ExchangeError, Transport, exchange};
use crate::options::{Options, Pace, TlsOptions};
use crate::stats::{Sorted, ms};
use crate::tickets::RunSessions;

/// Connections open at once beyond which due ones are skipped (and counted).
const MAX_IN_FLIGHT: usize = 8192;

/// What a run counted, over the connections started after the warm-up.
#[derive(Debug, Default)]
pub(crate) struct Report {
    due: u64,
    ok: u64,
    bad_status: u64,
    failed: u64,
    skipped: u64,
    resumed: u64,
    first_error: Option<String>,
    latency: Sorted,
    request_latency: Sorted,
    lag: Sorted,
}

/// What the connections record while the run goes on.
#[derive(Debug, Default)]
struct Tally {
    report: Report,
    latencies: Vec<Duration>,
    request_latencies: Vec<Duration>,
    lags: Vec<Duration>,
    in_flight: usize,
}

impl Tally {
    /// Counts one connection that started at `started` and ended now with `result`.
    fn record(&mut self, started: Instant, result: Result<Answer, ExchangeError>) {
        let ended = Instant::now();
        let report = &mut self.report;
        match result {
            Ok(answer) if (200..400).contains(&answer.status) => {
                report.ok += 1;
                report.resumed += u64::from(answer.resumed);
                self.latencies.push(ended - started);
                self.request_latencies.push(ended - answer.sent);
            }
            Ok(answer) => {
                report.bad_status += 1;
                report
                    .first_error
                    .get_or_insert_with(|| format!("status {}", answer.status));
            }
            Err(error) => {
                report.failed += 1;
                report.first_error.get_or_insert_with(|| error.to_string());
            }
        }
    }
}

/// What every connection of a run shares.
struct Load {
    target: SocketAddr,
    timeout: Duration,
    transport: Transport,
    request: Vec<u8>,
    tally: RefCell<Tally>,
}

impl Load {
    /// One connection, bounded by the timeout; what it got, if `counted`. `due` is
    /// when the open loop's schedule wanted it started, for the start lag.
    async fn connection(&self, counted: bool, due: Option<Instant>) {
        let started = Instant::now();
        let result = tokio::time::timeout(
            self.timeout,
            exchange(self.target, &self.transport, &self.request),
        )
        .await
        .unwrap_or(Err(ExchangeError::TimedOut));
        if counted {
            let mut tally = self.tally.borrow_mut();
            tally.report.due += 1;
            tally.lags.extend(due.map(|due| started - due));
            tally.record(started, result);
        }
    }
}

/// Runs the load `options` describe on this thread.
pub(crate) fn run(options: &Options) -> Result<Report, String> {
    let transport = match &options.tls {
        None => Transport::Plain,
        Some(tls) => tls_transport(tls)?,
    };
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: culvert-load\r\nConnection: close\r\n\r\n",
        options.path, options.host
    )
    .into_bytes();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build_local(LocalOptions::default())
        .map_err(|err| format!("cannot start a runtime: {err}"))?;
    let load = Rc::new(Load {
        target: options.target,
        timeout: options.timeout,
        transport,
        request,
        tally: RefCell::default(),
    });
    let start = Instant::now();
    let window = Window {
        counted_from: start + options.warmup,
        end: start + options.warmup + options.duration,
    };
    runtime.block_on(async {
        match options.pace {
            Pace::Rate(rate) => open_loop(&load, rate, start, window).await,
            Pace::Connections(count) => closed_loop(&load, count, window).await,
        }
    });
    let load = Rc::try_unwrap(load).map_err(|_| "connections outlived the run".to_owned())?;
    let tally = load.tally.into_inner();
    Ok(Report {
        latency: Sorted::new(tally.latencies),
        request_latency: Sorted::new(tally.request_latencies),
        lag: Sorted::new(tally.lags),
        ..tally.report
    })
}

/// When connections count: from the end of the warm-up to the end of the run.
#[derive(Debug, Clone, Copy)]
struct Window {
    counted_from: Instant,
    end: Instant,
}

/// Starts connections on schedule from `start`, then waits for the last ones (each
/// bounded by the timeout).
async fn open_loop(load: &Rc<Load>, rate: f64, start: Instant, window: Window) {
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut due = start;
    while due < window.end {
        if due > Instant::now() {
            tokio::time::sleep_until(due).await;
            continue;
        }
        let counted = due >= window.counted_from;
        let mut tally = load.tally.borrow_mut();
        if tally.in_flight >= MAX_IN_FLIGHT {
            if counted {
                tally.report.due += 1;
                tally.report.skipped += 1;
            }
        } else {
            tally.in_flight += 1;
            drop(tally);
            let load = Rc::clone(load);
            tokio::task::spawn_local(async move {
                load.connection(counted, Some(due)).await;
                load.tally.borrow_mut().in_flight -= 1;
            });
        }
        due += period;
    }
    // The last connections each end within the timeout.
    while load.tally.borrow().in_flight > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Keeps `count` connections going, each followed by the next as soon as it ends,
/// until the window closes; the last ones end within the timeout.
async fn closed_loop(load: &Rc<Load>, count: usize, window: Window) {
    let loops: Vec<_> = (0..count)
        .map(|_| {
            let load = Rc::clone(load);
            tokio::task::spawn_local(async move {
                loop {
                    let now = Instant::now();
                    if now >= window.end {
                        break;
                    }
                    load.connection(now >= window.counted_from, None).await;
                }
            })
        })
        .collect();
    for one in loops {
        // A loop only ends by returning; a panic in it is a bug worth reporting.
        if let Err(err) = one.await {
            std::panic::resume_unwind(err.into_panic());
        }
    }
}

pub(crate) fn tls_transport(tls: &TlsOptions) -> Result<Transport, String> {
    let provider = culvert_tls::crypto_provider();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("TLS settings: {err}"))?;
    let builder = match &tls.ca {
        Some(ca) => builder.with_root_certificates(roots(ca)?),
        // As wrk and h2load: the certificate is not checked (signatures still are).
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate::new(provider))),
    };
    // Sessions are resumed, as wrk reuses its session: the client keeps the server's
    // tickets, enough of them for every connection of a run (see `tickets`).
    let mut config = builder.with_no_client_auth();
    config.resumption = rustls::client::Resumption::store(Arc::new(RunSessions::default()));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(tls.server_name.clone())
        .map_err(|err| format!("server name {}: {err}", tls.server_name))?;
    Ok(Transport::Tls {
        connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
        name,
    })
}

/// The certificates of a PEM file, as trust roots.
fn roots(ca: &Path) -> Result<rustls::RootCertStore, String> {
    let fail = |err: &dyn std::fmt::Display| format!("{}: {err}", ca.display());
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_file_iter(ca).map_err(|err| fail(&err))? {
        let certificate = certificate.map_err(|err| fail(&err))?;
        roots.add(certificate).map_err(|err| fail(&err))?;
    }
    Ok(roots)
}

impl Report {
    /// A few lines for people.
    pub(crate) fn summary(&self, options: &Options) -> String {
        let (pace, lag) = match options.pace {
            Pace::Rate(rate) => (
                format!("{rate} connections/s"),
                format!(
                    "\nstart lag ms: p50 {} p99 {}",
                    ms(self.lag.quantile(0.5)),
                    ms(self.lag.quantile(0.99))
                ),
            ),
            Pace::Connections(count) => (format!("{count} connections at a time"), String::new()),
        };
        format!(
            "culvert-load: {pace} to {target} for {secs}s (after {warmup}s warm-up): \
             {due} connections counted, {ok} answered 2xx/3xx, {bad} other status, \
             {failed} failed, {skipped} skipped (over {MAX_IN_FLIGHT} open), \
             {resumed} TLS sessions resumed\n\
             latency ms, connect to last byte: {whole}\n\
             latency ms, request sent to last byte (as wrk times it): {request}{lag}{error}",
            target = options.target,
            secs = options.duration.as_secs_f64(),
            warmup = options.warmup.as_secs_f64(),
            due = self.due,
            ok = self.ok,
            bad = self.bad_status,
            failed = self.failed,
            skipped = self.skipped,
            resumed = self.resumed,
            whole = percentiles(&self.latency),
            request = percentiles(&self.request_latency),
            error = self
                .first_error
                .as_ref()
                .map(|error| format!("\nfirst error: {error}"))
                .unwrap_or_default(),
        )
    }

    /// One line of `key=value` pairs for scripts (`lag_p99_ms` only in open loop).
    pub(crate) fn result_line(&self) -> String {
        let (latency, request) = (&self.latency, &self.request_latency);
        let lag = if !self.lag.is_empty() {
            format!(" lag_p99_ms={}", ms(self.lag.quantile(0.99)))
        } else {
            String::new()
        };
        format!(
            "result due={} ok={} bad_status={} failed={} skipped={} resumed={} measured={} \
             p50_ms={} p90_ms={} p99_ms={} p999_ms={} max_ms={} request_p50_ms={} \
             request_p99_ms={}{lag}",
            self.due,
            self.ok,
            self.bad_status,
            self.failed,
            self.skipped,
            self.resumed,
            latency.len(),
            ms(latency.quantile(0.5)),
            ms(latency.quantile(0.9)),
            ms(latency.quantile(0.99)),
            ms(latency.quantile(0.999)),
            ms(latency.max()),
            ms(request.quantile(0.5)),
            ms(request.quantile(0.99)),
        )
    }
}

/// `p50 .. p90 .. p99 .. p99.9 .. max ..` of some latencies.
fn percentiles(values: &Sorted) -> String {
    format!(
        "p50 {} p90 {} p99 {} p99.9 {} max {}",
        ms(values.quantile(0.5)),
        ms(values.quantile(0.9)),
        ms(values.quantile(0.99)),
        ms(values.quantile(0.999)),
        ms(values.max()),
    )
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A loopback server that answers every request after `pause`, a thread per
    /// connection; it notes the most connections it had open at once.
    fn slow_server(pause: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (open, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let seen = Arc::clone(&most);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (open, most) = (Arc::clone(&open), Arc::clone(&most));
                std::thread::spawn(move || {
                    let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let mut head = Vec::new();
                    let mut buf = [0; 1024];
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(read) => head.extend_from_slice(&buf[..read]),
                        }
                    }
                    std::thread::sleep(pause);
                    open.fetch_sub(1, Ordering::SeqCst);
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                });
            }
        });
        (addr, seen)
    }

    /// The closed loop keeps exactly its connections going over real loopback: never
    /// more open at once, each answered, and the request latency (wrk's part) inside
    /// the whole one.
    #[test]
    fn a_closed_loop_keeps_its_connections_going_and_times_both_parts() {
        let (target, most_open) = slow_server(Duration::from_millis(5));
        let options = Options {
            target,
            tls: None,
            host: target.to_string(),
            path: "/".to_owned(),
            pace: Pace::Connections(2),
            duration: Duration::from_millis(400),
            warmup: Duration::from_millis(100),
            timeout: Duration::from_secs(5),
        };
        let report = run(&options).unwrap();
        assert_eq!(
            report.failed + report.bad_status + report.skipped,
            0,
            "{report:?}"
        );
        assert!(report.ok >= 10, "{report:?}");
        assert_eq!(report.due, report.ok);
        assert_eq!(report.latency.len() as u64, report.ok);
        assert!(most_open.load(Ordering::SeqCst) <= 2);
        assert!(
            report.lag.is_empty(),
            "a closed loop has no schedule to lag"
        );
        for q in [0.5, 0.99] {
            let (whole, request) = (
                report.latency.quantile(q),
                report.request_latency.quantile(q),
            );
            assert!(request >= Duration::from_millis(5), "{request:?}");
            assert!(whole >= request, "{whole:?} < {request:?}");
        }
        let line = report.result_line();
        assert!(line.contains(" request_p99_ms="), "{line}");
        assert!(!line.contains("lag_p99_ms"), "{line}");
    }
}
