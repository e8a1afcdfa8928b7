//! What the last Cloudflare sync means for status. On a tunnel plane's Gateways,
//! `CloudflareSynced`: `True` once its tunnel's ingress and DNS records were
//! written, `False` (`CloudflareSyncFailed`, naming what failed) otherwise; on
//! their routes' entries, `DNSRecordsProgrammed`: `True` once the route's
//! hostnames point at the tunnel, `False` with reason `DNSRecordConflict` when a
//! record Culvert did not create holds one of them. Nothing is said before the
//! first sync. Pure: [`overlay`] edits a translation before status is written.

use std::collections::{BTreeMap, BTreeSet};

use culvert_control_lite::model::{Condition, GATEWAY_GROUP, ObjectKey};
use culvert_control_lite::store::NamespacedName;
use culvert_control_lite::translate::Translation;

/// The Gateway condition type.
pub const CLOUDFLARE_SYNCED: &str = "CloudflareSynced";
/// The route condition type.
pub const DNS_RECORDS_PROGRAMMED: &str = "DNSRecordsProgrammed";
/// Reason: someone else's record holds a hostname.
pub const DNS_RECORD_CONFLICT: &str = "DNSRecordConflict";
/// Reason: a read or write at Cloudflare failed.
pub const SYNC_FAILED: &str = "CloudflareSyncFailed";

/// What the last sync found, for status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncStatus {
    /// Gateways whose tunnel was synced, with the failure when it failed.
    pub gateways: BTreeMap<NamespacedName, Option<String>>,
    /// Routes (on a Gateway) whose hostnames were synced.
    pub routes: BTreeSet<(ObjectKey, NamespacedName)>,
    /// Routes (on a Gateway) with a hostname held by a foreign record, and what
    /// holds it.
    pub conflicts: BTreeMap<(ObjectKey, NamespacedName), String>,
    /// Whether the changes were only logged.
    pub dry_run: bool,
}

/// Puts `status` into `translation`.
pub fn overlay(translation: &mut Translation, status: &SyncStatus) {
    for (gateway, failure) in &status.gateways {
        let Some(gateway_status) = translation.gateways.get_mut(gateway) else {
            continue;
        };
        let generation = generation(&gateway_status.conditions);
        let condition = match (failure, status.dry_run) {
            (Some(why), _) => {
                Condition::new(CLOUDFLARE_SYNCED, false, SYNC_FAILED, why, generation)
            }
            (None, true) => Condition::new(
                CLOUDFLARE_SYNCED,
                false,
                "DryRun",
                "the controller runs with --cloudflare-dry-run: changes are logged, not made",
                generation,
            ),
            (None, false) => Condition::new(
                CLOUDFLARE_SYNCED,
                true,
                "Synced",
                "the tunnel's ingress and DNS records are written",
                generation,
            ),
        };
        set(&mut gateway_status.conditions, condition);
    }
    for (key, route) in &mut translation.routes {
        for parent in &mut route.parents {
            let group = parent.parent_ref.group.as_deref().unwrap_or(GATEWAY_GROUP);
            let kind = parent.parent_ref.kind.as_deref().unwrap_or("Gateway");
            if group != GATEWAY_GROUP || kind != "Gateway" {
                continue;
            }
            let namespace = parent
                .parent_ref
                .namespace
                .clone()
                .unwrap_or_else(|| key.namespace.clone());
            let entry = (key.clone(), (namespace, parent.parent_ref.name.clone()));
            let generation = generation(&parent.conditions);
            let condition = if let Some(message) = status.conflicts.get(&entry) {
                Condition::new(
                    DNS_RECORDS_PROGRAMMED,
                    false,
                    DNS_RECORD_CONFLICT,
                    message,
                    generation,
                )
            } else if status.routes.contains(&entry) && !status.dry_run {
                Condition::new(
                    DNS_RECORDS_PROGRAMMED,
                    true,
                    "Programmed",
                    "every hostname points at the tunnel",
                    generation,
                )
            } else {
                continue;
            };
            set(&mut parent.conditions, condition);
        }
    }
}

fn generation(conditions: &[Condition]) -> i64 {
    conditions.first().map_or(1, |c| c.observed_generation)
}

fn set(conditions: &mut Vec<Condition>, condition: Condition) {
    match conditions.iter_mut().find(|c| c.kind == condition.kind) {
        Some(existing) => *existing = condition,
        None => conditions.push(condition),
    }
}
