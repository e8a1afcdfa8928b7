use std::collections::HashSet;

use proptest::prelude::*;

use super::*;
use crate::dns::Zone;

const T1: &str = "6ff42ae2-765d-4adf-8112-31c55c1551ef";
const T2: &str = "0b9a1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d";

fn owner() -> OwnerId {
    OwnerId::new("cluster-a").expect("valid owner")
}

fn other_owner() -> OwnerId {
    OwnerId::new("cluster-b").expect("valid owner")
}

fn gw(name: &str) -> GatewayRef {
    GatewayRef::new("edge", name).expect("valid gateway")
}

fn zones() -> Zones {
    Zones::new([
        Zone {
            id: "z1".to_owned(),
            name: "example.com".to_owned(),
        },
        Zone {
            id: "z2".to_owned(),
            name: "sub.example.com".to_owned(),
        },
        Zone {
            id: "z3".to_owned(),
            name: "example.org".to_owned(),
        },
    ])
}

fn want(hostname: &str, tunnel: &str, gateway: &str) -> DesiredName {
    DesiredName {
        hostname: hostname.to_owned(),
        tunnel_id: tunnel.to_owned(),
        gateway: gw(gateway),
    }
}

fn record(id: &str, zone: &str, name: &str, kind: RecordType, content: &str) -> ExistingRecord {
    ExistingRecord {
        id: id.to_owned(),
        zone_id: zone.to_owned(),
        name: name.to_owned(),
        record_type: kind,
        content: content.to_owned(),
        proxied: false,
    }
}

fn cname(id: &str, zone: &str, name: &str, tunnel: &str) -> ExistingRecord {
    ExistingRecord {
        proxied: true,
        ..record(id, zone, name, RecordType::Cname, &tunnel_target(tunnel))
    }
}

fn owner_txt(
    id: &str,
    zone: &str,
    hostname: &str,
    owner: OwnerId,
    gateway: &str,
) -> ExistingRecord {
    let hostname = Hostname::parse(hostname).expect("valid hostname");
    let name = txt_name(&hostname).expect("short name");
    let content = Ownership::new(owner, gw(gateway)).content();
    record(id, zone, &name, RecordType::Txt, &content)
}

fn our_txt(id: &str, zone: &str, hostname: &str, gateway: &str) -> ExistingRecord {
    owner_txt(id, zone, hostname, owner(), gateway)
}

fn run(desired: &[DesiredName], existing: &[ExistingRecord]) -> Plan {
    plan(&owner(), desired, existing, &zones())
}

fn create_txt(zone: &str, hostname: &str, gateway: &str) -> PlannedChange {
    let hostname = Hostname::parse(hostname).expect("valid hostname");
    PlannedChange::Create {
        zone_id: zone.to_owned(),
        record: RecordSpec {
            record_type: RecordType::Txt,
            name: txt_name(&hostname).expect("short name"),
            content: Ownership::new(owner(), gw(gateway)).content(),
            proxied: None,
        },
    }
}

fn cname_spec(hostname: &str, tunnel: &str) -> RecordSpec {
    RecordSpec {
        record_type: RecordType::Cname,
        name: hostname.to_owned(),
        content: tunnel_target(tunnel),
        proxied: Some(true),
    }
}

fn create_cname(zone: &str, hostname: &str, tunnel: &str) -> PlannedChange {
    PlannedChange::Create {
        zone_id: zone.to_owned(),
        record: cname_spec(hostname, tunnel),
    }
}

fn deleted(plan: &Plan) -> Vec<&str> {
    plan.deletes()
        .map(|change| match change {
            PlannedChange::Delete { record_id, .. } => record_id.as_str(),
            _ => unreachable!("deletes() yields deletes"),
        })
        .collect()
}

fn only_conflict(plan: &Plan) -> &Conflict {
    assert!(plan.changes.is_empty(), "{plan}");
    assert_eq!(plan.conflicts.len(), 1, "{plan}");
    &plan.conflicts[0]
}

#[test]
fn fresh_name_gets_txt_then_cname() {
    let plan = run(&[want("App.Example.com.", T1, "gw")], &[]);
    assert_eq!(
        plan.changes,
        [
            create_txt("z1", "app.example.com", "gw"),
            create_cname("z1", "app.example.com", T1),
        ]
    );
    assert!(plan.conflicts.is_empty() && plan.skipped.is_empty());
}

