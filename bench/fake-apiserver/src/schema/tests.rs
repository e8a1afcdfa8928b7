use serde_json::json;

use super::apply_defaults;

#[test]
fn defaults_fill_absent_and_null_fields_and_recurse_into_items_and_defaults() {
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "default": 3},
                    "kept": {"type": "string", "default": "d"},
                    "maybe": {"type": "string", "nullable": true, "default": "x"},
                    "nulled": {"type": "string", "default": "y"},
                    "refs": {"type": "array", "items": {"type": "object", "properties": {
                        "kind": {"type": "string", "default": "Service"},
                        "weight": {"type": "integer", "default": 1}}}},
                    "matches": {"type": "array", "default": [{}], "items": {"type": "object",
                        "properties": {"path": {"type": "object",
                            "default": {"type": "PathPrefix"},
                            "properties": {"type": {"type": "string"},
                                           "value": {"type": "string", "default": "/"}}}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "object",
                        "properties": {"on": {"type": "boolean", "default": true}}}}
                }
            }
        }
    });
    let mut object = json!({"spec": {
        "kept": "mine", "maybe": null, "nulled": null,
        "refs": [{"name": "a"}, {"name": "b", "weight": 5}],
        "labels": {"x": {}}
    }});
    apply_defaults(&mut object, &schema);
    assert_eq!(
        object,
        json!({"spec": {
            "size": 3, "kept": "mine", "maybe": null, "nulled": "y",
            "refs": [{"name": "a", "kind": "Service", "weight": 1},
                     {"name": "b", "kind": "Service", "weight": 5}],
            "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
            "labels": {"x": {"on": true}}
        }})
    );
}
