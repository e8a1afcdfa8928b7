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
    // The serving version again: a no-op with the same content, an error with other.
    let serving = cell.load_full().unwrap();
    match cell.apply(&config(2, LISTENERS)).unwrap() {
        Applied::AlreadyServing(snapshot) => assert!(Arc::ptr_eq(&snapshot, &serving)),
        Applied::Swapped(_) => panic!("the same version and content was compiled again"),
    }
    let mut other = config(2, LISTENERS);
    other.listeners.pop();
    let err = cell.apply(&other).unwrap_err();
    assert!(
        matches!(&err, Error::VersionConflict { version: 2, serving: s, offered: o } if s != o),
        "{err}"
    );
    assert!(Arc::ptr_eq(&cell.load_full().unwrap(), &serving));
    // The same content under a newer version swaps, with the same content hash.
    let newer = cell.apply(&config(3, LISTENERS)).unwrap();
    assert!(matches!(newer, Applied::Swapped(_)));
    assert_eq!(newer.snapshot().content_hash, serving.content_hash);
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
