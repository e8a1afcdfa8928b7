//! From the names Gateways want and the records a zone holds to the changes that make
//! DNS match, without touching anything that is not Culvert's.
//!
//! A name is Culvert's when its ownership record ([`super::ownership`]) exists in the same
//! zone with this installation's owner ID. Then, for each desired name:
//!
//! - nothing there: create the TXT record, then the proxied CNAME to
//!   `<tunnel-id>.cfargotunnel.com` (always as a pair, TXT first, so a failure between the
//!   two leaves a claim Culvert repairs, never a CNAME it would not recognise);
//! - ours: update the TXT if its Gateway or version differs, the CNAME if its target or
//!   `proxied` differs; create a missing CNAME; delete duplicates;
//! - not ours: an A, AAAA or CNAME record of that name, a CNAME on the TXT record's name,
//!   or another owner's ownership record is a [`Conflict`] (`DNSRecordConflict`), and
//!   nothing is written for the name.
//!
//! Names of ours that no Gateway wants any more lose their CNAME, then their TXT record.
//! Two Gateways wanting one name: the first in the order given wins, the other gets a
//! conflict. A name no zone holds, or that cannot be written, is [`Skipped`] and its
//! records elsewhere are left alone. Planning against the result of applying a plan gives
//! no change.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

use super::name::{Hostname, normalize};
use super::ownership::{GatewayRef, OwnerId, Ownership, hostname_for_txt_name, txt_name};
use super::zone::Zones;
use crate::PlanError;
use crate::plan_error::shown;

/// The condition reason for a name held by a record that is not Culvert's.
pub const CONFLICT_REASON: &str = "DNSRecordConflict";
/// The domain a tunnel's CNAME target is under.
pub const TUNNEL_DOMAIN: &str = "cfargotunnel.com";

/// A hostname a Gateway wants pointed at its tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredName {
    /// The hostname (any case, one trailing dot allowed, maybe a wildcard).
    pub hostname: String,
    /// The tunnel's ID (a UUID).
    pub tunnel_id: String,
    /// The Gateway that wants it.
    pub gateway: GatewayRef,
}

/// A DNS record type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordType {
    /// `A`.
    A,
    /// `AAAA`.
    Aaaa,
    /// `CNAME`.
    Cname,
    /// `TXT`.
    Txt,
    /// Any other type, as the API names it.
    Other(String),
}

impl RecordType {
    /// The type from the API's `type` field (case-insensitive).
    pub fn from_api(name: &str) -> Self {
        match name.to_ascii_uppercase().as_str() {
            "A" => Self::A,
            "AAAA" => Self::Aaaa,
            "CNAME" => Self::Cname,
            "TXT" => Self::Txt,
            _ => Self::Other(shown(name)),
        }
    }

    /// The type as the API names it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::A => "A",
            Self::Aaaa => "AAAA",
            Self::Cname => "CNAME",
            Self::Txt => "TXT",
            Self::Other(name) => name,
        }
    }

    /// The indefinite article before the type's name in a sentence.
    fn article(&self) -> &'static str {
        match self {
            Self::A | Self::Aaaa => "an",
            _ => "a",
        }
    }

    /// Whether a CNAME cannot be created next to a record of this type.
    fn blocks_cname(&self) -> bool {
        matches!(self, Self::A | Self::Aaaa | Self::Cname)
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_str().escape_debug())
    }
}

/// A record a zone holds, as the API lists it (untrusted: names are compared normalised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingRecord {
    /// The record's ID.
    pub id: String,
    /// The ID of the zone it is in.
    pub zone_id: String,
    /// Its name (a full name).
    pub name: String,
    /// Its type.
    pub record_type: RecordType,
    /// Its content (a TXT record's with its quotes).
    pub content: String,
    /// Whether Cloudflare proxies it.
    pub proxied: bool,
}

