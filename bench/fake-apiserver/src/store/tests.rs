use serde_json::json;

use super::{Change, Key, Store};

fn key(name: &str) -> Key {
    (
        "widgets.example.test".to_owned(),
        "demo".to_owned(),
        name.to_owned(),
    )
}

#[test]
fn snapshots_undo_later_writes_and_compaction_drops_history() {
    let mut store = Store::default();
    store.commit(
        Change::Added,
        key("a"),
        json!({"metadata": {"name": "a"}, "v": 1}),
    );
    store.commit(Change::Added, key("b"), json!({"metadata": {"name": "b"}}));
    let at = store.revision;
    store.commit(
        Change::Modified,
        key("a"),
        json!({"metadata": {"name": "a"}, "v": 2}),
    );
    store.commit(
        Change::Deleted,
        key("b"),
        json!({"metadata": {"name": "b"}}),
    );
    store.commit(Change::Added, key("c"), json!({"metadata": {"name": "c"}}));
    assert_eq!(store.revision, 5);

    let then = store.snapshot("widgets.example.test", at);
    let names: Vec<&str> = then.keys().map(|k| k.2.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(then[&key("a")]["v"], 1);
    assert_eq!(then[&key("a")]["metadata"]["resourceVersion"], "1");
    let now = store.snapshot("widgets.example.test", store.revision);
    assert_eq!(
        now.keys().map(|k| k.2.as_str()).collect::<Vec<_>>(),
        ["a", "c"]
    );

    store.compact(4);
    assert_eq!(store.floor, 4);
    assert_eq!(store.log.len(), 1, "only the write above the floor is kept");
    store.compact(100);
    assert_eq!(
        store.floor, 5,
        "the floor never passes the current revision"
    );
    store.compact(1);
    assert_eq!(store.floor, 5, "the floor never moves down");
}
