//! The Prometheus text exposition of the metrics.
//!
//! Owns [`encode`] and the metric names, help texts and label names; the writing
//! itself (escaping, `_total` suffixes, cumulative `le` buckets) is the
//! `prometheus-client` crate's, through a one-shot `Collector`. Runs on the control
//! thread at scrape time; never on the request path and never reads a worker's cells,
//! only snapshots.
//!
//! Format: Prometheus text 0.0.4 (no `# EOF` line), to be served with
//! [`CONTENT_TYPE`].

use prometheus_client::collector::Collector;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::config_api::ConfigApiValues;
use super::snapshot::RouteSnapshot;

/// Reads one counter of a route.
type RouteCounter = fn(&RouteSnapshot) -> u64;
use super::{
    ConfigApiStats, DURATION_BOUNDS_NANOS, Refusal, STATUS_CLASSES, StatsSnapshot, TlsRouteEnd,
};
use crate::pipeline::BackendFailure;

/// The `Content-Type` to serve [`encode`]'s output with:
/// `text/plain; version=0.0.4; charset=utf-8`.
pub(crate) const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// The whole exposition: the config API thread's counters and the workers' merged
/// snapshot. Series are sorted by label value; request counters and backend errors
/// appear only for the status classes and reasons seen at least once, every other
/// per-route and per-listener series from the first time its route or listener was
/// looked up.
///
/// Clones `merged` once (the crate's encoder takes only owned collectors); that is a
/// few hundred bytes per route, per scrape, on the config API thread.
///
/// `tunnel` holds how many tunnel connections are in each state (`registered`,
/// `connecting`, ...), empty when no tunnel is served.
pub(crate) fn encode(
    control: &ConfigApiStats,
    merged: &StatsSnapshot,
    tunnel: &[(&'static str, u64)],
) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Exposition {
        control: control.values(),
        stats: merged.clone(),
        tunnel: tunnel.to_vec(),
    }));
    let mut text = String::new();
    // Writing to a `String` cannot fail, and the crate's text encoder only errs on
    // native-only histograms, which `Exposition` never writes.
    prometheus_text::encode(&mut text, &registry)
        .expect("text encoding of counters, gauges and classic histograms into a String");
    text
}

/// One scrape's worth of values, handed to the registry as a collector.
#[derive(Debug)]
struct Exposition {
    control: ConfigApiValues,
    stats: StatsSnapshot,
    tunnel: Vec<(&'static str, u64)>,
}

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = &self.stats;

        if !self.tunnel.is_empty() {
            let mut family = encoder.encode_descriptor(
                "culvert_tunnel_connections",
                "Tunnel connections by state",
                None,
                MetricType::Gauge,
            )?;
            for (state, count) in &self.tunnel {
                family
                    .encode_family(&[("state", *state)])?
                    .encode_gauge(count)?;
            }
        }

        encoder
            .encode_descriptor(
                "culvert_requests_in_flight",
                "Requests being served, summed over the workers",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&stats.in_flight)?;

        // Counter names go in without `_total`; the encoder appends it.
        let mut family = encoder.encode_descriptor(
            "culvert_requests",
            "Requests answered, by route and status class",
            None,
            MetricType::Counter,
        )?;
        for (route, counts) in &stats.routes {
            for (class, &count) in STATUS_CLASSES.iter().zip(&counts.responses) {
                if count > 0 {
                    family
                        .encode_family(&[("route", route.as_str()), ("status_class", class)])?
                        .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                }
            }
        }

        let bounds = DURATION_BOUNDS_NANOS.map(|nanos| nanos as f64 / 1e9);
        let mut family = encoder.encode_descriptor(
            "culvert_request_duration_seconds",
            "Time from request start until the answer, by route",
            None,
            MetricType::Histogram,
        )?;
        for (route, counts) in &stats.routes {
            let histogram = &counts.duration;
            // Finite bounds only: the encoder writes `le="+Inf"` from the total count.
            let buckets: Vec<(f64, u64)> = bounds
                .iter()
                .copied()
                .zip(histogram.buckets.iter().copied())
                .collect();
            family
                .encode_family(&[("route", route.as_str())])?
                .encode_histogram::<NoLabelSet>(
                    histogram.sum_nanos as f64 / 1e9,
                    histogram.count(),
                    &buckets,
                    None,
                )?;
        }