/// A record to write (the body of a create or a full replace; its TTL is automatic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSpec {
    /// `CNAME` or `TXT`.
    pub record_type: RecordType,
    /// The record's full name.
    pub name: String,
    /// The content: the tunnel's target, or the quoted ownership record.
    pub content: String,
    /// `Some(true)` for the CNAME; `None` for the TXT record, which cannot be proxied.
    pub proxied: Option<bool>,
}

/// One write, in the order the plan lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannedChange {
    /// Create a record.
    Create {
        /// The zone to create it in.
        zone_id: String,
        /// The record.
        record: RecordSpec,
    },
    /// Replace an existing record of ours.
    Update {
        /// The zone it is in.
        zone_id: String,
        /// The record's ID.
        record_id: String,
        /// What it becomes.
        record: RecordSpec,
    },
    /// Delete a record of ours.
    Delete {
        /// The zone it is in.
        zone_id: String,
        /// The record's ID.
        record_id: String,
        /// Its type (for the dry-run print).
        record_type: RecordType,
        /// Its name (for the dry-run print).
        name: String,
    },
}

/// Why a desired name is not Culvert's to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictKind {
    /// A record Culvert did not create holds the name: an A, AAAA or CNAME record on the
    /// hostname, or a CNAME on the ownership record's name.
    ForeignRecord {
        /// Its type.
        record_type: RecordType,
        /// Its name.
        name: String,
        /// Whether a CNAME of the hostname is there without Culvert's ownership record.
        without_ownership: bool,
    },
    /// Another Culvert installation's ownership record claims the name.
    OtherOwner,
    /// An earlier Gateway in the order given wants the same name.
    ClaimedByGateway {
        /// That Gateway.
        winner: GatewayRef,
    },
}

/// A desired name left alone because something else holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The hostname (normalised).
    pub hostname: Hostname,
    /// The Gateway that wanted it.
    pub gateway: GatewayRef,
    /// What holds it.
    pub kind: ConflictKind,
}

impl Conflict {
    /// The condition reason, [`CONFLICT_REASON`].
    pub fn reason(&self) -> &'static str {
        CONFLICT_REASON
    }

    /// The condition message for the route.
    pub fn message(&self) -> String {
        let host = &self.hostname;
        match &self.kind {
            ConflictKind::ForeignRecord {
                record_type,
                name,
                without_ownership: true,
            } => format!(
                "{} {record_type} record {name} exists without culvert's ownership record; it is left alone",
                record_type.article()
            ),
            ConflictKind::ForeignRecord {
                record_type, name, ..
            } => format!(
                "{} {record_type} record {name} that culvert did not create holds {host}; it is left alone",
                record_type.article()
            ),
            ConflictKind::OtherOwner => {
                format!("the dns records of {host} belong to another culvert installation")
            }
            ConflictKind::ClaimedByGateway { winner } => {
                format!("{host} is already served by gateway {winner}")
            }
        }
    }
}

/// Why a desired name was not planned at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// No zone of the account holds the name.
    NoZone,
    /// The hostname, its ownership record's name or the tunnel ID cannot be written.
    Invalid(PlanError),
}

/// A desired name that was not planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The hostname as given (cut short when long).
    pub hostname: String,
    /// The Gateway that wanted it.
    pub gateway: GatewayRef,
    /// Why.
    pub reason: SkipReason,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skip {} (gateway {}): ",
            self.hostname.escape_debug(),
            self.gateway
        )?;
        match &self.reason {
            SkipReason::NoZone => f.write_str("no zone of the account holds this name"),
            SkipReason::Invalid(error) => write!(f, "{}", error.to_string().escape_debug()),
        }
    }
}

/// What to write, and what was left alone and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The writes, in the order to apply them: deletes of names no longer wanted first,
    /// then each wanted name's (a TXT record before its CNAME).
    pub changes: Vec<PlannedChange>,
    /// Names wanted but held by something else.
    pub conflicts: Vec<Conflict>,
    /// Names wanted but not planned.
    pub skipped: Vec<Skipped>,
}

impl Plan {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The creates.
    pub fn creates(&self) -> impl Iterator<Item = &PlannedChange> {
        self.changes
            .iter()
            .filter(|c| matches!(c, PlannedChange::Create { .. }))
    }

