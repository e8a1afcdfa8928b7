//! One sync of one Cloudflare account: each tunnel's ingress rules, then the DNS
//! records of every tunnel of the account together (ownership is per owner ID and
//! zone, so a record of ours that no tunnel wants any more is found only when the
//! whole account is planned at once). Reads first, writes only what differs; a
//! failure is reported for the tunnels it concerns and the rest go on.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use culvert_cloudflare::dns::ownership::hostname_for_txt_name;
use culvert_cloudflare::dns::{
    self, DesiredName, ExistingRecord, OwnerId, Ownership, PlannedChange, RecordType, Zones,
};
use culvert_cloudflare::{AccountId, Client, NewDnsRecord, RecordId, TunnelId, ZoneId, ingress};
use culvert_control_lite::model::ObjectKey;
use culvert_control_lite::store::NamespacedName;

use super::TunnelSync;

/// A hostname a route cannot have because someone else's record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteConflict {
    /// The route.
    pub route: ObjectKey,
    /// The Gateway it is attached to.
    pub gateway: NamespacedName,
    /// What holds the name, for the route's condition.
    pub message: String,
}

/// What one sync of an account did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountReport {
    /// Tunnels whose ingress was written.
    pub ingress_written: Vec<String>,
    /// DNS writes made (or, in a dry run, planned).
    pub dns_changes: usize,
    /// Hostnames refused to routes.
    pub conflicts: Vec<RouteConflict>,
    /// What failed, by tunnel id (an account-wide failure is listed for each).
    pub failures: BTreeMap<String, String>,
}

/// Syncs `tunnels`, all of account `account`, through `client` as DNS owner
/// `owner`. With `dry_run` nothing is written; the changes are logged.
pub async fn sync_account(
    client: &Client,
    owner: &OwnerId,
    account: &str,
    tunnels: &[&TunnelSync],
    dry_run: bool,
) -> AccountReport {
    let mut report = AccountReport::default();
    let fail_all = |report: &mut AccountReport, why: String| {
        for tunnel in tunnels {
            report.failures.insert(tunnel.tunnel.clone(), why.clone());
        }
    };
    let Ok(account_id) = AccountId::from_str(account) else {
        fail_all(&mut report, format!("{account:?} is not an account id"));
        return report;
    };
    for tunnel in tunnels {
        match sync_ingress(client, &account_id, tunnel, dry_run).await {
            Ok(true) => report.ingress_written.push(tunnel.tunnel.clone()),
            Ok(false) => {}
            Err(why) => {
                report.failures.insert(tunnel.tunnel.clone(), why);
            }
        }
    }
    if let Err(why) = sync_dns(client, owner, &account_id, tunnels, dry_run, &mut report).await {
        for tunnel in tunnels {
            report
                .failures
                .entry(tunnel.tunnel.clone())
                .or_insert_with(|| why.clone());
        }
    }
    report
}

/// Writes `tunnel`'s ingress rules when what Cloudflare holds differs; whether
/// it wrote.
async fn sync_ingress(
    client: &Client,
    account: &AccountId,
    tunnel: &TunnelSync,
    dry_run: bool,
) -> Result<bool, String> {
    let tunnel_id = TunnelId::from_str(&tunnel.tunnel).map_err(|e| e.to_string())?;
    let built = ingress::build(tunnel.hostnames(), &tunnel.service).map_err(|e| e.to_string())?;
    for rejected in &built.rejected {
        tracing::warn!(tunnel = %tunnel.tunnel, %rejected, "hostname left out of the tunnel ingress");
    }
    write_ingress(client, account, &tunnel_id, &built.rules, dry_run).await
}

/// Puts `rules` as the tunnel's ingress unless Cloudflare already holds them;
/// whether it wrote (or, in a dry run, would have).
pub async fn write_ingress(
    client: &Client,
    account: &AccountId,
    tunnel: &TunnelId,
    rules: &[culvert_cloudflare::IngressRule],
    dry_run: bool,
) -> Result<bool, String> {
    let current = client
        .tunnel_configuration(account, tunnel)
        .await
        .map_err(|e| format!("reading the ingress of tunnel {tunnel}: {e}"))?;
    let current = serde_json::json!({ "ingress": current.ingress });
    if !ingress::changed(&current, rules) {
        return Ok(false);
    }
    if dry_run {
        tracing::info!(%tunnel, rules = rules.len(), "dry run: would write the tunnel ingress");
        return Ok(true);
    }
    client
        .put_tunnel_configuration(account, tunnel, rules)
        .await
        .map_err(|e| format!("writing the ingress of tunnel {tunnel}: {e}"))?;
    Ok(true)
}