        let mut family = encoder.encode_descriptor(
            "culvert_backend_errors",
            "Requests that got no usable upstream response, by route and reason",
            None,
            MetricType::Counter,
        )?;
        for (route, counts) in &stats.routes {
            for (reason, &count) in BackendFailure::ALL.iter().zip(&counts.backend_failures) {
                if count > 0 {
                    family
                        .encode_family(&[("route", route.as_str()), ("reason", reason.as_str())])?
                        .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                }
            }
        }

        let mut family = encoder.encode_descriptor(
            "culvert_tls_route_connections",
            "TLSRoute connections (passed through or terminated here), by route and how they ended",
            None,
            MetricType::Counter,
        )?;
        for (route, counts) in &stats.routes {
            for (end, &count) in TlsRouteEnd::ALL.iter().zip(&counts.tls_route) {
                if count > 0 {
                    family
                        .encode_family(&[("route", route.as_str()), ("end", end.as_str())])?
                        .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                }
            }
        }

        let byte_counters: [(&str, &str, RouteCounter); 2] = [
            (
                "culvert_request_bytes",
                "Request body bytes read from clients (every byte of a TLSRoute \
                 connection's stream), by route",
                |counts| counts.request_bytes,
            ),
            (
                "culvert_response_bytes",
                "Response body bytes written to clients (every byte of a TLSRoute \
                 connection's stream), by route",
                |counts| counts.response_bytes,
            ),
        ];
        for (name, help, value) in byte_counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (route, counts) in &stats.routes {
                family
                    .encode_family(&[("route", route.as_str())])?
                    .encode_counter::<NoLabelSet, _, u64>(&value(counts), None)?;
            }
        }

        let mut family = encoder.encode_descriptor(
            "culvert_open_connections",
            "Client connections open, by listener, summed over the workers",
            None,
            MetricType::Gauge,
        )?;
        for (listener, counts) in &stats.listeners {
            family
                .encode_family(&[("listener", listener.as_str())])?
                .encode_gauge(&counts.open)?;
        }

        let mut family = encoder.encode_descriptor(
            "culvert_connections",
            "Client connections accepted, by listener",
            None,
            MetricType::Counter,
        )?;
        for (listener, counts) in &stats.listeners {
            family
                .encode_family(&[("listener", listener.as_str())])?
                .encode_counter::<NoLabelSet, _, u64>(&counts.total, None)?;
        }

        let mut family = encoder.encode_descriptor(
            "culvert_refused",
            "Clients refused or cut off by a limit or a protocol rule, by reason",
            None,
            MetricType::Counter,
        )?;
        for (reason, count) in Refusal::ALL.iter().zip(&stats.refusals) {
            family
                .encode_family(&[("reason", reason.as_str())])?
                .encode_counter::<NoLabelSet, _, u64>(count, None)?;
        }

        let control = &self.control;
        encoder
            .encode_descriptor(
                "culvert_config_version",
                "Version of the config being served, 0 before the first one",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&control.config_version)?;
        encoder
            .encode_descriptor(
                "culvert_config_swaps",
                "Configs swapped in",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&control.config_swaps, None)?;
        encoder
            .encode_descriptor(
                "culvert_config_rejected",
                "Configs refused, leaving the serving one in place",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&control.config_rejected, None)?;
        encoder
            .encode_descriptor(
                "culvert_workers",
                "Worker threads running",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&control.workers)?;
        encoder
            .encode_descriptor(
                "culvert_panics",
                "Panics anywhere in the process (each one a bug; see the error log)",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&control.panics, None)?;
        Ok(())
    }
}
