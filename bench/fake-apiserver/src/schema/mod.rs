//! Structural defaulting from a CRD's `openAPIV3Schema`, as the apiextensions server
//! applies it before storing: a property with a `default` that is absent (or `null`
//! where the schema is not `nullable`) gets the default, then the walk continues into
//! every present property, `items` of arrays and `additionalProperties` of maps, so
//! defaults inside defaults apply too. No validation, no pruning, no CEL. Start at
//! [`apply_defaults`].

use serde_json::Value;

/// Fills in the defaults `schema` declares anywhere in `value`.
pub(crate) fn apply_defaults(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    let Some(default) = property.get("default") else {
                        continue;
                    };
                    let nullable = property["nullable"] == Value::Bool(true);
                    match map.get(name) {
                        None => {
                            map.insert(name.clone(), default.clone());
                        }
                        Some(Value::Null) if !nullable => {
                            map.insert(name.clone(), default.clone());
                        }
                        Some(_) => {}
                    }
                }
                for (name, child) in map.iter_mut() {
                    if let Some(property) = properties.get(name) {
                        apply_defaults(child, property);
                    }
                }
            } else if let Some(additional) =
                schema.get("additionalProperties").filter(|a| a.is_object())
            {
                for child in map.values_mut() {
                    apply_defaults(child, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for item in items {
                    apply_defaults(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
