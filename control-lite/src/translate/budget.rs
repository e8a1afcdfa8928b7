//! Listener budgets: how many listeners one Gateway may declare and one data plane
//! serves. Going over either is refused in status, never by a failed write or a
//! panic, and never by dropping listeners in silence.
//!
//! - A Gateway with more than [`LISTENERS_PER_GATEWAY`] listeners (the API server's
//!   schema refuses one; a manifest on disk can still hold it) is refused as a whole:
//!   `Accepted=False` / `Invalid`, and no listener status, since a status listing more
//!   than the schema allows could not be written back either.
//! - The Gateways sharing a data plane (every Gateway of a GatewayClass without its
//!   own `GatewayConfig`) fill its [`LISTENERS_PER_PLANE`] budget oldest Gateway
//!   first, each in its listeners' order. A listener past the budget is
//!   `Accepted=False` / `TooManyListeners` (Gateway API's reason for a listener an
//!   implementation turns away because its Gateway has too many), its Gateway says how
//!   many did not fit (`ListenersNotValid`, still `Accepted=True` while one of its
//!   listeners serves), and every listener that fits keeps serving.

use super::conditions::{Verdict, reason};
use super::state::{Context, DataPlaneId, GatewayState};
use std::collections::BTreeMap;

/// Most listeners one Gateway may have: Gateway API's `maxItems` for both
/// `spec.listeners` and `status.listeners`.
pub const LISTENERS_PER_GATEWAY: usize = 64;

/// Most listeners one data plane serves: sixteen Gateways at
/// [`LISTENERS_PER_GATEWAY`] each. The bound is the plane's config, which goes to a
/// dedicated plane in one `PUT /config` of at most 16 MiB: an `HTTPS` listener
/// brings its certificate chain and key inline, about 4 KiB of PEM for RSA-2048
/// with one intermediate, so a full budget of distinct certificates takes a quarter
/// of that and leaves the rest to routes. A process serving several planes (the
/// manifests source, `--kubernetes`) holds at most this many per plane.
pub const LISTENERS_PER_PLANE: usize = 1024;

/// Refuses every Gateway with more listeners than Gateway API allows.
pub(crate) fn refuse_oversized(cx: &mut Context<'_>) {
    for gateway in &mut cx.gateways {
        refuse_if_oversized(gateway);
    }
}

/// Refuses a Gateway with more listeners than Gateway API allows; it then claims no
/// socket and is served nowhere.
fn refuse_if_oversized(gateway: &mut GatewayState) {
    let count = gateway.listeners.len();
    if count <= LISTENERS_PER_GATEWAY {
        return;
    }
    if gateway.accepted.status {
        gateway.accepted = Verdict::no(
            reason::INVALID,
            format!(
                "spec.listeners has {count} entries; a Gateway may have at most \
                 {LISTENERS_PER_GATEWAY}"
            ),
        );
    }
    gateway.listeners.clear();
    gateway.plane = None;
}

/// Fits the listeners the served Gateways send to their planes into the planes'
/// budgets, in the order of `gateways` (oldest first), refusing those past it.
pub(crate) fn fit_planes(cx: &mut Context<'_>) {
    let mut used: BTreeMap<DataPlaneId, usize> = BTreeMap::new();
    for gateway in &mut cx.gateways {
        let Some(plane) = gateway.plane.clone() else {
            continue;
        };
        if !gateway.accepted.status || gateway.address_problem.is_some() {
            continue;
        }
        let used = used.entry(plane.clone()).or_default();
        let mut over = 0;
        for listener in gateway.listeners.iter_mut().filter(|l| l.served()) {
            if *used < LISTENERS_PER_PLANE {
                *used += 1;
            } else {
                over += 1;
                listener.refuse(
                    reason::TOO_MANY_LISTENERS,
                    format!(
                        "{} already serves {LISTENERS_PER_PLANE} listeners, its budget",
                        describe(&plane)
                    ),
                );
            }
        }
        if over > 0 {
            report_overflow(gateway, over, &plane);
        }
    }
}

/// The Gateway's verdict once `over` of its listeners did not fit.
fn report_overflow(gateway: &mut GatewayState, over: usize, plane: &DataPlaneId) {
    let what = format!(
        "{over} listener(s) did not fit the {LISTENERS_PER_PLANE}-listener budget of {}",
        describe(plane)
    );
    let message = if gateway.accepted.reason == reason::LISTENERS_NOT_VALID {
        format!("{}; {what}", gateway.accepted.message)
    } else {
        what
    };
    let serves = gateway.listeners.iter().any(|l| l.usable());
    gateway.accepted = Verdict {
        status: serves,
        reason: reason::LISTENERS_NOT_VALID,
        message,
    };
}

fn describe(plane: &DataPlaneId) -> String {
    match plane {
        DataPlaneId::Shared(class) => format!("the data plane of GatewayClass {class}"),
        DataPlaneId::Dedicated((namespace, name)) => {
            format!("the dedicated data plane of Gateway {namespace}/{name}")
        }
    }
}
