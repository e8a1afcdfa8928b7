//! `culvert validate <FILE|DIR>`: load manifests, translate them as the embedded
//! control plane would, and print every condition each object would get. Exits
//! non-zero when a document is malformed or a Gateway or route is not accepted, so
//! it fits in a CI pipeline.

use super::Outcome;
use culvert_control_lite::model::Condition;
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{FixedAddresses, Options, translate};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `culvert validate`.
#[derive(Debug, clap::Args)]
pub(crate) struct ValidateArgs {
    /// Manifest file or directory (YAML or JSON).
    path: PathBuf,
    /// `controllerName` of the GatewayClasses Culvert owns.
    #[arg(long, default_value = "culvert.dev/gateway-controller")]
    controller_name: String,
    /// Address Gateways get (the host's address on bare metal).
    #[arg(long, default_value = "0.0.0.0")]
    address: String,
}

fn describe(conditions: &[Condition]) -> String {
    conditions
        .iter()
        .map(|c| {
            let message = if c.message.is_empty() {
                String::new()
            } else {
                format!(": {}", c.message)
            };
            format!("{}={} ({}{message})", c.kind, c.status, c.reason)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn accepted(conditions: &[Condition]) -> bool {
    conditions
        .iter()
        .any(|c| c.kind == "Accepted" && c.is_true())
}

/// Runs the command; the report, successful when every manifest is valid.
pub(crate) fn run(args: &ValidateArgs) -> anyhow::Result<Outcome> {
    let (store, problems) = Store::load(&args.path);
    let mut out = String::new();
    let mut ok = true;
    for problem in &problems {
        writeln!(out, "error: {problem}")?;
        ok = false;
    }
    let options = Options {
        controller_name: args.controller_name.clone(),
        privileged_namespace_prefixes: Vec::new(),
        addresses: Box::new(FixedAddresses(vec![args.address.clone()])),
        claims: Box::new(culvert_control_lite::translate::NoClaimChecks),
    };
    let translation = translate(&store, &options);
    for (name, status) in &translation.gateway_classes {
        writeln!(out, "GatewayClass {name}: {}", describe(&status.conditions))?;
        ok &= accepted(&status.conditions);
    }
    for ((namespace, name), gateway) in &store.gateways {
        let Some(status) = translation.gateways.get(&(namespace.clone(), name.clone())) else {
            writeln!(
                out,
                "Gateway {namespace}/{name}: not managed (class {:?} is not Culvert's)",
                gateway.spec.gateway_class_name
            )?;
            continue;
        };
        writeln!(
            out,
            "Gateway {namespace}/{name}: {}",
            describe(&status.conditions)
        )?;
        ok &= accepted(&status.conditions);
        for listener in &status.listeners {
            writeln!(
                out,
                "  listener {}: {}; attachedRoutes={}",
                listener.name,
                describe(&listener.conditions),
                listener.attached_routes
            )?;
        }
    }
    for (key, status) in &translation.routes {
        for parent in &status.parents {
            let namespace = parent
                .parent_ref
                .namespace
                .as_deref()
                .unwrap_or(&key.namespace);
            let section = parent
                .parent_ref
                .section_name
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            let port = parent
                .parent_ref
                .port
                .map(|p| format!(" port {p}"))
                .unwrap_or_default();
            writeln!(
                out,
                "{key} -> Gateway {namespace}/{}{section}{port}: {}",
                parent.parent_ref.name,
                describe(&parent.conditions)
            )?;
            ok &= accepted(&parent.conditions);
        }
    }
    writeln!(
        out,
        "{}",
        if ok {
            "valid"
        } else {
            "invalid: see the conditions above"
        }
    )?;
    Ok(Outcome::judged(out, ok))
}
