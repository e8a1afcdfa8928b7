//! Panics made visible. A panic is a bug, never an answer to input; when one
//! happens anyway it must not pass silently: [`install_panic_hook`] turns every
//! panic into an `error` event (thread, source location, message) on the binary's
//! log and counts it for `culvert_panics_total`. A connection task that panics ends
//! that connection only (its runtime catches it); a worker whose own loop panics
//! stops, its listeners close with it, the other workers keep serving, and
//! `/healthz` answers 503 so a supervisor restarts the process.

use std::sync::atomic::{AtomicU64, Ordering};

/// Panics since the process started (any thread).
static PANICS: AtomicU64 = AtomicU64::new(0);

/// Replaces the process's panic hook with one that logs through `tracing` and
/// counts. Called once by the binary, after its log subscriber is installed.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        PANICS.fetch_add(1, Ordering::Relaxed);
        let thread = std::thread::current();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
            .unwrap_or("(not a string)");
        let location = info
            .location()
            .map(|at| format!("{}:{}", at.file(), at.line()))
            .unwrap_or_default();
        tracing::error!(
            thread = thread.name().unwrap_or("unnamed"),
            location,
            "panic: {message}"
        );
    }));
}

/// Panics counted by the hook so far.
pub(crate) fn count() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_on_any_thread_is_counted_once_the_hook_is_in() {
        super::install_panic_hook();
        let before = super::count();
        let joined = std::thread::spawn(|| panic!("on purpose")).join();
        assert!(joined.is_err());
        assert!(super::count() > before);
        // Other tests of this binary keep the default hook's output.
        let _ = std::panic::take_hook();
    }
}
