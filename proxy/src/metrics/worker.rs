//! One worker's counters, recorded into on the request path.
//!
//! Owns [`WorkerStats`] and the handles and guards it gives out. Everything here is
//! single-threaded by construction (`Rc` and `Cell`, so `!Send`): a worker records
//! without locks or atomics, and the config API thread only ever sees a
//! [`StatsSnapshot`] the worker copied for it. Never hold a `RefCell` borrow of the
//! maps beyond one method, and never allocate for a key already present.
//!
//! Start at [`WorkerStats::route`]: one map lookup per request yields a [`RouteStats`]
//! handle, and every later record for that request is a few `Cell` writes on it.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use http::StatusCode;

use crate::fast_map::FastMap;

use super::snapshot::{HistogramSnapshot, ListenerSnapshot, RouteSnapshot, StatsSnapshot};
use super::{
    DURATION_BOUNDS_NANOS, DURATION_BUCKETS, MAX_LISTENER_KEYS, MAX_ROUTE_KEYS, NO_ROUTE, OVERFLOW,
    Refusal, STATUS_CLASSES, TlsRouteEnd, status_class_index,
};
use crate::pipeline::BackendFailure;

/// The stats of one worker thread. Create one per worker, keep it next to the
/// worker's other state, and call [`snapshot`](Self::snapshot) on the worker thread
/// when the config API thread asks.
#[derive(Debug)]
pub(crate) struct WorkerStats {
    /// Requests started and not finished; shared with every [`InFlight`] guard.
    in_flight: Rc<Cell<u64>>,
    /// Per-route counters by route name (including [`NO_ROUTE`] and [`OVERFLOW`]).
    /// Keyed by `Rc<str>` so a lookup by `&str` needs no allocation.
    routes: RefCell<FastMap<Rc<str>, RouteStats>>,
    /// Per-listener counters by listener label (including [`OVERFLOW`]).
    listeners: RefCell<FastMap<Rc<str>, ListenerStats>>,
    /// Distinct route names in `routes`, not counting the reserved labels.
    route_keys: Cell<usize>,
    /// Distinct listener labels in `listeners`, not counting [`OVERFLOW`].
    listener_keys: Cell<usize>,
    max_routes: usize,
    max_listeners: usize,
    /// Refusals by reason, indexed like `Refusal::ALL`.
    refusals: [Cell<u64>; Refusal::ALL.len()],
}

impl Default for WorkerStats {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerStats {
    /// Empty stats capped at [`MAX_ROUTE_KEYS`] routes and [`MAX_LISTENER_KEYS`]
    /// listeners.
    pub(crate) fn new() -> Self {
        Self::with_limits(MAX_ROUTE_KEYS, MAX_LISTENER_KEYS)
    }

    /// Empty stats with other caps on distinct route names and listener labels (the
    /// reserved labels [`NO_ROUTE`] and [`OVERFLOW`] do not count against them).
    pub(crate) fn with_limits(max_routes: usize, max_listeners: usize) -> Self {
        Self {
            in_flight: Rc::new(Cell::new(0)),
            routes: RefCell::new(FastMap::default()),
            listeners: RefCell::new(FastMap::default()),
            route_keys: Cell::new(0),
            listener_keys: Cell::new(0),
            max_routes,
            max_listeners,
            refusals: Default::default(),
        }
    }

    /// Counts one refusal (`culvert_refused_total{reason}`).
    pub(crate) fn refused(&self, reason: Refusal) {
        let cell = &self.refusals[reason.index()];
        cell.set(cell.get().saturating_add(1));
    }

    /// Counts one request in flight until the returned guard is dropped. Keep the
    /// guard alive as long as the request is being served, including while its
    /// response body streams (it owns an `Rc`, so it can move into the body).
    pub(crate) fn request_started(&self) -> InFlight {
        self.in_flight.set(self.in_flight.get().saturating_add(1));
        InFlight {
            count: Rc::clone(&self.in_flight),
        }
    }

    /// The counters of route `name` (`"namespace/name"`), or of [`NO_ROUTE`] for
    /// `None`. Call it once per request, after routing, and record on the handle.
    /// Allocates only the first time a name is seen; past the cap every new name
    /// shares the [`OVERFLOW`] handle.
    pub(crate) fn route(&self, name: Option<&str>) -> RouteStats {
        let key = name.unwrap_or(NO_ROUTE);
        intern(
            &mut self.routes.borrow_mut(),
            &self.route_keys,
            self.max_routes,
            key,
            &[NO_ROUTE, OVERFLOW],
            RouteStats::new,
        )
    }

