//! Collections: the query parameters of lists and watches, which objects a selector
//! picks, and paginated lists served from the state at one revision (the latest, or
//! an older one rebuilt from the event log for `Exact` reads and later pages), with
//! opaque `continue` tokens and the 410/504 answers for revisions out of reach.
//! Start at [`list`].

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::api::{Target, partial, typed};
use crate::error::Status;
use crate::registry::Kind;
use crate::selector::{Selector, field, label};
use crate::state::Inner;

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// Query parameters of a list or watch.
#[derive(Debug, Default)]
pub(crate) struct ListQuery {
    /// `labelSelector`.
    pub(crate) labels: Selector,
    /// `fieldSelector`.
    pub(crate) fields: Selector,
    /// `limit`.
    pub(crate) limit: Option<usize>,
    /// `continue`.
    pub(crate) continue_token: Option<String>,
    /// `resourceVersion`.
    pub(crate) resource_version: Option<u64>,
    /// `resourceVersionMatch`.
    pub(crate) version_match: Option<Match>,
    /// `timeoutSeconds`.
    pub(crate) timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks=true`.
    pub(crate) bookmarks: bool,
    /// `sendInitialEvents=true`.
    pub(crate) send_initial_events: bool,
    /// Metadata only (`Accept: ...;as=PartialObjectMetadataList`).
    pub(crate) partial: bool,
}

impl ListQuery {
    /// Parses the query parameters; `Err` is the 400/422 answer.
    pub(crate) fn parse(query: &BTreeMap<String, String>, kind: &Kind) -> Result<Self, Status> {
        let text = |name: &str| query.get(name).map(String::as_str).unwrap_or_default();
        let labels = Selector::parse(text("labelSelector")).map_err(Status::bad_request)?;
        let fields = Selector::parse(text("fieldSelector")).map_err(Status::bad_request)?;
        for key in fields.keys() {
            field(&Value::Null, &kind.kind, key).map_err(Status::bad_request)?;
        }
        let resource_version = match query.get("resourceVersion").filter(|v| !v.is_empty()) {
            None => None,
            Some(rv) => Some(rv.parse::<u64>().map_err(|_| {
                Status::new(
                    400,
                    "BadRequest",
                    format!("invalid resource version \"{rv}\""),
                )
            })?),
        };
        let version_match = match text("resourceVersionMatch") {
            "" => None,
            "NotOlderThan" => Some(Match::NotOlderThan),
            "Exact" => Some(Match::Exact),
            other => {
                return Err(Status::new(
                    422,
                    "Invalid",
                    format!(
                        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
                    ),
                ));
            }
        };
        if version_match.is_some() && resource_version.is_none() {
            return Err(Status::new(
                422,
                "Invalid",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        let flag = |name: &str| matches!(text(name), "true" | "1");
        Ok(Self {
            labels,
            fields,
            limit: query
                .get("limit")
                .and_then(|l| l.parse().ok())
                .filter(|l| *l > 0),
            continue_token: query.get("continue").cloned().filter(|c| !c.is_empty()),
            resource_version,
            version_match,
            timeout_seconds: query.get("timeoutSeconds").and_then(|t| t.parse().ok()),
            bookmarks: flag("allowWatchBookmarks"),
            send_initial_events: flag("sendInitialEvents"),
            partial: false,
        })
    }

    /// Whether `object` (of `kind`, in `namespace` when one is addressed) is selected.
    pub(crate) fn selects(&self, kind: &Kind, namespace: Option<&str>, object: &Value) -> bool {
        if let Some(namespace) = namespace {
            if object["metadata"]["namespace"].as_str() != Some(namespace) {
                return false;
            }
        }
        self.labels.matches(|k| label(object, k))
            && self
                .fields
                .matches(|k| field(object, &kind.kind, k).ok().flatten())
    }
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn too_large(wanted: u64, current: u64) -> Status {
    let mut status = Status::new(
        504,
        "Timeout",
        format!("Too large resource version: {wanted}, current: {current}"),
    )
    .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge",
                                     "message": "Too large resource version"}],
                         "retryAfterSeconds": 1}));
    status.retry_after = Some(1);
    status
}

/// `GET` of a collection.
pub(crate) fn list(inner: &Inner, target: &Target, query: &ListQuery) -> Result<Value, Status> {
    let store = inner.store();
    let current = store.revision;
    // The revision to read at (`None`: the latest) and the key to start after.
    let (at, start) = match &query.continue_token {
        Some(token) => {
            let (rv, start) = decode_continue(token)
                .ok_or_else(|| Status::bad_request("continue key is not valid: invalid token"))?;
            match u64::try_from(rv) {
                // A token without a revision (`-1`) continues at the latest one.
                Err(_) => (None, Some(start)),
                Ok(rv) if rv < store.floor => {
                    let mut status = Status::new(410, "Expired", CONTINUE_EXPIRED);
                    status.continue_token = Some(encode_continue(-1, &start));
                    return Err(status);
                }
                Ok(rv) if rv > current => return Err(too_large(rv, current)),
                Ok(rv) => (Some(rv), Some(start)),
            }
        }
        None => match (query.resource_version, query.version_match) {
            (None, _) | (Some(0), None | Some(Match::NotOlderThan)) => (None, None),
            (Some(rv), _) if rv > current => return Err(too_large(rv, current)),
            (Some(_), None | Some(Match::NotOlderThan)) => (None, None),
            (Some(rv), Some(Match::Exact)) if rv < store.floor => {
                return Err(Status::new(
                    410,
                    "Expired",
                    "The resourceVersion for the provided list is too old.",
                ));
            }
            (Some(rv), Some(Match::Exact)) => (Some(rv), None),
        },
    };
    let resource = target.kind.qualified();
    let snapshot;
    let objects = match at {
        Some(rv) if rv < current => {
            snapshot = store.snapshot(&resource, rv);
            &snapshot
        }
        _ => &store.objects,
    };
    let revision = at.unwrap_or(current);
    let mut selected = objects
        .iter()
        .filter(|(k, _)| k.0 == resource)
        .filter(|(k, _)| {
            start
                .as_ref()
                .is_none_or(|s| format!("{}/{}", k.1, k.2).as_str() > s.as_str())
        })
        .filter(|(_, o)| query.selects(&target.kind, target.namespace.as_deref(), o));
    let mut items = Vec::new();
    let mut last = None;
    for (k, object) in selected.by_ref() {
        if query.limit.is_some_and(|limit| items.len() >= limit) {
            items.push(None);
            break;
        }
        last = Some(format!("{}/{}", k.1, k.2));
        items.push(Some(if target.kind.custom {
            typed(&target.kind, object.clone())
        } else {
            untyped(object.clone())
        }));
    }
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if items.last().is_some_and(Option::is_none) {
        items.pop();
        let remaining = 1 + selected.count();
        metadata["continue"] = json!(encode_continue(
            i64::try_from(revision).unwrap_or(i64::MAX),
            last.as_deref().unwrap_or_default()
        ));
        metadata["remainingItemCount"] = json!(remaining);
    }
    let mut items: Vec<Value> = items.into_iter().flatten().collect();
    let (list_kind, api_version) = if query.partial {
        items = items
            .iter()
            .map(|o| partial(&typed(&target.kind, o.clone())))
            .collect();
        (
            "PartialObjectMetadataList".to_owned(),
            "meta.k8s.io/v1".to_owned(),
        )
    } else {
        (target.kind.list_kind.clone(), target.kind.api_version())
    };
    Ok(json!({
        "kind": list_kind,
        "apiVersion": api_version,
        "metadata": metadata,
        "items": items,
    }))
}

fn untyped(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    object
}

/// The token format of the real server: base64 of `{"v","rv","start"}`, the start
/// key ending in NUL (the next key after the last one returned).
pub(crate) fn encode_continue(revision: i64, start: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": format!("{start}\u{0}")});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// `(rv, key to start after)` of a token.
pub(crate) fn decode_continue(token: &str) -> Option<(i64, String)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    if value["v"] != "meta.k8s.io/v1" {
        return None;
    }
    let start = value["start"]
        .as_str()?
        .trim_end_matches('\u{0}')
        .to_owned();
    Some((value["rv"].as_i64()?, start))
}

#[cfg(test)]
mod tests;
