use super::*;

fn config(version: u64, body: &str) -> DataPlaneConfig {
    let mut value: serde_json::Value = serde_json::from_str(body).unwrap();
    value["version"] = version.into();
    serde_json::from_value(value).unwrap()
}

const LISTENERS: &str = r#"{"version": 0, "listeners": [
    {"name": "a", "port": 8080, "protocol": "HTTP"},
    {"name": "b", "port": 8080, "protocol": "HTTP", "hostname": "x.example"},
    {"name": "c", "address": "127.0.0.1", "port": 9090, "protocol": "HTTP"}]}"#;

#[test]
fn fnv_matches_reference_vectors() {
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
}

#[test]
fn apply_refuses_older_versions_and_keeps_serving() {
    let cell = SnapshotCell::new();
    assert!(cell.load().is_none());
    cell.apply(&config(2, LISTENERS)).unwrap();
    let err = cell.apply(&config(1, LISTENERS)).unwrap_err();
    assert!(matches!(
        err,
        Error::StaleVersion {
            offered: 1,
            current: 2
        }
    ));
    assert_eq!(cell.load_full().unwrap().config_version, 2);
    cell.apply(&config(2, LISTENERS)).unwrap();
}

#[test]
fn listen_addrs_are_deduplicated() {
    let snapshot = Snapshot::compile(&config(1, LISTENERS)).unwrap();
    let addrs: Vec<String> = snapshot
        .listen_addrs()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(addrs, ["0.0.0.0:8080", "127.0.0.1:9090"]);
    assert_eq!(snapshot.content_hash.len(), 16);
}