#[test]
fn unrelated_records_of_the_name_are_no_conflict() {
    let existing = [
        record(
            "mx",
            "z1",
            "app.example.com",
            RecordType::Other("MX".into()),
            "mail.example.com",
        ),
        record(
            "spf",
            "z1",
            "app.example.com",
            RecordType::Txt,
            "\"v=spf1 -all\"",
        ),
        // A malformed record on the TXT name is not ours and blocks nothing.
        record(
            "junk",
            "z1",
            "_culvert-owner.app.example.com",
            RecordType::Txt,
            "\"heritage=culvert\"",
        ),
        // The same name in another zone is not this zone's.
        record(
            "elsewhere",
            "z2",
            "app.example.com",
            RecordType::A,
            "192.0.2.1",
        ),
    ];
    let plan = run(&[want("app.example.com", T1, "gw")], &existing);
    assert_eq!(plan.creates().count(), 2, "{plan}");
    assert!(plan.conflicts.is_empty());
}

#[test]
fn owned_name_in_place_gives_nothing() {
    let existing = [
        our_txt("t", "z1", "app.example.com", "gw"),
        cname("c", "z1", "app.example.com", T1),
    ];
    assert_eq!(
        run(&[want("app.example.com", T1, "gw")], &existing),
        Plan::default()
    );
}

#[test]
fn owned_cname_with_other_target_or_unproxied_is_updated() {
    let moved = [
        our_txt("t", "z1", "app.example.com", "gw"),
        cname("c", "z1", "app.example.com", T2),
    ];
    let mut unproxied = moved.clone();
    unproxied[1] = ExistingRecord {
        proxied: false,
        ..cname("c", "z1", "app.example.com", T1)
    };
    for existing in [moved, unproxied] {
        let plan = run(&[want("app.example.com", T1, "gw")], &existing);
        assert_eq!(
            plan.changes,
            [PlannedChange::Update {
                zone_id: "z1".into(),
                record_id: "c".into(),
                record: cname_spec("app.example.com", T1),
            }]
        );
    }
}

#[test]
fn owned_txt_with_other_gateway_or_version_is_updated() {
    let mut old_version = our_txt("t", "z1", "app.example.com", "gw");
    old_version.content = old_version.content.replace("version=1", "version=2");
    for txt in [our_txt("t", "z1", "app.example.com", "old-gw"), old_version] {
        let existing = [txt, cname("c", "z1", "app.example.com", T1)];
        let plan = run(&[want("app.example.com", T1, "gw")], &existing);
        let PlannedChange::Create { record, .. } = create_txt("z1", "app.example.com", "gw") else {
            unreachable!("a create")
        };
        assert_eq!(
            plan.changes,
            [PlannedChange::Update {
                zone_id: "z1".into(),
                record_id: "t".into(),
                record,
            }]
        );
    }
}

#[test]
fn owned_name_without_cname_gets_one() {
    let existing = [our_txt("t", "z1", "app.example.com", "gw")];
    let plan = run(&[want("app.example.com", T1, "gw")], &existing);
    assert_eq!(plan.changes, [create_cname("z1", "app.example.com", T1)]);
}

#[test]
fn owned_name_no_longer_wanted_is_deleted_cname_first() {
    let existing = [
        our_txt("t", "z1", "app.example.com", "gw"),
        cname("c", "z1", "app.example.com", T1),
        our_txt("t2", "z1", "keep.example.com", "gw"),
        cname("c2", "z1", "keep.example.com", T1),
    ];
    let plan = run(&[want("keep.example.com", T1, "gw")], &existing);
    assert_eq!(deleted(&plan), ["c", "t"]);
    assert_eq!(plan.changes.len(), 2);
    // The last route gone: everything of ours goes.
    assert_eq!(deleted(&run(&[], &existing)), ["c", "t", "c2", "t2"]);
}