    /// The updates.
    pub fn updates(&self) -> impl Iterator<Item = &PlannedChange> {
        self.changes
            .iter()
            .filter(|c| matches!(c, PlannedChange::Update { .. }))
    }

    /// The deletes.
    pub fn deletes(&self) -> impl Iterator<Item = &PlannedChange> {
        self.changes
            .iter()
            .filter(|c| matches!(c, PlannedChange::Delete { .. }))
    }
}

/// The dry-run print: one line per change, conflict and skipped name. Nothing secret is
/// in a plan; values read from the API are escaped so each stays on its line.
impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for change in &self.changes {
            match change {
                PlannedChange::Create { zone_id, record } => writeln!(
                    f,
                    "create {} in zone {}",
                    Spec(record),
                    zone_id.escape_debug()
                )?,
                PlannedChange::Update {
                    zone_id,
                    record_id,
                    record,
                } => writeln!(
                    f,
                    "update {} (record {} in zone {})",
                    Spec(record),
                    record_id.escape_debug(),
                    zone_id.escape_debug()
                )?,
                PlannedChange::Delete {
                    zone_id,
                    record_id,
                    record_type,
                    name,
                } => writeln!(
                    f,
                    "delete {record_type} {} (record {} in zone {})",
                    name.escape_debug(),
                    record_id.escape_debug(),
                    zone_id.escape_debug()
                )?,
            }
        }
        for conflict in &self.conflicts {
            writeln!(
                f,
                "conflict {} (gateway {}): {}: {}",
                conflict.hostname,
                conflict.gateway,
                CONFLICT_REASON,
                conflict.message().escape_debug()
            )?;
        }
        for skipped in &self.skipped {
            writeln!(f, "{skipped}")?;
        }
        Ok(())
    }
}

struct Spec<'a>(&'a RecordSpec);

impl fmt::Display for Spec<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let record = self.0;
        write!(f, "{} {} ", record.record_type, record.name.escape_debug())?;
        match record.proxied {
            Some(proxied) => write!(
                f,
                "-> {}{}",
                record.content.escape_debug(),
                if proxied { " (proxied)" } else { "" }
            ),
            None => write!(f, "{}", record.content.escape_debug()),
        }
    }
}

/// The CNAME target of a tunnel: `<tunnel-id>.cfargotunnel.com`.
pub fn tunnel_target(tunnel_id: &str) -> String {
    format!("{}.{TUNNEL_DOMAIN}", tunnel_id.to_ascii_lowercase())
}

/// A tunnel ID in its canonical form: a lowercase UUID (`8-4-4-4-12` hex digits).
fn tunnel_id(input: &str) -> Result<String, PlanError> {
    let id = input.to_ascii_lowercase();
    let groups: Vec<&str> = id.split('-').collect();
    let shaped = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()));
    if shaped {
        Ok(id)
    } else {
        Err(PlanError::InvalidTunnelId {
            tunnel_id: shown(input),
            reason: "not a uuid",
        })
    }
}

/// A desired name that got its zone and passed validation.
struct Claim<'a> {
    zone_id: &'a str,
    hostname: Hostname,
    txt_name: String,
    target: String,
    gateway: &'a GatewayRef,
}

/// The existing records by zone and normalised name, in the order given.
type Index<'a> = HashMap<(&'a str, String), Vec<&'a ExistingRecord>>;

