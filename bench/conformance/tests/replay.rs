//! The Gateway API conformance vectors shipped in `tests/conformance/`, replayed
//! statically through translation and the router: every applicable check must pass.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use culvert_conformance::run::run_dir;
use std::path::Path;

#[test]
fn every_applicable_conformance_check_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors");
    let (report, tally) = run_dir(&dir).unwrap();
    println!("{report}");
    assert_eq!(tally.failed, 0, "conformance failures:\n{report}");
    // Guard against a replay that passes by judging nothing: the shipped corpus has
    // 76 files and well over 600 applicable checks (740 when this was written).
    assert!(
        tally.passed >= 763,
        "only {} checks judged as passing",
        tally.passed
    );
    assert_eq!(
        report
            .lines()
            .filter(|l| l.starts_with("PASS ") || l.starts_with("SKIP "))
            .count(),
        76
    );
    assert!(report.trim_end().ends_with(&format!(
        "{} passed, 0 failed, {} skipped",
        tally.passed, tally.skipped
    )));
}