#[test]
fn duplicates_of_ours_are_removed() {
    let existing = [
        our_txt("t", "z1", "app.example.com", "gw"),
        our_txt("t-dup", "z1", "app.example.com", "gw"),
        cname("c", "z1", "app.example.com", T1),
        cname("c-dup", "z1", "app.example.com", T2),
    ];
    let plan = run(&[want("app.example.com", T1, "gw")], &existing);
    assert_eq!(deleted(&plan), ["t-dup", "c-dup"]);
    assert_eq!(plan.changes.len(), 2);
}

#[test]
fn foreign_address_or_cname_is_a_conflict() {
    let cases = [
        (RecordType::A, "192.0.2.1", "an A"),
        (RecordType::Aaaa, "2001:db8::1", "an AAAA"),
        (RecordType::Cname, "elsewhere.example.net", "a CNAME"),
    ];
    for (kind, content, shown) in cases {
        let existing = [record("x", "z1", "app.example.com", kind.clone(), content)];
        let plan = run(&[want("app.example.com", T1, "gw")], &existing);
        let conflict = only_conflict(&plan);
        assert_eq!(conflict.gateway, gw("gw"));
        assert_eq!(conflict.reason(), "DNSRecordConflict");
        assert_eq!(
            conflict.kind,
            ConflictKind::ForeignRecord {
                record_type: kind.clone(),
                name: "app.example.com".into(),
                without_ownership: kind == RecordType::Cname,
            }
        );
        let message = conflict.message();
        assert!(
            message.contains(&format!("{shown} record app.example.com")),
            "{message}"
        );
        // Not ours, so never deleted either.
        assert!(run(&[], &existing).is_empty());
    }
}

#[test]
fn cname_without_our_txt_is_a_conflict() {
    // Even a CNAME to this very tunnel: without the TXT it is not provably ours.
    let existing = [cname("c", "z1", "app.example.com", T1)];
    let plan = run(&[want("app.example.com", T1, "gw")], &existing);
    let message = only_conflict(&plan).message();
    assert!(
        message.contains("CNAME") && message.contains("without culvert's ownership record"),
        "{message}"
    );
}

#[test]
fn another_owners_txt_is_a_conflict() {
    let existing = [
        owner_txt("t", "z1", "app.example.com", other_owner(), "gw"),
        cname("c", "z1", "app.example.com", T1),
    ];
    let plan = run(&[want("app.example.com", T1, "gw")], &existing);
    assert_eq!(only_conflict(&plan).kind, ConflictKind::OtherOwner);
    assert!(run(&[], &existing).is_empty());
}

#[test]
fn ours_wins_over_another_owners_txt_on_the_name() {
    let existing = [
        owner_txt("other", "z1", "app.example.com", other_owner(), "gw"),
        our_txt("t", "z1", "app.example.com", "gw"),
    ];
    let plan = run(&[want("app.example.com", T1, "gw")], &existing);
    assert_eq!(plan.changes, [create_cname("z1", "app.example.com", T1)]);
    assert_eq!(deleted(&run(&[], &existing)), ["t"]);
}

#[test]
fn owned_name_with_foreign_records_in_the_way_is_a_conflict() {
    let address = [
        our_txt("t", "z1", "app.example.com", "gw"),
        record("a", "z1", "app.example.com", RecordType::A, "192.0.2.1"),
    ];
    let plan = run(&[want("app.example.com", T1, "gw")], &address);
    assert!(matches!(
        only_conflict(&plan).kind,
        ConflictKind::ForeignRecord {
            record_type: RecordType::A,
            ..
        }
    ));
    let on_txt_name = [record(
        "c",
        "z1",
        "_culvert-owner.app.example.com",
        RecordType::Cname,
        "x.example.net",
    )];
    let plan = run(&[want("app.example.com", T1, "gw")], &on_txt_name);
    let conflict = only_conflict(&plan);
    assert!(
        conflict
            .message()
            .contains("_culvert-owner.app.example.com"),
        "{}",
        conflict.message()
    );
}

