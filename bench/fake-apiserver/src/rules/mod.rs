//! Fault rules: which requests a rule selects ([`Matcher`] by what a request
//! addresses, [`Fault`] by method and path) and what it does to them. Plain data
//! and matching; the `faults` handle adds rules, the HTTP front end applies them.

use std::time::Duration;

use crate::error::Status;

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
/// path-based form of [`Faults::fail`](crate::Faults::fail)).
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

#[cfg(test)]
mod tests;
