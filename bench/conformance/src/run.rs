//! Running vector files: skip what Culvert does not claim, load and translate the
//! resources, judge every condition, status check and request (then each step's),
//! and report in the fixed format: one line per file, every failure with expected
//! and actual, and a last line `N passed, M failed, K skipped` counting checks.

use super::certs::CaSet;
use super::checks::{self, Verdict};
use super::prepare::{Clock, EndpointOwners, LoopbackAddresses, prepare, replace_placeholders};
use super::replay::{Tables, judge};
use super::vector::{ConditionCheck, Exchange, StatusCheck, VectorFile, load_vector, vector_paths};
use culvert_control_lite::model::{ObjectKey, Resource};
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{Options, Translation, translate};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The controller name the vectors' GatewayClass uses.
pub const CONTROLLER_NAME: &str = "gateway-conformance.example/controller";

/// Upstream features the static replay claims: what translation and the router
/// implement. Files needing anything else are skipped with the missing feature named.
pub const CLAIMED_FEATURES: &[&str] = &[
    "BackendTLSPolicy",
    "Gateway",
    "GatewayAddressEmpty",
    "GatewayBackendClientCertificate",
    "GatewayFrontendClientCertificateValidation",
    "GatewayFrontendClientCertificateValidationInsecureFallback",
    "GatewayHTTPListenerIsolation",
    "GatewayInfrastructurePropagation",
    "GatewayHTTPSListenerDetectMisdirectedRequests",
    "GatewayPort8080",
    "GatewayStaticAddresses",
    "GRPCRoute",
    "GRPCRouteNamedRouteRule",
    "HTTPRoute",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendProtocolH2C",
    "HTTPRouteBackendProtocolWebSocket",
    "HTTPRouteBackendRequestHeaderModification",
    "HTTPRouteBackendTimeout",
    "HTTPRouteCORS",
    "HTTPRouteDestinationPortMatching",
    "HTTPRouteHostRewrite",
    "HTTPRouteMethodMatching",
    "HTTPRouteNamedRouteRule",
    "HTTPRouteParentRefPort",
    "HTTPRoutePathRedirect",
    "HTTPRoutePathRewrite",
    "HTTPRoutePortRedirect",
    "HTTPRouteQueryParamMatching",
    "HTTPRouteRequestMirror",
    "HTTPRouteRequestMultipleMirrors",
    "HTTPRouteRequestPercentageMirror",
    "HTTPRouteRequestTimeout",
    "HTTPRouteResponseHeaderModification",
    "HTTPRouteRetry",
    "HTTPRouteSchemeRedirect",
    "ReferenceGrant",
    "TLSRoute",
    "TLSRouteModeMixed",
    "TLSRouteModeTerminate",
];

/// Counts of checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Checks that held.
    pub passed: usize,
    /// Checks that did not.
    pub failed: usize,
    /// Checks not judged (skipped files count all their checks here).
    pub skipped: usize,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }
}

/// The report of one file.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// File name without `.json`.
    pub name: String,
    /// Its checks.
    pub tally: Tally,
    /// Why the whole file was skipped, if it was.
    pub skipped: Option<String>,
    /// Lines describing failed and skipped checks.
    pub details: Vec<String>,
}

impl FileReport {
    /// `PASS`, `FAIL` or `SKIP`.
    pub fn outcome(&self) -> &'static str {
        if self.skipped.is_some() {
            "SKIP"
        } else if self.tally.failed > 0 {
            "FAIL"
        } else {
            "PASS"
        }
    }
}

fn check_count(file: &VectorFile) -> usize {
    file.requests.len()
        + file.conditions.len()
        + file.status_checks.len()
        + file
            .steps
            .iter()
            .map(|s| s.requests.len() + s.conditions.len() + s.status_checks.len())
            .sum::<usize>()
}

/// Judges the request exchanges of a vector file, state by state: the static replay
/// ([`StaticJudge`]) or a live harness on real sockets.
pub trait ExchangeJudge {
    /// Takes in the state every following exchange runs against (the initial
    /// resources, then each step's): the objects as they settled, the translation
    /// and who owns which endpoint. Returns problems worth reporting (a refused
    /// config), one line each.
    fn converge(
        &mut self,
        store: &Store,
        translation: &Translation,
        owners: &EndpointOwners,
    ) -> Vec<String>;
    /// Judges one exchange against the last converged state.
    fn judge(&mut self, exchange: &Exchange) -> Verdict;
}

/// Where each state's objects settle into what the checks judge: translated as
/// they are ([`Direct`]), or pushed through a cluster and read back (the Kubernetes
/// source's conformance run: objects into an API server, status as written).
pub trait Cluster {
    /// Takes a whole state (every object, in apply order) and the translation
    /// settings; returns the objects as the cluster holds them and the translation
    /// whose configs and status are judged.
    fn settle(
        &mut self,
        objects: Vec<Value>,
        options: Options,
    ) -> Result<(Store, Translation), String>;
}

/// Translation of the objects as given.
#[derive(Debug, Default, Clone, Copy)]
pub struct Direct;

