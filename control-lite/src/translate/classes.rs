//! The first stage: the GatewayClasses whose `controllerName` is Culvert's, each
//! accepted or refused with its `GatewayClassConfig` parameters (privileged
//! namespace prefixes, shared tunnels, the data-plane cap, the class tunnel).

use super::conditions::{Verdict, reason};
use super::options::Options;
use super::state::{ClassState, Context};
use super::tunnels::read_token;
use crate::model::{CULVERT_GROUP, GatewayClass, GatewayClassConfig, TOKEN_KEY};
use crate::store::Store;

/// Validates the classes whose controller is ours.
pub(crate) fn validate(cx: &mut Context<'_>) {
    let (store, options) = (cx.store, cx.options);
    cx.classes = store
        .gateway_classes
        .iter()
        .filter(|(_, class)| class.spec.controller_name == options.controller_name)
        .map(|(name, class)| (name.clone(), class_state(store, class, options)))
        .collect();
}

fn class_state(store: &Store, class: &GatewayClass, options: &Options) -> ClassState {
    let mut state = ClassState {
        generation: class.metadata.generation(),
        accepted: Verdict::yes(reason::ACCEPTED),
        privileged_prefixes: options.privileged_namespace_prefixes.clone(),
        allow_shared_tunnels: false,
        max_data_planes: None,
        tunnel: None,
    };
    state.accepted = match &class.spec.parameters_ref {
        None => Verdict::yes(reason::ACCEPTED),
        Some(reference)
            if reference.group == CULVERT_GROUP && reference.kind == "GatewayClassConfig" =>
        {
            match store.gateway_class_configs.get(&reference.name) {
                Some(config) => apply_class_config(store, config, &mut state),
                None => Verdict::no(
                    reason::INVALID_PARAMETERS,
                    format!("GatewayClassConfig {:?} not found", reference.name),
                ),
            }
        }
        Some(reference) => Verdict::no(
            reason::INVALID_PARAMETERS,
            format!(
                "parametersRef must be a {CULVERT_GROUP} GatewayClassConfig, not {}/{}",
                reference.group, reference.kind
            ),
        ),
    };
    state
}

/// Takes a GatewayClassConfig's policy into the class. A class tunnel whose token
/// cannot be read refuses the class: the tunnel could not be defended against
/// claims, so the class fails closed until the operator fixes it.
fn apply_class_config(
    store: &Store,
    config: &GatewayClassConfig,
    state: &mut ClassState,
) -> Verdict {
    let spec = &config.spec;
    state
        .privileged_prefixes
        .extend(spec.privileged_namespace_prefixes.iter().cloned());
    state.allow_shared_tunnels = spec.allow_shared_tunnels;
    state.max_data_planes = spec.max_data_planes_per_namespace;
    let Some(tunnel) = &spec.tunnel else {
        return Verdict::yes(reason::ACCEPTED);
    };
    let reference = &tunnel.token_ref;
    let key = reference.key.as_deref().unwrap_or(TOKEN_KEY);
    match read_token(store, &reference.namespace, &reference.name, key) {
        Ok(token) => {
            state.tunnel = Some(token.tunnel_id);
            Verdict::yes(reason::ACCEPTED)
        }
        Err(why) => Verdict::no(
            reason::INVALID_PARAMETERS,
            format!("the class tunnel cannot be read: {why}"),
        ),
    }
}