/// Plans the DNS writes for `desired` names against the `existing` records of `zones`,
/// as owner `owner`. See the module documentation for the rules.
///
/// `existing` must hold every record of each desired hostname's name and ownership
/// record's name in its zone, and every TXT record of ours, so names no longer wanted are
/// found; records of other names are ignored.
pub fn plan(
    owner: &OwnerId,
    desired: &[DesiredName],
    existing: &[ExistingRecord],
    zones: &Zones,
) -> Plan {
    let mut out = Plan::default();
    let mut index: Index<'_> = HashMap::new();
    for record in existing {
        index
            .entry((record.zone_id.as_str(), normalize(&record.name)))
            .or_default()
            .push(record);
    }

    let mut claims: Vec<Claim<'_>> = Vec::new();
    let mut claimed: HashMap<(&str, Hostname), &GatewayRef> = HashMap::new();
    // Hostnames wanted but not planned (no zone, an unusable tunnel ID): their records
    // stay wherever they are.
    let mut kept: HashSet<Hostname> = HashSet::new();
    // Losers of a name already reported, so a Gateway listing a name twice gets one.
    let mut lost: HashSet<(Hostname, &GatewayRef)> = HashSet::new();
    for want in desired {
        let skip = |reason| Skipped {
            hostname: shown(&want.hostname),
            gateway: want.gateway.clone(),
            reason,
        };
        let hostname = match Hostname::parse(&want.hostname) {
            Ok(hostname) => hostname,
            Err(error) => {
                out.skipped.push(skip(SkipReason::Invalid(error)));
                continue;
            }
        };
        let checked = txt_name(&hostname).and_then(|txt| Ok((txt, tunnel_id(&want.tunnel_id)?)));
        let (txt_name, tunnel) = match checked {
            Ok(checked) => checked,
            Err(error) => {
                kept.insert(hostname);
                out.skipped.push(skip(SkipReason::Invalid(error)));
                continue;
            }
        };
        let Some(zone) = zones.zone_for(hostname.as_str()) else {
            kept.insert(hostname);
            out.skipped.push(skip(SkipReason::NoZone));
            continue;
        };
        let key = (zone.id.as_str(), hostname.clone());
        if let Some(winner) = claimed.get(&key) {
            if **winner != want.gateway && lost.insert((hostname.clone(), &want.gateway)) {
                out.conflicts.push(Conflict {
                    hostname,
                    gateway: want.gateway.clone(),
                    kind: ConflictKind::ClaimedByGateway {
                        winner: (*winner).clone(),
                    },
                });
            }
            continue;
        }
        claimed.insert(key, &want.gateway);
        claims.push(Claim {
            zone_id: &zone.id,
            hostname,
            txt_name,
            target: tunnel_target(&tunnel),
            gateway: &want.gateway,
        });
    }

    // Names of ours that no claim wants any more, in a stable order.
    let mut gone: BTreeSet<(&str, Hostname)> = BTreeSet::new();
    for record in existing {
        if record.record_type != RecordType::Txt || !is_ours(owner, record) {
            continue;
        }
        let Some(hostname) = hostname_for_txt_name(&record.name) else {
            continue;
        };
        let key = (record.zone_id.as_str(), hostname);
        if !claimed.contains_key(&key) && !kept.contains(&key.1) {
            gone.insert(key);
        }
    }
    for (zone_id, hostname) in gone {
        let at_host = records_at(&index, zone_id, hostname.as_str());
        for record in at_host
            .iter()
            .filter(|r| r.record_type == RecordType::Cname)
        {
            out.changes.push(delete(record));
        }
        let Ok(txt) = txt_name(&hostname) else {
            continue;
        };
        for record in records_at(&index, zone_id, &txt) {
            if record.record_type == RecordType::Txt && is_ours(owner, record) {
                out.changes.push(delete(record));
            }
        }
    }

    for claim in claims {
        plan_claim(owner, &claim, &index, &mut out);
    }
    out
}

fn records_at<'i, 'a>(
    index: &'i Index<'a>,
    zone_id: &'a str,
    name: &str,
) -> &'i [&'a ExistingRecord] {
    index
        .get(&(zone_id, name.to_owned()))
        .map_or(&[], Vec::as_slice)
}

fn is_ours(owner: &OwnerId, record: &ExistingRecord) -> bool {
    Ownership::parse(&record.content).is_some_and(|found| found.owner == *owner)
}

fn delete(record: &ExistingRecord) -> PlannedChange {
    PlannedChange::Delete {
        zone_id: record.zone_id.clone(),
        record_id: record.id.clone(),
        record_type: record.record_type.clone(),
        name: normalize(&record.name),
    }
}