impl Cluster for Direct {
    fn settle(
        &mut self,
        objects: Vec<Value>,
        options: Options,
    ) -> Result<(Store, Translation), String> {
        let resources = objects
            .into_iter()
            .filter_map(|v| Resource::from_value(v).ok());
        let store = Store::from_resources(resources);
        let translation = translate(&store, &options);
        Ok((store, translation))
    }
}

/// The static replay: routing decisions and pure outcomes, no sockets.
#[derive(Default)]
pub struct StaticJudge {
    state: Option<(Tables, EndpointOwners)>,
}

impl ExchangeJudge for StaticJudge {
    fn converge(
        &mut self,
        _: &Store,
        translation: &Translation,
        owners: &EndpointOwners,
    ) -> Vec<String> {
        let tables = Tables::new(translation.clone());
        let refused = tables
            .refused()
            .into_iter()
            .map(|refused| format!("data plane config refused by the router: {refused}"))
            .collect();
        self.state = Some((tables, owners.clone()));
        refused
    }

    fn judge(&mut self, exchange: &Exchange) -> Verdict {
        match &self.state {
            Some((tables, owners)) => judge(tables, owners, exchange),
            None => Verdict::Fail("no state to replay against".to_owned()),
        }
    }
}

/// Runs one parsed file with the static replay.
pub fn run_file(file: &VectorFile) -> FileReport {
    run_file_with(file, &mut StaticJudge::default())
}

/// Runs one parsed file, judging its exchanges with `exchanges`.
pub fn run_file_with(file: &VectorFile, exchanges: &mut dyn ExchangeJudge) -> FileReport {
    run_file_in(file, exchanges, &mut Direct)
}

/// Runs one parsed file whose states settle in `cluster`, judging its exchanges
/// with `exchanges`.
pub fn run_file_in(
    file: &VectorFile,
    exchanges: &mut dyn ExchangeJudge,
    cluster: &mut dyn Cluster,
) -> FileReport {
    let mut report = FileReport {
        name: file.name.clone(),
        tally: Tally::default(),
        skipped: None,
        details: Vec::new(),
    };
    let claimed = |feature: &str| CLAIMED_FEATURES.contains(&feature);
    if !file.runs_with(claimed) {
        let missing: Vec<&str> = file
            .features
            .iter()
            .map(String::as_str)
            .filter(|f| !claimed(f))
            .collect();
        let excluded: Vec<&str> = file
            .skip_if_features
            .iter()
            .map(String::as_str)
            .filter(|f| claimed(f))
            .collect();
        report.skipped = Some(if missing.is_empty() {
            format!("skipped because Culvert claims {}", excluded.join(", "))
        } else {
            format!("needs unclaimed feature(s) {}", missing.join(", "))
        });
        report.tally.skipped = check_count(file);
        return report;
    }
    let mut cas = CaSet::new();
    let mut clock = Clock::default();
    let mut raw = file.resources.clone();
    if let Err(why) = prepare(&mut raw, &mut cas, &mut clock, &backed_by_pods(file)) {
        report
            .details
            .push(format!("  resources could not be prepared: {why}"));
        report.tally.failed = check_count(file);
        return report;
    }
    let mut objects: BTreeMap<ObjectKey, Value> = BTreeMap::new();
    for value in raw {
        match Resource::from_value(value.clone()) {
            Ok(resource) => {
                objects.insert(resource.key(), value);
            }
            Err(error) => report.details.push(format!("  resource refused: {error}")),
        }
    }
    judge_state(
        &mut report,
        exchanges,
        cluster,
        &objects,
        &file.conditions,
        &file.status_checks,
        &file.requests,
        "",
    );
    for (index, step) in file.steps.iter().enumerate() {
        for value in &step.apply {
            let mut value = value.clone();
            replace_placeholders(&mut value);
            let Ok(resource) = Resource::from_value(value.clone()) else {
                report
                    .details
                    .push(format!("  step {index}: resource refused"));
                continue;
            };
            let key = resource.key();
            clock.stamp(&mut value, objects.get(&key));
            objects.insert(key, value);
        }
        for object in &step.delete {
            let key = ObjectKey::new(
                &object.kind,
                object.namespace.as_deref().unwrap_or(""),
                &object.name,
            );
            objects.remove(&key);
        }
        let label = format!("step {index} ({}): ", step.description);
        judge_state(
            &mut report,
            exchanges,
            cluster,
            &objects,
            &step.conditions,
            &step.status_checks,
            &step.requests,
            &label,
        );
    }
    report
}

/// The Services a file's exchanges expect to reach other Services' pods through
/// (`backend` and `backendPods`), which the test fills with those pods.
fn backed_by_pods(file: &VectorFile) -> BTreeMap<String, String> {
    let steps = file.steps.iter().flat_map(|step| &step.requests);
    file.requests
        .iter()
        .chain(steps)
        .filter_map(|exchange| {
            let expect = &exchange.expect;
            let service = expect.backend.clone()??;
            Some((service, expect.backend_pods.clone()?))
        })
        .collect()
}

