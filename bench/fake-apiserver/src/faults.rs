//! Fault injection: what a real API server or network can do to a client, on
//! demand. [`Faults`] moves the compaction floor, ends, resets or stalls watch
//! streams, sends bookmarks, delays or fails matching requests, and makes a
//! concurrent writer bump an object between a client's read and its write. The
//! rules it adds (`rules`) match requests through a [`Matcher`]. The HTTP front end
//! consults the rules; this module never touches sockets.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::error::Status;
use crate::rules::{Action, Fault, Matcher, Rule, Selects, reason_of};
use crate::state::{Inner, Signal};

/// The fault-injection handle of a [`crate::FakeApiServer`]; cheap to clone.
#[derive(Clone)]
pub struct Faults {
    pub(crate) inner: Arc<Inner>,
}

impl Faults {
    fn push(&self, rule: Rule) {
        self.inner
            .rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(rule);
    }

    /// Compacts history below `to_revision`: lists `Exact` at an older revision,
    /// older `continue` tokens and watches from older revisions get 410 Expired
    /// (watches in the stream, as the real server reports it).
    pub fn compact(&self, to_revision: u64) {
        self.inner.store().compact(to_revision);
        // Open watches behind the floor must notice.
        self.inner.notify();
    }

    /// Compacts all history up to the current revision.
    pub fn compact_all(&self) {
        let revision = self.inner.store().revision;
        self.compact(revision);
    }

    /// Ends every open watch cleanly, as the server does at `timeoutSeconds`.
    pub fn end_watches(&self) {
        self.end_watches_matching(Matcher::any());
    }

    /// Ends the open watches `matcher` selects (by resource and namespace).
    pub fn end_watches_matching(&self, matcher: Matcher) {
        let _ = self.inner.signals.send(Signal::End(matcher));
    }

    /// Aborts every open watch mid-stream (the chunked body is cut, as by a reset
    /// connection); kube-rs sees an unexpected EOF and resumes.
    pub fn reset_watches(&self) {
        self.reset_watches_matching(Matcher::any());
    }

    /// Aborts the open watches `matcher` selects.
    pub fn reset_watches_matching(&self, matcher: Matcher) {
        let _ = self.inner.signals.send(Signal::Reset(matcher));
    }

    /// While `true`, open watches send nothing (no events, no bookmarks) but stay
    /// open; when `false` again they catch up.
    pub fn stall_watches(&self, stalled: bool) {
        self.inner.stalled.send_replace(stalled);
    }

    /// Sends a BOOKMARK at the current revision on every open watch that asked for
    /// bookmarks.
    pub fn bookmark_now(&self) {
        let _ = self.inner.signals.send(Signal::Bookmark);
    }

    /// Sends bookmarks on this interval on watches that asked for them (`None`, the
    /// default, sends them only on [`Faults::bookmark_now`]). Applies to watches
    /// opened afterwards.
    pub fn set_bookmark_interval(&self, interval: Option<Duration>) {
        self.inner.bookmark_interval.send_replace(interval);
    }

    /// Delays every matching request by `delay` before it is answered.
    pub fn delay(&self, matcher: Matcher, delay: Duration) {
        self.push(Rule {
            selects: Selects::Facts(matcher),
            action: Action::Delay(delay),
            remaining: None,
        });
    }

    /// Never answers matching requests (a client timeout is the only way out).
    pub fn hang(&self, matcher: Matcher) {
        self.delay(matcher, Duration::from_secs(86_400 * 365));
    }

    /// Answers the next `times` matching requests with `code` and `reason` instead
    /// of serving them. A 409 carries the optimistic-lock message of the addressed
    /// object; a 429 carries `Retry-After: 1`.
    pub fn fail(&self, matcher: Matcher, code: u16, reason: &str, times: usize) {
        let mut status = Status::new(code, reason, format!("injected fault: {reason}"));
        if code == 429 {
            status.retry_after = Some(1);
            status.message = "Too many requests, please try again later.".to_owned();
        }
        self.fail_with(matcher, status, times);
    }

    /// Answers the next `times` matching requests with `status`.
    pub fn fail_with(&self, matcher: Matcher, status: Status, times: usize) {
        self.push(Rule {
            selects: Selects::Facts(matcher),
            action: Action::Fail(status),
            remaining: Some(times),
        });
    }

    /// The older, path-based form of [`Faults::fail`].
    pub fn inject(&self, fault: Fault) {
        let code = fault.code;
        let mut status = Status::new(code, reason_of(code), "injected fault");
        if code == 429 {
            status.retry_after = Some(1);
        }
        let times = fault.times;
        self.push(Rule {
            selects: Selects::Path(fault),
            action: Action::Fail(status),
            remaining: Some(times),
        });
    }

    /// Before each of the next `times` matching writes (update or patch of one
    /// object), another writer changes that object, so a client that read it
    /// earlier gets a genuine 409 Conflict.
    pub fn concurrent_write(&self, matcher: Matcher, times: usize) {
        self.push(Rule {
            selects: Selects::Facts(matcher),
            action: Action::ConcurrentWrite,
            remaining: Some(times),
        });
    }

    /// Removes every delay, failure and concurrent-writer rule, and un-stalls
    /// watches.
    pub fn clear(&self) {
        self.inner
            .rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.stall_watches(false);
    }
}
