//! `culvert-conformance --live` on the shipped vectors: every request over real
//! sockets through a real data plane per file to echo backends on loopback. Binds
//! 127.0.N.1 at the vectors' ports, privileged ones moved above 1024 (80 to
//! 20080), so it runs as any user: one test runs the binary as `nobody` to show it,
//! from a world-readable copy so the checkout's own permissions (a private clone
//! directory, mode 0700) do not decide the result.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Both tests bind the same Gateway addresses and ports: one at a time.
static ADDRESSES: Mutex<()> = Mutex::new(());

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

/// The effective user id of this process, from `/proc/self/status`.
fn effective_uid() -> u32 {
    let status = fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|euid| euid.parse().ok())
        .expect("an effective uid")
}

/// Copies `from` (a file or a directory tree) to `to`, every directory mode 0755 and
/// every file 0755 (the binary) or 0644, so any user can read what is copied.
fn copy_readable(from: &Path, to: &Path) {
    if from.is_dir() {
        fs::create_dir_all(to).expect("a directory in the copy");
        fs::set_permissions(to, fs::Permissions::from_mode(0o755)).expect("chmod 0755");
        for entry in fs::read_dir(from).expect("a readable directory") {
            let entry = entry.expect("a directory entry");
            copy_readable(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        fs::copy(from, to).expect("a copied file");
        let executable = fs::metadata(from).expect("metadata").permissions().mode() & 0o111 != 0;
        let mode = if executable { 0o755 } else { 0o644 };
        fs::set_permissions(to, fs::Permissions::from_mode(mode)).expect("chmod");
    }
}

/// A fresh world-readable directory under the system's temporary directory, removed
/// on drop.
struct ReadableCopy(PathBuf);

impl ReadableCopy {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "culvert-conformance-unprivileged-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).expect("a temporary directory");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod 0755");
        Self(dir)
    }
}

impl Drop for ReadableCopy {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_live_run_needs_no_privileges() {
    let _addresses = ADDRESSES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // The unprivileged user may not be able to enter the checkout or its target
    // directory: it runs a copy of the binary on a copy of the vectors.
    let copy = ReadableCopy::new();
    let binary = copy.0.join("culvert-conformance");
    let vectors_copy = copy.0.join("vectors");
    copy_readable(
        Path::new(env!("CARGO_BIN_EXE_culvert-conformance")),
        &binary,
    );
    copy_readable(&vectors(), &vectors_copy);
    let mut command = if effective_uid() == 0 {
        // As root, drop to `nobody` (no capabilities, no groups) for the run.
        let mut setpriv = Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        setpriv.arg(&binary);
        setpriv
    } else {
        Command::new(&binary)
    };
    let output = command
        .arg("--live")
        .arg(&vectors_copy)
        .current_dir(&copy.0)
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
