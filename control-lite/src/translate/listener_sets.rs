//! ListenerSets. Culvert does not merge ListenerSets into Gateways: a Gateway's
//! listeners, their conflicts and their certificate grants are judged on the Gateway
//! alone. Rather than leave a set looking unreconciled, each ListenerSet whose
//! `parentRef` names one of Culvert's Gateways gets `Accepted=False` and
//! `Programmed=False` with reason `NotAllowed` (Gateway API's reason for a set that
//! may not attach to its Gateway), and that Gateway reports
//! `AttachedListenerSets=False` (`ListenerSetsNotAllowed` when sets name it,
//! `NoListenerSetsAttached` when only its `allowedListeners` asks for them) with
//! `status.attachedListenerSets: 0`. A Gateway that neither admits nor is named by
//! a set gets neither, as before ListenerSets existed.

use super::conditions::{ACCEPTED, ATTACHED_LISTENER_SETS, PROGRAMMED, Verdict, reason};
use super::state::Context;
use super::status::Translation;
use crate::model::{GATEWAY_GROUP, ListenerSet, ListenerSetStatus};
use crate::store::NamespacedName;
use std::collections::BTreeMap;

/// Writes the status of every ListenerSet aimed at one of our Gateways, and what
/// each of those Gateways says about ListenerSets, into `translation`.
pub(crate) fn report(cx: &Context<'_>, translation: &mut Translation) {
    let (store, gateways) = (cx.store, &cx.gateways);
    let by_key = cx.gateway_index();
    let mut naming: BTreeMap<usize, usize> = BTreeMap::new();
    for (key, set) in &store.listener_sets {
        let Some(&gateway) = parent(key, set).and_then(|p| by_key.get(&p)) else {
            continue;
        };
        *naming.entry(gateway).or_default() += 1;
        let (namespace, name) = &gateways[gateway].key;
        let refusal = Verdict::no(
            reason::NOT_ALLOWED,
            format!(
                "Culvert does not merge ListenerSets into Gateways; \
                 declare these listeners on Gateway {namespace}/{name}"
            ),
        );
        let generation = set.metadata.generation();
        let conditions = vec![
            refusal.condition(ACCEPTED, generation),
            refusal.condition(PROGRAMMED, generation),
        ];
        translation
            .listener_sets
            .insert(key.clone(), ListenerSetStatus { conditions });
    }
    for (position, gateway) in gateways.iter().enumerate() {
        let admits = store
            .gateways
            .get(&gateway.key)
            .and_then(|g| g.spec.allowed_listeners.as_ref())
            .is_some_and(|allowed| allowed.admits_any());
        let verdict = match naming.get(&position) {
            Some(count) => Verdict::no(
                reason::LISTENER_SETS_NOT_ALLOWED,
                format!(
                    "{count} ListenerSet(s) name this Gateway; Culvert does not merge \
                     ListenerSets, so none is attached"
                ),
            ),
            None if admits => Verdict::no(
                reason::NO_LISTENER_SETS_ATTACHED,
                "allowedListeners admits ListenerSets, but Culvert does not merge them",
            ),
            None => continue,
        };
        if let Some(status) = translation.gateways.get_mut(&gateway.key) {
            status
                .conditions
                .push(verdict.condition(ATTACHED_LISTENER_SETS, gateway.generation));
            status.attached_listener_sets = Some(0);
        }
    }
}

/// The Gateway a ListenerSet names, when it names a Gateway.
fn parent(key: &NamespacedName, set: &ListenerSet) -> Option<NamespacedName> {
    let reference = &set.spec.parent_ref;
    let group = reference.group.as_deref().unwrap_or(GATEWAY_GROUP);
    let kind = reference.kind.as_deref().unwrap_or("Gateway");
    (group == GATEWAY_GROUP && kind == "Gateway").then(|| {
        let namespace = reference.namespace.clone().unwrap_or_else(|| key.0.clone());
        (namespace, reference.name.clone())
    })
}
