//! What the pushes mean for status: the `ProxyConfigPushed` condition on every
//! Gateway whose plane the controller pushes to (its dedicated plane, or its
//! class's shared one) and on the route parent entries that name it, and
//! `Programmed` held back until some pod of the plane serves its config. Pure:
//! [`overlay`] edits a translation with the pusher's summaries before the status
//! writer compares it with what is stored, so an unchanged push state writes
//! nothing.
//!
//! `ProxyConfigPushed`:
//!
//! - `True`, reason `Pushed`: every pod serves a config and none is failing (a
//!   push in flight, which lands within milliseconds, does not count against it);
//! - `False`, reason `Pending`: no pod yet, a pod that serves nothing yet (just
//!   started), or a pod failing for less than the sustained threshold;
//! - `False`, reason `ProxyConfigPushFailed`: a pod has failed for longer than
//!   the sustained threshold. It becomes a Warning event (on the Gateway and on
//!   its routes) once per streak, and the next successful push clears it.
//!
//! Messages hold counts and failure kinds, never times or addresses that change on
//! every attempt; a dedicated Gateway's also names the config version, so a route
//! change costs one status write there and none on the routes' entries (a shared
//! plane's Gateways leave it out: one route change would rewrite them all).
//! `Accepted` is never touched; `Programmed` only while no client can reach the
//! plane: no pod serves a config, or, on a tunnel plane, none of those has a
//! registered tunnel connection (pods say so in their `GET /config` answer).

use std::collections::{BTreeMap, BTreeSet};

use culvert_control_lite::model::{Condition, GATEWAY_GROUP};
use culvert_control_lite::translate::{DataPlaneId, Translation};

use crate::push::{PlaneKey, PlaneSummary, Summaries};
use crate::render::CLASS_KEY_PREFIX;

/// The condition type.
pub const PROXY_CONFIG_PUSHED: &str = "ProxyConfigPushed";
/// Reason: every pod serves the config.
pub const PUSHED: &str = "Pushed";
/// Reason: not every pod yet.
pub const PENDING: &str = "Pending";
/// Reason: a push has been failing for longer than the sustained threshold.
pub const PUSH_FAILED: &str = "ProxyConfigPushFailed";

/// Adds `ProxyConfigPushed` (and holds `Programmed`) for every Gateway of
/// `translation` on a dedicated plane and, with `shared_in` (the namespace the
/// controller renders shared planes in), on a shared one, from `summaries`.
pub fn overlay(translation: &mut Translation, summaries: &Summaries, shared_in: Option<&str>) {
    for (gateway, plane) in &translation.gateway_planes {
        let (key, dedicated) = match (plane, shared_in) {
            (DataPlaneId::Dedicated(_), _) => (PlaneKey::new(&gateway.0, &gateway.1), true),
            (DataPlaneId::Shared(class), Some(namespace)) => (
                PlaneKey::new(namespace, format!("{CLASS_KEY_PREFIX}{class}")),
                false,
            ),
            (DataPlaneId::Shared(_), None) => continue,
        };
        let summary = summaries.get(&key);
        let (pushed, reason, message) = verdict(summary);
        let versioned = match summary {
            Some(summary) if summary.pods > 0 && dedicated => {
                format!("{message} (config version {})", summary.version)
            }
            _ => message.clone(),
        };
        let unreachable = unreachable_because(summary);
        if let Some(status) = translation.gateways.get_mut(gateway) {
            let generation = status
                .conditions
                .first()
                .map_or(1, |c| c.observed_generation);
            if let Some(why) = unreachable {
                if let Some(programmed) = status
                    .conditions
                    .iter_mut()
                    .find(|c| c.kind == "Programmed" && c.status == "True")
                {
                    *programmed = Condition::new("Programmed", false, PENDING, why, generation);
                }
            }
            set(
                &mut status.conditions,
                Condition::new(PROXY_CONFIG_PUSHED, pushed, reason, versioned, generation),
            );
        }
        for (key, route) in &mut translation.routes {
            for parent in &mut route.parents {
                let group = parent.parent_ref.group.as_deref().unwrap_or(GATEWAY_GROUP);
                let kind = parent.parent_ref.kind.as_deref().unwrap_or("Gateway");
                let namespace = parent
                    .parent_ref
                    .namespace
                    .as_deref()
                    .unwrap_or(&key.namespace);
                let names_it = group == GATEWAY_GROUP
                    && kind == "Gateway"
                    && namespace == gateway.0
                    && parent.parent_ref.name == gateway.1;
                let accepted = parent
                    .conditions
                    .iter()
                    .any(|c| c.kind == "Accepted" && c.status == "True");
                if !names_it || !accepted {
                    continue;
                }
                let generation = parent
                    .conditions
                    .first()
                    .map_or(1, |c| c.observed_generation);
                set(
                    &mut parent.conditions,
                    Condition::new(
                        PROXY_CONFIG_PUSHED,
                        pushed,
                        reason,
                        message.clone(),
                        generation,
                    ),
                );
            }
        }
    }
}

