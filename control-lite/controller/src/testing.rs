//! What the unit tests of several modules share: a store from manifest objects
//! and its translation as `culvert controller` runs it.

use culvert_control_lite::model::Resource;
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{
    AddressAssigner, FixedAddresses, NoClaimChecks, Options, Translation, translate,
};
use serde_json::Value;

/// The controller name the tests' GatewayClasses carry.
pub(crate) const CONTROLLER: &str = "culvert.dev/gateway-controller";

/// A store holding `objects` (each must load).
pub(crate) fn store(objects: impl IntoIterator<Item = Value>) -> Store {
    Store::from_resources(objects.into_iter().map(|object| {
        Resource::from_value(object).unwrap_or_else(|e| panic!("a test object loads: {e}"))
    }))
}

/// `store` translated with `addresses` assigning Gateway addresses.
pub(crate) fn translate_with(store: &Store, addresses: Box<dyn AddressAssigner>) -> Translation {
    let options = Options {
        controller_name: CONTROLLER.to_owned(),
        privileged_namespace_prefixes: Vec::new(),
        addresses,
        claims: Box::new(NoClaimChecks),
    };
    translate(store, &options)
}

/// `store` translated with every Gateway given 192.0.2.1.
pub(crate) fn translated(store: &Store) -> Translation {
    translate_with(
        store,
        Box::new(FixedAddresses(vec!["192.0.2.1".to_owned()])),
    )
}
