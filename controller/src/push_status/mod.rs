//! What the pushes mean for status: the `ProxyConfigPushed` condition on every
//! Gateway with a dedicated plane and on the route parent entries that name it,
//! and `Programmed` held back until some pod of the plane serves its config. Pure:
//! [`overlay`] edits a translation with the pusher's summaries before the status
//! writer compares it with what is stored, so an unchanged push state writes
//! nothing.
//!
//! `ProxyConfigPushed`:
//!
//! - `True`, reason `Pushed`: every pod of the plane serves the config;
//! - `False`, reason `Pending`: no pod yet, or some pods not yet (a rollout, a
//!   pod just started), failures not sustained;
//! - `False`, reason `ProxyConfigPushFailed`: a pod has failed for longer than
//!   the sustained threshold. It becomes a Warning event (on the Gateway and on
//!   its routes) once per streak, and the next successful push clears it.
//!
//! Messages hold counts, the version and failure kinds, never times or
//! addresses that change on every attempt, so the condition does not churn.
//! `Accepted` is never touched; `Programmed` only while no pod serves the config.

use std::collections::{BTreeMap, BTreeSet};

use culvert_control_lite::model::{Condition, GATEWAY_GROUP};
use culvert_control_lite::translate::{DataPlaneId, Translation};

use crate::push::{PlaneKey, PlaneSummary, Summaries};

/// The condition type.
pub const PROXY_CONFIG_PUSHED: &str = "ProxyConfigPushed";
/// Reason: every pod serves the config.
pub const PUSHED: &str = "Pushed";
/// Reason: not every pod yet.
pub const PENDING: &str = "Pending";
/// Reason: a push has been failing for longer than the sustained threshold.
pub const PUSH_FAILED: &str = "ProxyConfigPushFailed";

/// Adds `ProxyConfigPushed` (and holds `Programmed`) for every dedicated plane of
/// `translation`, from `summaries`.
pub fn overlay(translation: &mut Translation, summaries: &Summaries) {
    for (gateway, plane) in &translation.gateway_planes {
        if !matches!(plane, DataPlaneId::Dedicated(_)) {
            continue;
        }
        let summary = summaries.get(&PlaneKey::new(&gateway.0, &gateway.1));
        let (pushed, reason, message) = verdict(summary);
        let serving = summary.is_some_and(|s| s.current > 0);
        if let Some(status) = translation.gateways.get_mut(gateway) {
            let generation = status
                .conditions
                .first()
                .map_or(1, |c| c.observed_generation);
            if !serving {
                if let Some(programmed) = status
                    .conditions
                    .iter_mut()
                    .find(|c| c.kind == "Programmed" && c.status == "True")
                {
                    *programmed = Condition::new(
                        "Programmed",
                        false,
                        PENDING,
                        "no pod of the dedicated data plane serves its config yet",
                        generation,
                    );
                }
            }
            set(
                &mut status.conditions,
                Condition::new(
                    PROXY_CONFIG_PUSHED,
                    pushed,
                    reason,
                    message.clone(),
                    generation,
                ),
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

/// What status says about each plane of `summaries`: `(ProxyConfigPushed status,
/// reason, message, whether a pod serves)`. Status needs writing again only when
/// this changes, not on every push attempt.
pub fn view(summaries: &Summaries) -> BTreeMap<PlaneKey, (bool, &'static str, String, bool)> {
    summaries
        .iter()
        .map(|(key, summary)| {
            let (pushed, reason, message) = verdict(Some(summary));
            (key.clone(), (pushed, reason, message, summary.current > 0))
        })
        .collect()
}

/// `(status, reason, message)` of `ProxyConfigPushed` for a plane's summary.
fn verdict(summary: Option<&PlaneSummary>) -> (bool, &'static str, String) {
    let Some(summary) = summary else {
        return (false, PENDING, "no push made yet".to_owned());
    };
    if summary.pods == 0 {
        return (
            false,
            PENDING,
            "the dedicated data plane has no pods yet".to_owned(),
        );
    }
    let counted = format!(
        "{} of {} pods serve config version {}",
        summary.current, summary.pods, summary.version
    );
    if summary.sustained {
        let kinds: BTreeSet<&str> = summary
            .failing
            .iter()
            .filter(|f| f.sustained)
            .map(|f| f.error.label())
            .collect();
        let kinds: Vec<&str> = kinds.into_iter().collect();
        return (
            false,
            PUSH_FAILED,
            format!("{counted}; pushes keep failing ({})", kinds.join(", ")),
        );
    }
    if summary.all_current() {
        (true, PUSHED, counted)
    } else {
        (false, PENDING, counted)
    }
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