/// Why no client can reach the plane yet, if none can: no pod serves a config,
/// or (a tunnel plane) none serving one has a registered tunnel connection.
fn unreachable_because(summary: Option<&PlaneSummary>) -> Option<&'static str> {
    let summary = summary.filter(|s| s.serving > 0);
    match summary {
        None => Some("no pod of the data plane serves its config yet"),
        Some(s) if s.reachable == 0 && s.tunnel_pods > 0 => {
            Some("no pod of the data plane has a registered tunnel connection yet")
        }
        Some(_) => None,
    }
}

/// What status says about one plane: `(ProxyConfigPushed status, reason,
/// message, version, why no client reaches it)`.
pub type StatusView = (bool, &'static str, String, u64, Option<&'static str>);

/// What status says about each plane of `summaries`. Status needs writing again
/// only when this changes, not on every push attempt.
pub fn view(summaries: &Summaries) -> BTreeMap<PlaneKey, StatusView> {
    summaries
        .iter()
        .map(|(key, summary)| {
            let (pushed, reason, message) = verdict(Some(summary));
            (
                key.clone(),
                (
                    pushed,
                    reason,
                    message,
                    summary.version,
                    unreachable_because(Some(summary)),
                ),
            )
        })
        .collect()
}

/// `(status, reason, message)` of `ProxyConfigPushed` for a plane's summary.
fn verdict(summary: Option<&PlaneSummary>) -> (bool, &'static str, String) {
    let Some(summary) = summary else {
        return (false, PENDING, "no push made yet".to_owned());
    };
    let pods = summary.pods;
    if pods == 0 {
        return (false, PENDING, "the data plane has no pods yet".to_owned());
    }
    let kinds = |sustained_only: bool| {
        let kinds: BTreeSet<&str> = summary
            .failing
            .iter()
            .filter(|f| f.sustained || !sustained_only)
            .map(|f| f.error.label())
            .collect();
        kinds.into_iter().collect::<Vec<_>>().join(", ")
    };
    if summary.sustained {
        let failing = summary.failing.iter().filter(|f| f.sustained).count();
        return (
            false,
            PUSH_FAILED,
            format!(
                "pushes to {failing} of {pods} pods keep failing ({})",
                kinds(true)
            ),
        );
    }
    if !summary.failing.is_empty() {
        let failing = summary.failing.len();
        return (
            false,
            PENDING,
            format!("pushes to {failing} of {pods} pods fail ({})", kinds(false)),
        );
    }
    if summary.serving < pods {
        return (
            false,
            PENDING,
            format!("{} of {pods} pods serve a config", summary.serving),
        );
    }
    (true, PUSHED, format!("all {pods} pods serve the config"))
}

/// Replaces the condition of `condition`'s type in `conditions`, or adds it.
fn set(conditions: &mut Vec<Condition>, condition: Condition) {
    match conditions.iter_mut().find(|c| c.kind == condition.kind) {
        Some(existing) => *existing = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests;