/// The changes, or the conflict, for one claimed name.
fn plan_claim(owner: &OwnerId, claim: &Claim<'_>, index: &Index<'_>, out: &mut Plan) {
    let zone_id = claim.zone_id;
    let at_host = records_at(index, zone_id, claim.hostname.as_str());
    let at_txt = records_at(index, zone_id, &claim.txt_name);
    let wanted = Ownership::new(owner.clone(), claim.gateway.clone());

    let mut ours = Vec::new();
    let mut other_owner = false;
    for record in at_txt.iter().filter(|r| r.record_type == RecordType::Txt) {
        match Ownership::parse(&record.content) {
            Some(found) if found.owner == *owner => ours.push((*record, found)),
            Some(_) => other_owner = true,
            None => {}
        }
    }
    let conflict = |kind| Conflict {
        hostname: claim.hostname.clone(),
        gateway: claim.gateway.clone(),
        kind,
    };
    let foreign = |record: &ExistingRecord, without_ownership| ConflictKind::ForeignRecord {
        record_type: record.record_type.clone(),
        name: normalize(&record.name),
        without_ownership,
    };
    let cname_on_txt = at_txt.iter().find(|r| r.record_type == RecordType::Cname);

    let Some(((txt, found), extra_txts)) = ours.split_first() else {
        if other_owner {
            out.conflicts.push(conflict(ConflictKind::OtherOwner));
        } else if let Some(record) = at_host.iter().find(|r| r.record_type.blocks_cname()) {
            let without = record.record_type == RecordType::Cname;
            out.conflicts.push(conflict(foreign(record, without)));
        } else if let Some(record) = cname_on_txt {
            out.conflicts.push(conflict(foreign(record, false)));
        } else {
            out.changes.push(PlannedChange::Create {
                zone_id: zone_id.to_owned(),
                record: txt_spec(claim, &wanted),
            });
            out.changes.push(PlannedChange::Create {
                zone_id: zone_id.to_owned(),
                record: cname_spec(claim),
            });
        }
        return;
    };

    // The name is ours; an address record or a CNAME in the TXT record's place is still
    // someone else's.
    let address = at_host
        .iter()
        .find(|r| matches!(r.record_type, RecordType::A | RecordType::Aaaa));
    if let Some(record) = address.or(cname_on_txt) {
        out.conflicts.push(conflict(foreign(record, false)));
        return;
    }
    if *found != wanted {
        out.changes.push(PlannedChange::Update {
            zone_id: zone_id.to_owned(),
            record_id: txt.id.clone(),
            record: txt_spec(claim, &wanted),
        });
    }
    for (record, _) in extra_txts {
        out.changes.push(delete(record));
    }
    let mut cnames = at_host
        .iter()
        .filter(|r| r.record_type == RecordType::Cname);
    let first = cnames.next();
    for record in cnames {
        out.changes.push(delete(record));
    }
    match first {
        None => out.changes.push(PlannedChange::Create {
            zone_id: zone_id.to_owned(),
            record: cname_spec(claim),
        }),
        Some(record) if normalize(&record.content) != claim.target || !record.proxied => {
            out.changes.push(PlannedChange::Update {
                zone_id: zone_id.to_owned(),
                record_id: record.id.clone(),
                record: cname_spec(claim),
            });
        }
        Some(_) => {}
    }
}

fn txt_spec(claim: &Claim<'_>, wanted: &Ownership) -> RecordSpec {
    RecordSpec {
        record_type: RecordType::Txt,
        name: claim.txt_name.clone(),
        content: wanted.content(),
        proxied: None,
    }
}

fn cname_spec(claim: &Claim<'_>) -> RecordSpec {
    RecordSpec {
        record_type: RecordType::Cname,
        name: claim.hostname.as_str().to_owned(),
        content: claim.target.clone(),
        proxied: Some(true),
    }
}

#[cfg(test)]
mod tests;
