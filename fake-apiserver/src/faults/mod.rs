//! Fault injection: what a real API server or network can do to a client, on
//! demand. [`Faults`] moves the compaction floor, ends, resets or stalls watch
//! streams, sends bookmarks, delays or fails matching requests, and makes a
//! concurrent writer bump an object between a client's read and its write. Rules
//! match requests through a [`Matcher`]. The HTTP front end consults the rules; this
//! module never touches sockets.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::Status;
use crate::state::{Inner, Signal};

/// The API verb of a request, as RBAC names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verb {
    /// `GET` of one object.
    Get,
    /// `GET` of a collection.
    List,
    /// `GET` of a collection with `watch=true`.
    Watch,
    /// `POST`.
    Create,
    /// `PUT`.
    Update,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

/// What a request addresses, for matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestFacts {
    /// Verb.
    pub(crate) verb: Verb,
    /// Plural resource.
    pub(crate) resource: String,
    /// Kind.
    pub(crate) kind: String,
    /// Namespace in the path.
    pub(crate) namespace: Option<String>,
    /// Object name in the path.
    pub(crate) name: Option<String>,
    /// Subresource (`status`).
    pub(crate) subresource: Option<String>,
}

/// Which requests a rule applies to: every field left `None` matches anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matcher {
    /// Only this verb.
    pub verb: Option<Verb>,
    /// Only this resource, by plural (`httproutes`) or kind (`HTTPRoute`).
    pub resource: Option<String>,
    /// Only this namespace.
    pub namespace: Option<String>,
    /// Only this object name.
    pub name: Option<String>,
    /// Only this subresource (`status`); `Some("")` means the main resource only.
    pub subresource: Option<String>,
}

impl Matcher {
    /// Matches every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Only requests with `verb`.
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = Some(verb);
        self
    }

    /// Only requests for `resource` (plural or kind).
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_owned());
        self
    }

    /// Only requests in `namespace`.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Only requests for the object `name`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Only requests for `subresource` (`"status"`, or `""` for the main resource).
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = Some(subresource.to_owned());
        self
    }

    pub(crate) fn matches(&self, facts: &RequestFacts) -> bool {
        self.verb.is_none_or(|v| v == facts.verb)
            && self
                .resource
                .as_deref()
                .is_none_or(|r| r == facts.resource || r == facts.kind)
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| Some(n) == facts.namespace.as_deref())
            && self
                .name
                .as_deref()
                .is_none_or(|n| Some(n) == facts.name.as_deref())
            && self
                .subresource
                .as_deref()
                .is_none_or(|s| s == facts.subresource.as_deref().unwrap_or(""))
    }
}

/// A failure to inject into requests matched by method and path (the older,
/// path-based form of [`Faults::fail`]).
#[derive(Debug, Clone)]
pub struct Fault {
    /// Only this method (`GET`, `PATCH`, ...), or any.
    pub method: Option<String>,
    /// Only paths containing this, or any.
    pub path_contains: Option<String>,
    /// Only watches (`true`), only non-watches (`false`), or both.
    pub watch: Option<bool>,
    /// The status code answered (a `Status` body with a matching reason).
    pub code: u16,
    /// How many matching requests fail.
    pub times: usize,
}

/// How a rule picks requests.
#[derive(Debug, Clone)]
pub(crate) enum Selects {
    /// By what the request addresses.
    Facts(Matcher),
    /// By method and path ([`Fault`]).
    Path(Fault),
}

/// What a rule does to a matching request.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Answer this failure instead.
    Fail(Status),
    /// Wait this long first.
    Delay(Duration),
    /// Bump the addressed object's `resourceVersion` first.
    ConcurrentWrite,
}

/// One injected rule.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// Which requests.
    pub(crate) selects: Selects,
    /// What happens to them.
    pub(crate) action: Action,
    /// Uses left (`None`: forever).
    pub(crate) remaining: Option<usize>,
}

impl Rule {
    pub(crate) fn matches(
        &self,
        facts: Option<&RequestFacts>,
        method: &str,
        path: &str,
        watching: bool,
    ) -> bool {
        if self.remaining == Some(0) {
            return false;
        }
        match &self.selects {
            Selects::Facts(matcher) => facts.is_some_and(|f| matcher.matches(f)),
            Selects::Path(fault) => {
                fault.method.as_deref().is_none_or(|m| m == method)
                    && fault
                        .path_contains
                        .as_deref()
                        .is_none_or(|p| path.contains(p))
                    && fault.watch.is_none_or(|w| w == watching)
            }
        }
    }
}

/// The reason a real server gives with `code`.
pub(crate) fn reason_of(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

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

#[cfg(test)]
mod tests;