#[test]
fn two_gateways_one_name_first_wins() {
    let desired = [
        want("app.example.com", T1, "first"),
        want("app.example.com", T2, "second"),
        // The same Gateway twice is no conflict, and a loser is reported once.
        want("app.example.com", T1, "first"),
        want("APP.example.com", T2, "second"),
    ];
    let plan = run(&desired, &[]);
    assert_eq!(
        plan.changes,
        [
            create_txt("z1", "app.example.com", "first"),
            create_cname("z1", "app.example.com", T1),
        ]
    );
    assert_eq!(plan.conflicts.len(), 1);
    let conflict = &plan.conflicts[0];
    assert_eq!(conflict.gateway, gw("second"));
    assert_eq!(
        conflict.kind,
        ConflictKind::ClaimedByGateway {
            winner: gw("first")
        }
    );
    assert_eq!(
        conflict.message(),
        "app.example.com is already served by gateway edge/first"
    );
}

#[test]
fn wildcard_and_apex() {
    let desired = [
        want("*.example.com", T1, "gw"),
        want("example.com", T1, "gw"),
        want("*.sub.example.com", T1, "gw"),
    ];
    // The apex usually has records of other types; they do not block a (flattened) CNAME.
    let existing = [record(
        "mx",
        "z1",
        "example.com",
        RecordType::Other("MX".into()),
        "mx.example.com",
    )];
    let plan = run(&desired, &existing);
    let created: Vec<(&str, &str, &str)> = plan
        .creates()
        .map(|change| match change {
            PlannedChange::Create { zone_id, record } => (
                zone_id.as_str(),
                record.record_type.as_str(),
                record.name.as_str(),
            ),
            _ => unreachable!("creates() yields creates"),
        })
        .collect();
    assert_eq!(
        created,
        [
            ("z1", "TXT", "_culvert-owner-wildcard.example.com"),
            ("z1", "CNAME", "*.example.com"),
            ("z1", "TXT", "_culvert-owner.example.com"),
            ("z1", "CNAME", "example.com"),
            ("z2", "TXT", "_culvert-owner-wildcard.sub.example.com"),
            ("z2", "CNAME", "*.sub.example.com"),
        ]
    );
    assert!(plan.conflicts.is_empty());
}

#[test]
fn no_zone_and_invalid_names_are_skipped_and_others_planned() {
    let desired = [
        want("www.example.net", T1, "gw"),
        want("bad_name.example.com", T1, "gw"),
        want("app.example.com", "not-a-uuid", "gw"),
        want("ok.example.com", T1, "gw"),
    ];
    // Records of ours under a zone missing from the list are kept while wanted.
    let existing = [
        our_txt("t", "z-missing", "www.example.net", "gw"),
        cname("c", "z-missing", "www.example.net", T1),
        our_txt("t2", "z1", "app.example.com", "gw"),
    ];
    let plan = run(&desired, &existing);
    let reasons: Vec<(&str, &SkipReason)> = plan
        .skipped
        .iter()
        .map(|skipped| (skipped.hostname.as_str(), &skipped.reason))
        .collect();
    assert_eq!(reasons.len(), 3);
    assert_eq!(reasons[0], ("www.example.net", &SkipReason::NoZone));
    assert!(matches!(
        reasons[1],
        (
            "bad_name.example.com",
            SkipReason::Invalid(PlanError::InvalidHostname { .. })
        )
    ));
    assert!(matches!(
        reasons[2],
        (
            "app.example.com",
            SkipReason::Invalid(PlanError::InvalidTunnelId { .. })
        )
    ));
    assert_eq!(
        plan.changes,
        [
            create_txt("z1", "ok.example.com", "gw"),
            create_cname("z1", "ok.example.com", T1)
        ]
    );
}

#[test]
fn name_moved_to_a_delegated_zone() {
    let existing = [
        our_txt("t", "z1", "a.sub.example.com", "gw"),
        cname("c", "z1", "a.sub.example.com", T1),
    ];
    let plan = run(&[want("a.sub.example.com", T1, "gw")], &existing);
    assert_eq!(deleted(&plan), ["c", "t"]);
    assert_eq!(plan.creates().count(), 2);
    assert!(
        plan.creates().all(
            |change| matches!(change, PlannedChange::Create { zone_id, .. } if zone_id == "z2")
        )
    );
}

#[test]
fn tunnel_target_is_lowercase() {
    assert_eq!(
        tunnel_target("6FF42AE2-765D-4ADF-8112-31C55C1551EF"),
        "6ff42ae2-765d-4adf-8112-31c55c1551ef.cfargotunnel.com"
    );
    let plan = run(&[want("app.example.com", &T1.to_uppercase(), "gw")], &[]);
    assert_eq!(plan.changes[1], create_cname("z1", "app.example.com", T1));
}

