//! `culvert controller --render <FILE|DIR>`: what `culvert controller` would
//! apply for a set of manifests, without a cluster. The manifests are translated
//! as the controller would, and every plane it would run, dedicated or shared, is
//! rendered and printed as `kubectl apply`-able documents (JSON, which is YAML),
//! each plane after a comment naming it. The Secrets the controller generates
//! are not printed, and the pod template's Secrets hash, which only the cluster's
//! Secrets give, is all zeros. Fails when a plane cannot be rendered.

use std::fmt::Write as _;
use std::path::Path;

use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{FixedAddresses, NoClaimChecks, Options, translate};
use culvert_controller::planes;
use culvert_controller::render;
use culvert_controller::run::{Settings, plane_spec};

use super::Outcome;

/// The Secrets hash printed in place of the cluster's.
const NO_HASH: &str = "0000000000000000";

/// Renders every plane `path`'s manifests give, as `settings` would.
pub(crate) fn run(
    path: &Path,
    controller_name: &str,
    settings: &Settings,
) -> anyhow::Result<Outcome> {
    let (store, problems) = Store::load(path);
    let mut out = String::new();
    let mut ok = problems.is_empty();
    for problem in &problems {
        eprintln!("culvert: {problem}");
    }
    let options = Options {
        controller_name: controller_name.to_owned(),
        privileged_namespace_prefixes: Vec::new(),
        addresses: Box::new(FixedAddresses(Vec::new())),
        claims: Box::new(NoClaimChecks),
    };
    let translation = translate(&store, &options);
    for ((namespace, name), refusal) in &translation.refused_planes {
        eprintln!(
            "culvert: Gateway {namespace}/{name} gets no plane: {}",
            refusal.reason()
        );
    }
    let wanted = planes::wanted(&store, &translation, Some(&settings.namespace));
    for plane in wanted.planes.values() {
        let owner = &plane.gateway;
        let spec = plane_spec(settings, plane, plane.secrets(NO_HASH.to_owned()));
        let documents = render::render(&spec).and_then(|r| r.apply_documents());
        match documents {
            Ok(documents) => {
                for document in documents {
                    writeln!(
                        out,
                        "---\n# the plane of {} {}\n{}",
                        owner.owner.as_str(),
                        owner.name,
                        serde_json::to_string_pretty(&document)?
                    )?;
                }
            }
            Err(error) => {
                eprintln!(
                    "culvert: the plane of {} {}/{} cannot be rendered: {error}",
                    owner.owner.as_str(),
                    owner.namespace,
                    owner.name
                );
                ok = false;
            }
        }
    }
    Ok(Outcome::judged(out, ok))
}