/// Plans and makes the DNS changes of every tunnel of the account.
async fn sync_dns(
    client: &Client,
    owner: &OwnerId,
    account: &AccountId,
    tunnels: &[&TunnelSync],
    dry_run: bool,
    report: &mut AccountReport,
) -> Result<(), String> {
    let zones = client
        .zones(account, None)
        .await
        .map_err(|e| format!("listing the account's zones: {e}"))?;
    let zones = Zones::new(zones.into_iter().map(|z| dns::Zone {
        id: z.id.to_string(),
        name: z.name,
    }));
    let mut desired = Vec::new();
    for tunnel in tunnels {
        for route in &tunnel.routes {
            let Ok(gateway) = dns::GatewayRef::new(&route.gateway.0, &route.gateway.1) else {
                continue;
            };
            for hostname in &route.hostnames {
                desired.push(DesiredName {
                    hostname: hostname.clone(),
                    tunnel_id: tunnel.tunnel.clone(),
                    gateway: gateway.clone(),
                });
            }
        }
    }
    desired.sort_by(|a, b| (&a.gateway, &a.hostname).cmp(&(&b.gateway, &b.hostname)));
    desired.dedup();
    let existing = existing_records(client, owner, &zones, &desired).await?;
    let plan = dns::plan(owner, &desired, &existing, &zones);
    for skipped in &plan.skipped {
        tracing::warn!(hostname = %skipped.hostname, reason = ?skipped.reason, "no DNS record planned");
    }
    for conflict in &plan.conflicts {
        let gateway = (
            conflict.gateway.namespace().to_owned(),
            conflict.gateway.name().to_owned(),
        );
        for tunnel in tunnels {
            for route in tunnel.routes.iter().filter(|r| {
                r.gateway == gateway && r.hostnames.iter().any(|h| h == conflict.hostname.as_str())
            }) {
                report.conflicts.push(RouteConflict {
                    route: route.route.clone(),
                    gateway: gateway.clone(),
                    message: conflict.message(),
                });
            }
        }
    }
    report.dns_changes = plan.changes.len();
    if dry_run {
        if !plan.changes.is_empty() {
            tracing::info!(plan = %plan, "dry run: DNS changes not made");
        }
        return Ok(());
    }
    for change in &plan.changes {
        make(client, change).await?;
    }
    Ok(())
}

/// Every record the planner needs: each zone's TXT records (ours among them,
/// wherever they are), and every record at each desired name and at each name
/// one of our ownership records stands for (so a CNAME whose last route went is
/// found with its TXT record).
async fn existing_records(
    client: &Client,
    owner: &OwnerId,
    zones: &Zones,
    desired: &[DesiredName],
) -> Result<Vec<ExistingRecord>, String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for zone in zones.iter() {
        let zone_id = ZoneId::from_str(&zone.id).map_err(|e| e.to_string())?;
        let txt = client
            .dns_records(&zone_id, Some("TXT"), None)
            .await
            .map_err(|e| format!("listing the TXT records of zone {}: {e}", zone.name))?;
        let mut names: BTreeSet<String> = txt
            .iter()
            .filter(|r| Ownership::parse(&r.content).is_some_and(|o| o.owner == *owner))
            .filter_map(|r| hostname_for_txt_name(&r.name))
            .map(|h| h.as_str().to_owned())
            .collect();
        names.extend(
            desired
                .iter()
                .filter(|d| zones.zone_for(&d.hostname).is_some_and(|z| z.id == zone.id))
                .map(|d| d.hostname.to_ascii_lowercase()),
        );
        let mut records = txt;
        for name in &names {
            records.extend(
                client
                    .dns_records(&zone_id, None, Some(name))
                    .await
                    .map_err(|e| format!("listing the records of {name}: {e}"))?,
            );
        }
        for record in records {
            if seen.insert(record.id.to_string()) {
                out.push(ExistingRecord {
                    id: record.id.to_string(),
                    zone_id: zone.id.clone(),
                    name: record.name,
                    record_type: RecordType::from_api(&record.record_type),
                    content: record.content,
                    proxied: record.proxied,
                });
            }
        }
    }
    Ok(out)
}

/// Makes one planned change.
async fn make(client: &Client, change: &PlannedChange) -> Result<(), String> {
    let zone_of = |zone: &str| ZoneId::from_str(zone).map_err(|e| e.to_string());
    let record_of = |spec: &dns::RecordSpec| NewDnsRecord {
        record_type: spec.record_type.as_str().to_owned(),
        name: spec.name.clone(),
        content: spec.content.clone(),
        proxied: spec.proxied,
        ttl: 1,
        comment: None,
    };
    match change {
        PlannedChange::Create { zone_id, record } => client
            .create_dns_record(&zone_of(zone_id)?, &record_of(record))
            .await
            .map(drop)
            .map_err(|e| {
                format!(
                    "creating {} {}: {e}",
                    record.record_type.as_str(),
                    record.name
                )
            }),
        PlannedChange::Update {
            zone_id,
            record_id,
            record,
        } => {
            let id = RecordId::from_str(record_id).map_err(|e| e.to_string())?;
            client
                .update_dns_record(&zone_of(zone_id)?, &id, &record_of(record))
                .await
                .map(drop)
                .map_err(|e| {
                    format!(
                        "updating {} {}: {e}",
                        record.record_type.as_str(),
                        record.name
                    )
                })
        }
        PlannedChange::Delete {
            zone_id,
            record_id,
            record_type,
            name,
        } => {
            let id = RecordId::from_str(record_id).map_err(|e| e.to_string())?;
            client
                .delete_dns_record(&zone_of(zone_id)?, &id)
                .await
                .map(drop)
                .map_err(|e| format!("deleting {} {name}: {e}", record_type.as_str()))
        }
    }
}
