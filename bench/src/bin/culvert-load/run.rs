//! The open loop: connections started on a fixed schedule, each measured on its own.
//!
//! Every `1 / rate` seconds a connection is due; the schedule never waits for
//! answers. The runtime's timer has a millisecond grain, so the connections due within
//! one millisecond start together; how late each started against its due time is
//! reported as the start lag (a large lag means this generator, not the server, fell
//! behind). Latency runs from a connection's start to its response's last byte.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::runtime::LocalOptions;
use tokio::time::Instant;

use culvert_bench::tls::AcceptAnyCertificate;

use crate::exchange::{Transport, exchange};
use crate::options::{Options, TlsOptions};
use crate::stats::{Sorted, ms};

/// Connections open at once beyond which due ones are skipped (and counted).
const MAX_IN_FLIGHT: usize = 8192;

/// What a run counted, over the connections due after the warm-up.
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
    lag: Sorted,
}

/// What the connections record while the run goes on.
#[derive(Debug, Default)]
struct Tally {
    report: Report,
    latencies: Vec<Duration>,
    lags: Vec<Duration>,
    in_flight: usize,
}

/// Runs the load `options` describe on this thread.
pub(crate) fn run(options: &Options) -> Result<Report, String> {
    let transport = Rc::new(match &options.tls {
        None => Transport::Plain,
        Some(tls) => tls_transport(tls)?,
    });
    let request = Rc::<[u8]>::from(
        format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: culvert-load\r\nConnection: close\r\n\r\n",
            options.path, options.host
        )
        .into_bytes(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build_local(LocalOptions::default())
        .map_err(|err| format!("cannot start a runtime: {err}"))?;
    let tally = Rc::new(RefCell::new(Tally::default()));
    runtime.block_on(schedule(options, transport, request, Rc::clone(&tally)));
    let tally = Rc::try_unwrap(tally)
        .map_err(|_| "connections outlived the run".to_owned())?
        .into_inner();
    Ok(Report {
        latency: Sorted::new(tally.latencies),
        lag: Sorted::new(tally.lags),
        ..tally.report
    })
}

/// Starts connections on schedule, then waits for the last ones (each bounded by
/// the timeout).
async fn schedule(
    options: &Options,
    transport: Rc<Transport>,
    request: Rc<[u8]>,
    tally: Rc<RefCell<Tally>>,
) {
    let period = Duration::from_secs_f64(1.0 / options.rate);
    let start = Instant::now();
    let counted_from = start + options.warmup;
    let end = counted_from + options.duration;
    let mut due = start;
    while due < end {
        if due > Instant::now() {
            tokio::time::sleep_until(due).await;
            continue;
        }
        let counted = due >= counted_from;
        let mut shared = tally.borrow_mut();
        if counted {
            shared.report.due += 1;
        }
        if shared.in_flight >= MAX_IN_FLIGHT {
            if counted {
                shared.report.skipped += 1;
            }
        } else {
            shared.in_flight += 1;
            drop(shared);
            let (transport, request, tally) = (
                Rc::clone(&transport),
                Rc::clone(&request),
                Rc::clone(&tally),
            );
            let (target, timeout) = (options.target, options.timeout);
            tokio::task::spawn_local(async move {
                let started = Instant::now();
                let result =
                    tokio::time::timeout(timeout, exchange(target, &transport, &request)).await;
                let latency = started.elapsed();
                let mut tally = tally.borrow_mut();
                tally.in_flight -= 1;
                if !counted {
                    return;
                }
                tally.lags.push(started - due);
                let report = &mut tally.report;
                match result {
                    Ok(Ok(answer)) if (200..400).contains(&answer.status) => {
                        report.ok += 1;
                        report.resumed += u64::from(answer.resumed);
                        tally.latencies.push(latency);
                    }
                    Ok(Ok(answer)) => {
                        report.bad_status += 1;
                        report
                            .first_error
                            .get_or_insert_with(|| format!("status {}", answer.status));
                    }
                    Ok(Err(error)) => {
                        report.failed += 1;
                        report.first_error.get_or_insert_with(|| error.to_string());
                    }
                    Err(_) => {
                        report.failed += 1;
                        report
                            .first_error
                            .get_or_insert_with(|| "timed out".to_owned());
                    }
                }
            });
        }
        due += period;
    }
    // The last connections each end within the timeout.
    while tally.borrow().in_flight > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

pub(crate) fn tls_transport(tls: &TlsOptions) -> Result<Transport, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
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
    // Sessions are resumed: the client keeps the server's tickets in memory (rustls'
    // default), as wrk reuses its session.
    let mut config = builder.with_no_client_auth();
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
        let latency = &self.latency;
        format!(
            "culvert-load: {rate}/s to {target} for {secs}s (after {warmup}s warm-up): \
             {due} due, {ok} answered 2xx/3xx, {bad} other status, {failed} failed, \
             {skipped} skipped (over {MAX_IN_FLIGHT} open), {resumed} TLS sessions resumed\n\
             latency ms (connect to last byte): p50 {p50} p90 {p90} p99 {p99} p99.9 {p999} \
             max {max}\nstart lag ms: p50 {lag50} p99 {lag99}{error}",
            rate = options.rate,
            target = options.target,
            secs = options.duration.as_secs_f64(),
            warmup = options.warmup.as_secs_f64(),
            due = self.due,
            ok = self.ok,
            bad = self.bad_status,
            failed = self.failed,
            skipped = self.skipped,
            resumed = self.resumed,
            p50 = ms(latency.quantile(0.5)),
            p90 = ms(latency.quantile(0.9)),
            p99 = ms(latency.quantile(0.99)),
            p999 = ms(latency.quantile(0.999)),
            max = ms(latency.max()),
            lag50 = ms(self.lag.quantile(0.5)),
            lag99 = ms(self.lag.quantile(0.99)),
            error = self
                .first_error
                .as_ref()
                .map(|error| format!("\nfirst error: {error}"))
                .unwrap_or_default(),
        )
    }

    /// One line of `key=value` pairs for scripts.
    pub(crate) fn result_line(&self) -> String {
        let latency = &self.latency;
        format!(
            "result due={} ok={} bad_status={} failed={} skipped={} resumed={} measured={} \
             p50_ms={} p90_ms={} p99_ms={} p999_ms={} max_ms={} lag_p99_ms={}",
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
            ms(self.lag.quantile(0.99)),
        )
    }
}