    /// The counters of listener `label` (e.g. `"0.0.0.0:8080"`, or a tunnel's name).
    /// Call it once per listener (in its accept loop), not per connection. Past the
    /// cap every new label shares the [`OVERFLOW`] handle.
    pub(crate) fn listener(&self, label: &str) -> ListenerStats {
        intern(
            &mut self.listeners.borrow_mut(),
            &self.listener_keys,
            self.max_listeners,
            label,
            &[OVERFLOW],
            ListenerStats::new,
        )
    }

    /// A copy of every counter, to send to the config API thread. Allocates one `String`
    /// per route and listener; meant for scrapes, not for the request path.
    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let routes = self
            .routes
            .borrow()
            .iter()
            .map(|(name, stats)| (name.to_string(), stats.snapshot()))
            .collect();
        let listeners = self
            .listeners
            .borrow()
            .iter()
            .map(|(label, stats)| (label.to_string(), stats.snapshot()))
            .collect();
        StatsSnapshot {
            in_flight: self.in_flight.get(),
            routes,
            listeners,
            refusals: self.refusals.each_ref().map(Cell::get),
        }
    }
}

/// One request in flight: decrements `culvert_requests_in_flight` when dropped.
#[derive(Debug)]
#[must_use = "the request stops counting as in flight when the guard is dropped"]
pub(crate) struct InFlight {
    count: Rc<Cell<u64>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.count.set(self.count.get().saturating_sub(1));
    }
}

/// The counters of one route on one worker. Cheap to clone (an `Rc`); recording is a
/// few `Cell` writes. Obtained from [`WorkerStats::route`].
#[derive(Clone, Debug)]
pub(crate) struct RouteStats(Rc<RouteCells>);

#[derive(Debug)]
struct RouteCells {
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the snapshot is keyed by the map")
    )]
    label: Rc<str>,
    /// Responses by status class, see `STATUS_CLASSES`.
    responses: [Cell<u64>; STATUS_CLASSES.len()],
    /// Non-cumulative duration bucket counts; the last one is `+Inf`.
    duration_buckets: [Cell<u64>; DURATION_BUCKETS],
    /// Sum of the observed durations in nanoseconds (exact, so merging adds up).
    duration_sum_nanos: Cell<u64>,
    /// Backend failures by `BackendFailure::index`.
    backend_failures: [Cell<u64>; BackendFailure::ALL.len()],
    request_bytes: Cell<u64>,
    response_bytes: Cell<u64>,
    /// TLSRoute connections by `TlsRouteEnd::index`.
    tls_route: [Cell<u64>; TlsRouteEnd::ALL.len()],
}

impl RouteStats {
    fn new(label: Rc<str>) -> Self {
        Self(Rc::new(RouteCells {
            label,
            responses: Default::default(),
            duration_buckets: Default::default(),
            duration_sum_nanos: Cell::new(0),
            backend_failures: Default::default(),
            request_bytes: Cell::new(0),
            response_bytes: Cell::new(0),
            tls_route: Default::default(),
        }))
    }

    /// The `route` label these counters are exported under: the name passed in,
    /// [`NO_ROUTE`] or [`OVERFLOW`].
    #[cfg(test)]
    pub(crate) fn label(&self) -> &str {
        &self.0.label
    }

    /// Counts one answered request: `culvert_requests_total` by the class of `status`
    /// and `elapsed` into `culvert_request_duration_seconds`. Call it once per
    /// request, whether the answer was local or forwarded; `elapsed` is measured by
    /// the caller (from the request start until the answer, or until the body ends).
    pub(crate) fn record_response(&self, status: StatusCode, elapsed: Duration) {
        let cells = &self.0;
        add(&cells.responses[status_class_index(status)], 1);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        // Bucket `i` holds observations `<= DURATION_BOUNDS_NANOS[i]`; past the last
        // bound this is the `+Inf` bucket, which exists, so the index is in range.
        let bucket = DURATION_BOUNDS_NANOS.partition_point(|&bound| bound < nanos);
        if let Some(cell) = cells.duration_buckets.get(bucket) {
            add(cell, 1);
        }
        add(&cells.duration_sum_nanos, nanos);
    }

