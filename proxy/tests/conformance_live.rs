//! `culvert conformance --live` on the shipped vectors: every request over real
//! sockets through a real data plane per file to echo backends on loopback. Binds
//! 127.0.N.1 at the vectors' ports (80, 443, 8080, ...).

use std::path::Path;

#[test]
fn every_live_check_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../control-lite/tests/conformance");
    let (report, tally) =
        culvert_proxy::live::run_dir_live(&dir).unwrap_or_else(|why| panic!("{why}"));
    assert_eq!(tally.failed, 0, "{report}");
    // The static replay judges about 670 checks; live adds timeouts, retries,
    // mirrors, WebSocket, protocols and gRPC calls (697 in all when this was
    // written). A sudden drop means files stopped running.
    assert!(
        tally.passed >= 690,
        "only {} passed\n{report}",
        tally.passed
    );
    assert!(report.trim_end().ends_with(&format!(
        "{} passed, 0 failed, {} skipped",
        tally.passed, tally.skipped
    )));
}