#[test]
fn record_types_from_the_api() {
    assert_eq!(RecordType::from_api("cname"), RecordType::Cname);
    assert_eq!(RecordType::from_api("AAAA"), RecordType::Aaaa);
    assert_eq!(RecordType::from_api("MX"), RecordType::Other("MX".into()));
}

#[test]
fn dry_run_print_one_line_each() {
    let existing = [
        our_txt("t-old", "z1", "old.example.com", "gw"),
        cname("c-old", "z1", "old.example.com", T1),
        record("a", "z1", "taken.example.com", RecordType::A, "192.0.2.1"),
        record(
            "weird\nid",
            "z1",
            "gone.example.com",
            RecordType::Other("X\nY".into()),
            "",
        ),
    ];
    let desired = [
        want("app.example.com", T1, "gw"),
        want("taken.example.com", T1, "gw"),
        want("www.example.net", T1, "gw"),
    ];
    let printed = run(&desired, &existing).to_string();
    let want = format!(
        "delete CNAME old.example.com (record c-old in zone z1)\n\
         delete TXT _culvert-owner.old.example.com (record t-old in zone z1)\n\
         create TXT _culvert-owner.app.example.com {} in zone z1\n\
         create CNAME app.example.com -> {T1}.cfargotunnel.com (proxied) in zone z1\n\
         conflict taken.example.com (gateway edge/gw): DNSRecordConflict: an A record taken.example.com that culvert did not create holds taken.example.com; it is left alone\n\
         skip www.example.net (gateway edge/gw): no zone of the account holds this name\n",
        Ownership::new(owner(), gw("gw")).content().escape_debug()
    );
    assert_eq!(printed, want);
    assert!(!printed.contains("cluster-b"));
}

/// Applies a plan the way the API would, refusing what Cloudflare refuses.
fn apply(existing: &[ExistingRecord], plan: &Plan) -> Vec<ExistingRecord> {
    let mut records = existing.to_vec();
    for (n, change) in plan.changes.iter().enumerate() {
        match change {
            PlannedChange::Create { zone_id, record } => {
                let mut same = records
                    .iter()
                    .filter(|r| r.zone_id == *zone_id && normalize(&r.name) == record.name);
                if record.record_type == RecordType::Cname {
                    assert!(
                        same.all(|r| !r.record_type.blocks_cname()),
                        "81053 for {record:?}"
                    );
                } else {
                    assert!(
                        same.all(|r| r.record_type != RecordType::Cname),
                        "txt next to a cname {record:?}"
                    );
                }
                records.push(ExistingRecord {
                    id: format!("new-{n}"),
                    zone_id: zone_id.clone(),
                    name: record.name.clone(),
                    record_type: record.record_type.clone(),
                    content: record.content.clone(),
                    proxied: record.proxied.unwrap_or(false),
                });
            }
            PlannedChange::Update {
                zone_id,
                record_id,
                record,
            } => {
                let found = records
                    .iter_mut()
                    .find(|r| r.id == *record_id)
                    .expect("updated record exists");
                assert_eq!(found.zone_id, *zone_id);
                assert_eq!(found.record_type, record.record_type);
                assert_eq!(normalize(&found.name), record.name);
                found.content = record.content.clone();
                found.proxied = record.proxied.unwrap_or(false);
            }
            PlannedChange::Delete {
                zone_id, record_id, ..
            } => {
                let at = records
                    .iter()
                    .position(|r| r.id == *record_id && r.zone_id == *zone_id)
                    .expect("deleted record exists");
                records.remove(at);
            }
        }
    }
    records
}

/// Whether `record` is one Culvert may write: a TXT of ours on an ownership record's
/// name, or a CNAME on a name ours.
fn is_ours_to_touch(existing: &[ExistingRecord], record: &ExistingRecord) -> bool {
    match record.record_type {
        RecordType::Txt => {
            hostname_for_txt_name(&record.name).is_some() && is_ours(&owner(), record)
        }
        RecordType::Cname => {
            let Ok(hostname) = Hostname::parse(&record.name) else {
                return false;
            };
            let txt = txt_name(&hostname).expect("short name");
            existing.iter().any(|r| {
                r.zone_id == record.zone_id
                    && r.record_type == RecordType::Txt
                    && normalize(&r.name) == txt
                    && is_ours(&owner(), r)
            })
        }
        _ => false,
    }
}