    /// Counts one `culvert_backend_errors_total` for `reason`. The answer itself is
    /// still counted with [`record_response`](Self::record_response).
    pub(crate) fn record_backend_failure(&self, reason: BackendFailure) {
        add(&self.0.backend_failures[reason.index()], 1);
    }

    /// Adds request body bytes read from the client (`culvert_request_bytes_total`).
    pub(crate) fn add_request_bytes(&self, bytes: u64) {
        add(&self.0.request_bytes, bytes);
    }

    /// Adds response body bytes written to the client (`culvert_response_bytes_total`).
    pub(crate) fn add_response_bytes(&self, bytes: u64) {
        add(&self.0.response_bytes, bytes);
    }

    /// Counts one TLSRoute connection that ended as `end`
    /// (`culvert_tls_route_connections_total`); its bytes go to
    /// [`add_request_bytes`](Self::add_request_bytes) and
    /// [`add_response_bytes`](Self::add_response_bytes).
    pub(crate) fn record_tls_route(&self, end: TlsRouteEnd) {
        add(&self.0.tls_route[end.index()], 1);
    }

    fn snapshot(&self) -> RouteSnapshot {
        let cells = &self.0;
        RouteSnapshot {
            responses: cells.responses.each_ref().map(Cell::get),
            duration: HistogramSnapshot {
                buckets: cells.duration_buckets.each_ref().map(Cell::get),
                sum_nanos: cells.duration_sum_nanos.get(),
            },
            backend_failures: cells.backend_failures.each_ref().map(Cell::get),
            request_bytes: cells.request_bytes.get(),
            response_bytes: cells.response_bytes.get(),
            tls_route: cells.tls_route.each_ref().map(Cell::get),
        }
    }
}

/// The counters of one listener on one worker. Cheap to clone (an `Rc`). Obtained
/// from [`WorkerStats::listener`].
#[derive(Clone, Debug)]
pub(crate) struct ListenerStats(Rc<ListenerCells>);

#[derive(Debug)]
struct ListenerCells {
    open: Cell<u64>,
    total: Cell<u64>,
}

impl ListenerStats {
    /// The map that hands it out holds the label.
    fn new(_label: Rc<str>) -> Self {
        Self(Rc::new(ListenerCells {
            open: Cell::new(0),
            total: Cell::new(0),
        }))
    }

    /// Counts one accepted connection (`culvert_connections_total`) and keeps it in
    /// `culvert_open_connections` until the returned guard is dropped; move the guard
    /// into the connection's task.
    pub(crate) fn connection_opened(&self) -> OpenConnection {
        add(&self.0.total, 1);
        add(&self.0.open, 1);
        OpenConnection {
            listener: Rc::clone(&self.0),
        }
    }

    fn snapshot(&self) -> ListenerSnapshot {
        ListenerSnapshot {
            open: self.0.open.get(),
            total: self.0.total.get(),
        }
    }
}

/// One open connection: decrements `culvert_open_connections` when dropped.
#[derive(Debug)]
#[must_use = "the connection stops counting as open when the guard is dropped"]
pub(crate) struct OpenConnection {
    listener: Rc<ListenerCells>,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        let open = &self.listener.open;
        open.set(open.get().saturating_sub(1));
    }
}

/// The handle of `key` in `map`, created on first sight. A key that is not one of
/// `reserved` counts against `cap` (tracked in `count`); once the cap is reached new
/// keys get the [`OVERFLOW`] handle instead. Allocates only when it inserts.
fn intern<T: Clone>(
    map: &mut FastMap<Rc<str>, T>,
    count: &Cell<usize>,
    cap: usize,
    key: &str,
    reserved: &[&str],
    make: impl FnOnce(Rc<str>) -> T,
) -> T {
    if let Some(found) = map.get(key) {
        return found.clone();
    }
    let key = if reserved.contains(&key) {
        key
    } else if count.get() < cap {
        count.set(count.get() + 1);
        key
    } else if let Some(overflow) = map.get(OVERFLOW) {
        return overflow.clone();
    } else {
        OVERFLOW
    };
    let key: Rc<str> = Rc::from(key);
    let handle = make(Rc::clone(&key));
    map.insert(key, handle.clone());
    handle
}

/// Adds to a counter; saturates rather than wraps (unreachable in practice).
fn add(cell: &Cell<u64>, amount: u64) {
    cell.set(cell.get().saturating_add(amount));
}
