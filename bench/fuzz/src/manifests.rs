//! `manifests`: Gateway API manifests through the loader, the typed model and
//! translation.
//!
//! The input is one manifest file: JSON when it starts with `{` or `[`, YAML
//! otherwise. Every document the loader keeps has an `apiVersion`, a `kind` and a
//! name; the documents that type become a store, which is translated for the
//! controller the first GatewayClass names (so the classes in the input are
//! Culvert's). What translation serves must be servable: every data plane's config,
//! and all of them merged, builds into a route table, and survives JSON.

use std::path::Path;

use culvert_control_lite::load::load_str;
use culvert_control_lite::model::Resource;
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{FixedAddresses, Options, translate};
use culvert_router::{DataPlaneConfig, RouteTableBuilder};

/// The controller translated for when the input names no GatewayClass.
const CONTROLLER: &str = "culvert.dev/gateway-controller";

/// Loads, types and translates the input; panics when a loaded document lacks what
/// the loader promises or translation serves a config the router refuses.
pub fn manifests(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let json = matches!(text.trim_start().as_bytes().first(), Some(b'{' | b'['));
    let file = Path::new(if json { "fuzz.json" } else { "fuzz.yaml" });
    let loaded = load_str(&text, file);
    for document in &loaded.documents {
        assert!(
            !document.api_version().is_empty()
                && !document.kind().is_empty()
                && !document.name().is_empty(),
            "a loaded document lacks apiVersion, kind or name: {:?}",
            document.value
        );
    }
    let resources = loaded
        .documents
        .into_iter()
        .filter_map(|document| Resource::from_value(document.value).ok());
    let store = Store::from_resources(resources);
    let controller_name = store
        .gateway_classes
        .values()
        .next()
        .map_or(CONTROLLER, |class| class.spec.controller_name.as_str())
        .to_owned();
    let options = Options {
        controller_name,
        privileged_namespace_prefixes: vec!["platform-".to_owned()],
        addresses: Box::new(FixedAddresses(vec!["192.0.2.10".to_owned()])),
        claims: Box::new(culvert_control_lite::translate::NoClaimChecks),
    };
    let translation = translate(&store, &options);
    for (plane, config) in &translation.data_planes {
        servable(config, &format!("{plane:?}"));
    }
    if let Some(merged) = translation.merged_config() {
        servable(&merged, "the merged config");
    }
}

/// A translated config builds and reads back from its JSON.
fn servable(config: &DataPlaneConfig, what: &str) {
    if let Err(error) = RouteTableBuilder::new().build(config) {
        panic!("translation serves {what}, which the router refuses: {error}");
    }
    let json = serde_json::to_vec(config);
    let again = json
        .as_ref()
        .map(|json| serde_json::from_slice::<DataPlaneConfig>(json));
    assert!(
        matches!(&again, Ok(Ok(again)) if again == config),
        "{what} does not survive JSON: {again:?}"
    );
}
