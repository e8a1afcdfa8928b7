//! `culvert-conformance --live` on the shipped vectors: every request over real
//! sockets through a real data plane per file to echo backends on loopback. Binds
//! 127.0.N.1 at the vectors' ports, privileged ones moved above 1024 (80 to
//! 20080), so it runs as any user: one test runs the binary as `nobody` to show it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Both tests bind the same Gateway addresses and ports: one at a time.
static ADDRESSES: Mutex<()> = Mutex::new(());

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/vectors")
}

/// The effective user id of this process, from `/proc/self/status`.
fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|euid| euid.parse().ok())
        .expect("an effective uid")
}

#[test]
fn the_live_run_needs_no_privileges() {
    let _addresses = ADDRESSES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let binary = env!("CARGO_BIN_EXE_culvert-conformance");
    let mut command = if effective_uid() == 0 {
        // As root, drop to `nobody` (no capabilities, no groups) for the run.
        let mut setpriv = Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", binary]);
        setpriv
    } else {
        Command::new(binary)
    };
    let output = command
        .arg("--live")
        .arg(vectors())
        .output()
        .expect("runs culvert-conformance (and setpriv, from util-linux, as root)");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = report.trim_end().lines().last().unwrap_or_default();
    assert!(last.contains(" passed, 0 failed, "), "{last}");
}

#[test]
fn every_live_check_passes() {
    let _addresses = ADDRESSES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (report, tally) =
        culvert_conformance::live::run_dir_live(&vectors()).unwrap_or_else(|why| panic!("{why}"));
    assert_eq!(tally.failed, 0, "{report}");
    // The static replay judges about 670 checks; live adds timeouts, retries,
    // mirrors, WebSocket, protocols, gRPC calls, TLSRoute streams and client
    // certificates, TLS to backends (798 in all when this was written). A sudden drop means files
    // stopped running.
    assert!(
        tally.passed >= 795,
        "only {} passed\n{report}",
        tally.passed
    );
    assert!(report.trim_end().ends_with(&format!(
        "{} passed, 0 failed, {} skipped",
        tally.passed, tally.skipped
    )));
}