const HOSTS: &[&str] = &[
    "app.example.com",
    "*.example.com",
    "a.sub.example.com",
    "example.com",
    "sub.example.com",
    "*.sub.example.com",
    "www.example.org",
];
const ZONE_IDS: &[&str] = &["z1", "z2", "z3", "z-gone"];

fn arb_name() -> impl Strategy<Value = String> {
    // The first hosts far more often, so records pile up on few names.
    let host = prop_oneof![9 => 0..3_usize, 4 => 3..HOSTS.len()];
    (host, 0..4_usize).prop_map(|(host, form)| {
        let hostname = Hostname::parse(HOSTS[host]).expect("valid hostname");
        match form {
            0 | 1 => txt_name(&hostname).expect("short name"),
            2 => format!("{}.", HOSTS[host].to_uppercase()),
            _ => HOSTS[host].to_owned(),
        }
    })
}

fn arb_record() -> impl Strategy<Value = ExistingRecord> {
    // Mostly the right zone, and mostly CNAME and TXT records, so names of ours with
    // duplicates and foreign records next to them come up often.
    let kind =
        prop_oneof![1 => Just(0_usize), 1 => Just(1), 3 => Just(2), 1 => Just(3), 4 => Just(4)];
    (arb_name(), 0..12_usize, kind, 0..6_usize, any::<bool>()).prop_map(
        |(name, zone, kind, content, proxied)| {
            let zone_id = match zone {
                0..=3 => ZONE_IDS[zone].to_owned(),
                // Mostly the zone the name belongs to.
                _ => {
                    let hostname = hostname_for_txt_name(&name)
                        .or_else(|| Hostname::parse(&name).ok())
                        .expect("a pool name");
                    zones()
                        .zone_for(hostname.as_str())
                        .expect("zoned")
                        .id
                        .clone()
                }
            };
            let (record_type, content) = match kind {
                0 => (RecordType::A, "192.0.2.1".to_owned()),
                1 => (RecordType::Aaaa, "2001:db8::1".to_owned()),
                2 => (
                    RecordType::Cname,
                    [
                        tunnel_target(T1),
                        tunnel_target(T2),
                        "elsewhere.example.net".to_owned(),
                    ][content % 3]
                        .clone(),
                ),
                3 => (RecordType::Other("MX".into()), "mx.example.com".to_owned()),
                _ => {
                    let mut version2 = Ownership::new(owner(), gw("g1"));
                    version2.version = 2;
                    let contents = [
                        Ownership::new(owner(), gw("g1")).content(),
                        Ownership::new(owner(), gw("g2")).content(),
                        version2.content(),
                        Ownership::new(other_owner(), gw("g1")).content(),
                        "\"heritage=culvert,culvert/owner=cluster-a\"".to_owned(),
                        "\"v=spf1 -all\"".to_owned(),
                    ];
                    (RecordType::Txt, contents[content].clone())
                }
            };
            ExistingRecord {
                id: String::new(),
                zone_id,
                name,
                record_type,
                content,
                proxied,
            }
        },
    )
}

