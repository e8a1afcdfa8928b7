//! The router's one error type: everything that makes a config refuse to compile.

use std::fmt;

/// Why a `DataPlaneConfig` cannot be compiled into a `RouteTable`.
///
/// Every variant names the object at fault so an operator can find it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A listener is malformed or clashes with another.
    #[error("listener {listener:?}: {reason}")]
    Listener {
        /// Name of the listener.
        listener: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A route, rule, match, filter or backend is malformed.
    #[error("{at}: {reason}")]
    Route {
        /// Where in the config.
        at: Box<Origin>,
        /// What is wrong.
        reason: String,
    },
    /// A regular expression is malformed or exceeds the size limits.
    #[error("{at}: regular expression {pattern:?} refused: {reason}")]
    Regex {
        /// Where in the config.
        at: Box<Origin>,
        /// The pattern as written.
        pattern: String,
        /// Why it was refused.
        reason: String,
    },
    /// A configured hostname is not an RFC 1123 name or a `*.` wildcard of one
    /// ([`HostPattern::parse`](crate::host::HostPattern::parse)).
    #[error("hostname {text:?} {problem}")]
    Hostname {
        /// The hostname as written.
        text: String,
        /// What is wrong with it.
        problem: HostnameProblem,
    },
}

/// What is wrong with a configured hostname.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostnameProblem {
    /// No name at all.
    Empty,
    /// Longer than 253 characters.
    TooLong,
    /// Two dots in a row, or a dot at either end.
    EmptyLabel,
    /// A label longer than 63 characters.
    LabelTooLong,
    /// A character other than a letter, a digit, `-` or `.`.
    Character,
    /// A label that starts or ends with `-`.
    Hyphen,
    /// An IPv4 address, which is not a hostname.
    IpAddress,
}

impl fmt::Display for HostnameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "is empty",
            Self::TooLong => "is longer than 253 characters",
            Self::EmptyLabel => "has an empty label",
            Self::LabelTooLong => "has a label longer than 63 characters",
            Self::Character => {
                "may hold only letters, digits, '-' and '.' (write IDNs in punycode)"
            }
            Self::Hyphen => "has a label that starts or ends with '-'",
            Self::IpAddress => "is an IP address, not a hostname",
        })
    }
}

/// The place in a config an error refers to: route kind, namespace/name, and
/// optionally the rule and match index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `HTTPRoute`, `GRPCRoute` or `TLSRoute`.
    pub kind: &'static str,
    /// Namespace of the route.
    pub namespace: String,
    /// Name of the route.
    pub name: String,
    /// Index of the rule within the route.
    pub rule: Option<usize>,
    /// Index of the match within the rule.
    pub matched: Option<usize>,
}

impl Origin {
    pub(crate) fn route(kind: &'static str, namespace: &str, name: &str) -> Self {
        Self {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            rule: None,
            matched: None,
        }
    }

    pub(crate) fn with_rule(&self, rule: usize) -> Self {
        Self {
            rule: Some(rule),
            ..self.clone()
        }
    }

    pub(crate) fn with_match(&self, matched: usize) -> Self {
        Self {
            matched: Some(matched),
            ..self.clone()
        }
    }

    pub(crate) fn error(&self, reason: impl Into<String>) -> Error {
        Error::Route {
            at: Box::new(self.clone()),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)?;
        if let Some(rule) = self.rule {
            write!(f, " rule {rule}")?;
        }
        if let Some(matched) = self.matched {
            write!(f, " match {matched}")?;
        }
        Ok(())
    }
}
