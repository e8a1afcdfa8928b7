//! What a plane the controller could not render means for its Gateway's status:
//! a refusal that comes from what the Gateway, its `GatewayConfig` or the
//! controller's settings say (a replica count that does not fit, autoscaling
//! bounds the wrong way round, no data-plane image, a Secret a reference names
//! that is missing) turns the Gateway `Accepted=False` and `Programmed=False`,
//! reason `InvalidParameters`, naming what is wrong. Pure: [`overlay`] edits a
//! translation before the status writer compares it with what is stored.
//!
//! Failures of the API server are no refusal: the plane is tried again on the
//! next pass and status is left alone. A shared plane's refusal names no
//! Gateway (its key is the class's), so it is only logged.

use std::collections::BTreeMap;

use culvert_control_lite::model::Condition;
use culvert_control_lite::store::NamespacedName;
use culvert_control_lite::translate::Translation;

/// The reason a refused Gateway reports.
pub const INVALID_PARAMETERS: &str = "InvalidParameters";

/// Marks every Gateway of `translation` whose plane `refused` names as not
/// accepted, with why.
pub fn overlay(translation: &mut Translation, refused: &BTreeMap<NamespacedName, String>) {
    for (gateway, why) in refused {
        let Some(status) = translation.gateways.get_mut(gateway) else {
            continue;
        };
        let generation = status
            .conditions
            .first()
            .map_or(1, |c| c.observed_generation);
        let message = format!("its data plane cannot be rendered: {why}");
        for kind in ["Accepted", "Programmed"] {
            let condition = Condition::new(kind, false, INVALID_PARAMETERS, &message, generation);
            match status.conditions.iter_mut().find(|c| c.kind == kind) {
                Some(existing) => *existing = condition,
                None => status.conditions.push(condition),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use culvert_control_lite::model::GatewayStatus;

    #[test]
    fn a_refused_plane_unaccepts_its_gateway_and_no_other() {
        let mut translation = Translation::default();
        for name in ["edge", "other"] {
            translation.gateways.insert(
                ("team".to_owned(), name.to_owned()),
                GatewayStatus {
                    conditions: vec![
                        Condition::new("Accepted", true, "Accepted", "", 3),
                        Condition::new("Programmed", true, "Programmed", "", 3),
                    ],
                    ..GatewayStatus::default()
                },
            );
        }
        let refused = BTreeMap::from([
            (
                ("team".to_owned(), "edge".to_owned()),
                "no data-plane image configured".to_owned(),
            ),
            (
                (
                    "culvert-system".to_owned(),
                    "gatewayclass/culvert".to_owned(),
                ),
                "whatever".to_owned(),
            ),
        ]);
        overlay(&mut translation, &refused);
        let edge = &translation.gateways[&("team".to_owned(), "edge".to_owned())];
        for condition in &edge.conditions {
            assert_eq!(
                (condition.status.as_str(), condition.reason.as_str()),
                ("False", INVALID_PARAMETERS)
            );
            assert_eq!(
                condition.message,
                "its data plane cannot be rendered: no data-plane image configured"
            );
            assert_eq!(condition.observed_generation, 3);
        }
        let other = &translation.gateways[&("team".to_owned(), "other".to_owned())];
        assert!(other.conditions.iter().all(|c| c.status == "True"));
    }
}