fn arb_desired() -> impl Strategy<Value = DesiredName> {
    let hosts: Vec<&str> = HOSTS
        .iter()
        .copied()
        .chain([
            "www.example.net",
            "APP.example.com.",
            "bad_name.example.com",
        ])
        .collect();
    (0..hosts.len(), 0..5_usize, 0..2_usize).prop_map(move |(host, tunnel, gateway)| DesiredName {
        hostname: hosts[host].to_owned(),
        tunnel_id: [T1, T1, T2, T2, "not-a-uuid"][tunnel].to_owned(),
        gateway: gw(["g1", "g2"][gateway]),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn planning_the_applied_plan_changes_nothing(
        records in proptest::collection::vec(arb_record(), 0..20),
        desired in proptest::collection::vec(arb_desired(), 0..6),
    ) {
        let existing: Vec<ExistingRecord> = records
            .into_iter()
            .enumerate()
            .map(|(n, record)| ExistingRecord { id: format!("r{n}"), ..record })
            .collect();
        let first = run(&desired, &existing);
        for change in &first.changes {
            let id = match change {
                PlannedChange::Update { record_id, .. } | PlannedChange::Delete { record_id, .. } => record_id,
                PlannedChange::Create { zone_id, record } => {
                    // Never a claim next to another installation's, unless ours is there.
                    let txt = match record.record_type {
                        RecordType::Txt => record.name.clone(),
                        _ => txt_name(&Hostname::parse(&record.name).expect("valid")).expect("short"),
                    };
                    let claims_by = |by: OwnerId| existing.iter().any(|r| r.zone_id == *zone_id
                        && r.record_type == RecordType::Txt
                        && normalize(&r.name) == txt
                        && Ownership::parse(&r.content).is_some_and(|o| o.owner == by));
                    prop_assert!(
                        claims_by(owner()) || !claims_by(other_owner()),
                        "{record:?} next to another owner's\n{first}"
                    );
                    continue;
                }
            };
            let record = existing.iter().find(|r| r.id == *id).expect("a listed record");
            prop_assert!(is_ours_to_touch(&existing, record), "touches {record:?}\n{first}");
        }
        let applied = apply(&existing, &first);
        let second = run(&desired, &applied);
        prop_assert!(second.is_empty(), "first:\n{first}second:\n{second}");
        prop_assert_eq!(&second.conflicts, &first.conflicts);
        prop_assert_eq!(&second.skipped, &first.skipped);

        // Records of ours on names nobody wants are gone; names wanted but not placed in
        // a zone keep theirs.
        let zones = zones();
        let mut wanted = HashSet::new();
        for want in &desired {
            let Ok(hostname) = Hostname::parse(&want.hostname) else { continue };
            let zone = zones.zone_for(hostname.as_str()).map(|zone| zone.id.clone());
            // A name wanted with an unusable tunnel ID keeps its records too.
            let zone = zone.filter(|_| tunnel_id(&want.tunnel_id).is_ok());
            wanted.insert((zone, hostname));
        }
        for record in existing.iter().filter(|r| is_ours_to_touch(&existing, r)) {
            let hostname = hostname_for_txt_name(&record.name)
                .or_else(|| Hostname::parse(&record.name).ok())
                .expect("a pool name");
            if wanted.contains(&(Some(record.zone_id.clone()), hostname.clone()))
                || wanted.contains(&(None, hostname))
            {
                continue;
            }
            prop_assert!(applied.iter().all(|r| r.id != record.id), "{record:?} stays\n{first}");
        }

        // Every name won and not held by someone else has exactly one CNAME to its
        // tunnel and one ownership record, for its winning Gateway.
        let mut seen = HashSet::new();
        for want in &desired {
            let Ok(hostname) = Hostname::parse(&want.hostname) else { continue };
            let Some(zone) = zones.zone_for(hostname.as_str()) else { continue };
            let Ok(tunnel) = tunnel_id(&want.tunnel_id) else { continue };
            if !seen.insert(hostname.clone())
                || first.conflicts.iter().any(|c| c.hostname == hostname)
            {
                continue;
            }
            let at = |name: &str, kind: RecordType| -> Vec<&ExistingRecord> {
                applied
                    .iter()
                    .filter(|r| r.zone_id == zone.id && normalize(&r.name) == name && r.record_type == kind)
                    .collect()
            };
            let cnames = at(hostname.as_str(), RecordType::Cname);
            prop_assert_eq!(cnames.len(), 1, "{} has {:?}\n{}", hostname, cnames, first);
            prop_assert_eq!(&cnames[0].content, &tunnel_target(&tunnel));
            prop_assert!(cnames[0].proxied);
            let txt = txt_name(&hostname).expect("short name");
            let ours: Vec<&ExistingRecord> = at(&txt, RecordType::Txt)
                .into_iter()
                .filter(|r| is_ours(&owner(), r))
                .collect();
            prop_assert_eq!(ours.len(), 1, "{} has {:?}\n{}", hostname, ours, first);
            prop_assert_eq!(&ours[0].content, &Ownership::new(owner(), want.gateway.clone()).content());
        }
    }
}
