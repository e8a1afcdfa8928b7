//! Compiled match conditions other than the path: method, headers, query
//! parameters, and "is a gRPC call". Checked only after the path already matched.

use crate::regex::FullMatch;
use http::{HeaderMap, HeaderName, Method};

/// Everything but the path that one match requires.
#[derive(Debug, Clone, Default)]
pub(crate) struct Conditions {
    pub(crate) method: Option<Method>,
    pub(crate) headers: Vec<(HeaderName, ValueMatch)>,
    pub(crate) query: Vec<(Box<str>, ValueMatch)>,
    /// The request must carry `content-type: application/grpc...` (gRPC routes).
    pub(crate) grpc: bool,
}

/// How a header or query value is compared.
#[derive(Debug, Clone)]
pub(crate) enum ValueMatch {
    Exact(Box<[u8]>),
    Regex(FullMatch),
}

impl ValueMatch {
    fn matches(&self, value: &[u8]) -> bool {
        match self {
            Self::Exact(expected) => **expected == *value,
            Self::Regex(regex) => regex.is_match(value),
        }
    }
}

impl Conditions {
    pub(crate) fn is_empty(&self) -> bool {
        self.method.is_none() && self.headers.is_empty() && self.query.is_empty() && !self.grpc
    }

    pub(crate) fn matches(&self, method: &str, headers: &HeaderMap, query: Option<&str>) -> bool {
        if let Some(expected) = &self.method {
            if expected.as_str() != method {
                return false;
            }
        }
        if self.grpc && !is_grpc(headers) {
            return false;
        }
        self.headers
            .iter()
            .all(|(name, expected)| header_matches(headers, name, expected))
            && self.query.iter().all(|(name, expected)| {
                query_value(query, name).is_some_and(|value| expected.matches(value.as_bytes()))
            })
    }
}

/// A header's value for matching: its only value, or all of its values joined with
/// `,` in arrival order when it was sent more than once (as RFC 9110 §5.3 allows).
fn header_matches(headers: &HeaderMap, name: &HeaderName, expected: &ValueMatch) -> bool {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return false;
    };
    let Some(second) = values.next() else {
        return expected.matches(first.as_bytes());
    };
    let mut joined = first.as_bytes().to_vec();
    for value in std::iter::once(second).chain(values) {
        joined.push(b',');
        joined.extend_from_slice(value.as_bytes());
    }
    expected.matches(&joined)
}

/// The raw value of the first query parameter named exactly `name`; a parameter
/// without `=` has the empty value.
pub(crate) fn query_value<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then_some(value)
    })
}

fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| {
            let value = value.as_bytes();
            value.len() >= 16 && value[..16].eq_ignore_ascii_case(b"application/grpc")
        })
}
