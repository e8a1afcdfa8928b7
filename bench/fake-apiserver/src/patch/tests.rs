use serde_json::json;

use super::{Applier, apply, conflict_message, json_patch, merge_patch};

#[test]
fn merge_patch_follows_rfc_7386() {
    let mut doc = json!({"a": "b", "c": {"d": "e", "f": "g"}, "keep": [1, 2]});
    merge_patch(&mut doc, &json!({"a": "z", "c": {"f": null}, "keep": [3]}));
    assert_eq!(doc, json!({"a": "z", "c": {"d": "e"}, "keep": [3]}));
}

#[test]
fn json_patch_follows_rfc_6902() {
    let mut doc = json!({"spec": {"list": [1, 3], "gone": true}, "x": "y"});
    json_patch(
        &mut doc,
        &json!([
            {"op": "test", "path": "/x", "value": "y"},
            {"op": "add", "path": "/spec/list/1", "value": 2},
            {"op": "add", "path": "/spec/list/-", "value": 4},
            {"op": "remove", "path": "/spec/gone"},
            {"op": "replace", "path": "/x", "value": "z"},
            {"op": "copy", "from": "/x", "path": "/spec/copy"},
            {"op": "move", "from": "/spec/copy", "path": "/moved~1here"},
        ]),
    )
    .unwrap();
    assert_eq!(
        doc,
        json!({"spec": {"list": [1, 2, 3, 4]}, "x": "z", "moved/here": "z"})
    );
    let failed = json_patch(
        &mut doc,
        &json!([{"op": "test", "path": "/x", "value": "q"}]),
    );
    assert_eq!(failed.unwrap_err(), "testing value /x failed: test failed");
    assert!(json_patch(&mut doc, &json!([{"op": "remove", "path": "/nope"}])).is_err());
}

fn who<'a>(manager: &'a str, force: bool) -> Applier<'a> {
    Applier {
        manager,
        force,
        api_version: "example.test/v1",
        status: false,
        time: "2026-01-01T00:00:00Z",
    }
}

#[test]
fn apply_tracks_owners_and_conflicts_unless_forced() {
    let empty = json!({"metadata": {"name": "w"}});
    let first = apply(
        &empty,
        &json!({"spec": {"size": 1, "color": "red"}}),
        &who("a", false),
    )
    .unwrap();
    assert_eq!(first["spec"], json!({"size": 1, "color": "red"}));
    assert_eq!(first["metadata"]["managedFields"][0]["manager"], "a");
    assert_eq!(
        first["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:size": {}, "f:color": {}}})
    );
    // Same value by another manager: shared, no conflict.
    let shared = apply(&first, &json!({"spec": {"color": "red"}}), &who("b", false)).unwrap();
    // A changed value owned by "a": conflict.
    let conflicts = apply(&shared, &json!({"spec": {"size": 2}}), &who("b", false)).unwrap_err();
    assert_eq!(
        conflict_message(&conflicts),
        "Apply failed with 1 conflict: conflict with \"a\" using example.test/v1: .spec.size"
    );
    let forced = apply(
        &shared,
        &json!({"spec": {"size": 2, "color": "red"}}),
        &who("b", true),
    )
    .unwrap();
    assert_eq!(forced["spec"]["size"], 2);
    // "a" stops applying color, but "b" still owns it (shared): it stays.
    let again = apply(&forced, &json!({"spec": {}}), &who("a", false)).unwrap();
    assert_eq!(again["spec"]["color"], "red");
    // "b" stops applying size and color: nobody owns them any more, so they go.
    let dropped = apply(&again, &json!({"spec": {"other": 1}}), &who("b", false)).unwrap();
    assert_eq!(dropped["spec"], json!({"other": 1}));
}