#[allow(
    clippy::too_many_arguments,
    reason = "one state's inputs, passed as they are"
)]
fn judge_state(
    report: &mut FileReport,
    exchanges: &mut dyn ExchangeJudge,
    cluster: &mut dyn Cluster,
    objects: &BTreeMap<ObjectKey, Value>,
    conditions: &[ConditionCheck],
    status_checks: &[StatusCheck],
    requests: &[Exchange],
    label: &str,
) {
    let resources: Vec<Resource> = objects
        .values()
        .filter_map(|v| Resource::from_value(v.clone()).ok())
        .collect();
    let addresses = LoopbackAddresses::new(&resources);
    let owners = EndpointOwners::from_resources(&resources);
    let options = Options {
        controller_name: CONTROLLER_NAME.to_owned(),
        privileged_namespace_prefixes: Vec::new(),
        addresses: Box::new(addresses),
        claims: Box::new(culvert_control_lite::translate::NoClaimChecks),
    };
    let (store, translation) = match cluster.settle(objects.values().cloned().collect(), options) {
        Ok(settled) => settled,
        Err(why) => {
            report
                .details
                .push(format!("  FAIL {label}state did not settle: {why}"));
            report.tally.failed += conditions.len() + status_checks.len() + requests.len();
            return;
        }
    };
    for problem in exchanges.converge(&store, &translation, &owners) {
        report.details.push(format!("  {label}{problem}"));
    }
    let mut record = |what: String, verdict: Verdict| match verdict {
        Verdict::Pass => report.tally.passed += 1,
        Verdict::Fail(why) => {
            report.tally.failed += 1;
            report.details.push(format!("  FAIL {label}{what}: {why}"));
        }
        Verdict::Skip(why) => {
            report.tally.skipped += 1;
            report.details.push(format!("  skip {label}{what}: {why}"));
        }
    };
    for check in conditions {
        let target = check
            .listener
            .as_ref()
            .map(|l| format!(" listener {l}"))
            .unwrap_or_default();
        let what = format!(
            "condition {} {}/{}{target} {}={}",
            check.kind,
            check.namespace.as_deref().unwrap_or(""),
            check.name,
            check.condition_type,
            check.status.as_deref().unwrap_or("*")
        );
        record(what, checks::condition(&store, &translation, check));
    }
    for check in status_checks {
        let what = format!(
            "status {} {}/{} {}",
            check.kind,
            check.namespace.as_deref().unwrap_or(""),
            check.name,
            check.check
        );
        record(what, checks::status(&store, &translation, check));
    }
    for exchange in requests {
        record(
            format!("request {:?}", exchange.name),
            exchanges.judge(exchange),
        );
    }
}

/// Runs every vector file in `dir` with the static replay and renders the report.
/// Returns the text and the totals.
pub fn run_dir(dir: &Path) -> Result<(String, Tally), String> {
    run_dir_with(dir, &mut || Box::new(StaticJudge::default()))
}

/// Runs every vector file in `dir`, each with a fresh judge from `new_judge`, and
/// renders the report. Returns the text and the totals.
pub fn run_dir_with(
    dir: &Path,
    new_judge: &mut dyn FnMut() -> Box<dyn ExchangeJudge>,
) -> Result<(String, Tally), String> {
    run_dir_in(dir, new_judge, &mut Direct)
}

/// Runs every vector file in `dir`, its states settled in `cluster`, each file
/// with a fresh judge from `new_judge`, and renders the report.
pub fn run_dir_in(
    dir: &Path,
    new_judge: &mut dyn FnMut() -> Box<dyn ExchangeJudge>,
    cluster: &mut dyn Cluster,
) -> Result<(String, Tally), String> {
    let paths = vector_paths(dir).map_err(|e| e.to_string())?;
    let mut out = String::new();
    let mut total = Tally::default();
    let mut skipped_features: BTreeMap<String, usize> = BTreeMap::new();
    for path in paths {
        let file = match load_vector(&path) {
            Ok(file) => file,
            Err(error) => {
                let _ = writeln!(
                    out,
                    "FAIL {} 0/1\n  FAIL cannot read: {error}",
                    path.display()
                );
                total.failed += 1;
                continue;
            }
        };
        let report = run_file_in(&file, new_judge().as_mut(), cluster);
        if let Some(why) = &report.skipped {
            *skipped_features.entry(why.clone()).or_default() += 1;
        }
        let judged = report.tally.passed + report.tally.failed;
        let _ = writeln!(
            out,
            "{} {} {}/{}",
            report.outcome(),
            report.name,
            report.tally.passed,
            judged
        );
        if let Some(why) = &report.skipped {
            let _ = writeln!(out, "  {why}");
        }
        for line in &report.details {
            let _ = writeln!(out, "{line}");
        }
        total.add(report.tally);
    }
    let _ = writeln!(out, "Features not claimed (files skipped):");
    for (why, files) in &skipped_features {
        let _ = writeln!(out, "  {why}: {files} file(s)");
    }
    let _ = writeln!(
        out,
        "{} passed, {} failed, {} skipped",
        total.passed, total.failed, total.skipped
    );
    Ok((out, total))
}
