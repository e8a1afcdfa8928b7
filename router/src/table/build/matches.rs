//! Compiling one match of a rule: its path key, its precedence among the other
//! candidates of that key, and its remaining conditions.

use super::Builder;
use crate::config::{
    GrpcMatchConfig, HeaderMatchConfig, HttpMatchConfig, PathMatchType, QueryParamMatchConfig,
    StringMatchType,
};
use crate::error::{Error, Origin};
use crate::path::normalize_config_path;
use crate::table::RouteId;
use crate::table::conditions::{Conditions, ValueMatch};
use http::{HeaderName, Method};
use std::cmp::Reverse;

/// Where a candidate's path is indexed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum PathKey {
    Exact(String),
    /// Normalized, trailing slash removed (`/` stays `/`).
    Prefix(String),
    Regex(String),
}

/// Sort key of a candidate within its path key: Gateway API precedence after the
/// path. Lower sorts first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Precedence {
    no_method: bool,
    headers: Reverse<usize>,
    query: Reverse<usize>,
    /// Rank of the route by (creation time, namespace, name).
    route_rank: u32,
    rule_index: u32,
    pub(super) match_index: u16,
}

/// One compiled match of a rule, before it is copied to each host it serves.
pub(super) struct CompiledMatch {
    pub(super) key: PathKey,
    pub(super) precedence: Precedence,
    pub(super) conditions: Option<Conditions>,
}

impl Builder<'_> {
    fn precedence(
        &self,
        route: RouteId,
        rule_index: usize,
        match_index: usize,
        conditions: &Conditions,
        at: &Origin,
    ) -> Result<Precedence, Error> {
        Ok(Precedence {
            no_method: conditions.method.is_none(),
            headers: Reverse(conditions.headers.len()),
            query: Reverse(conditions.query.len()),
            route_rank: self.ranks[route.0 as usize],
            rule_index: u32::try_from(rule_index).map_err(|_| at.error("too many rules"))?,
            match_index: u16::try_from(match_index).map_err(|_| at.error("too many matches"))?,
        })
    }

    pub(super) fn compile_http_match(
        &mut self,
        config: &HttpMatchConfig,
        route: RouteId,
        rule_index: usize,
        match_index: usize,
        at: &Origin,
    ) -> Result<CompiledMatch, Error> {
        let key = match &config.path {
            None => PathKey::Prefix("/".to_owned()),
            Some(path) => match path.kind {
                PathMatchType::Exact => {
                    PathKey::Exact(normalize_config_path(&path.value).map_err(|why| at.error(why))?)
                }
                PathMatchType::PathPrefix => {
                    let normal = normalize_config_path(&path.value).map_err(|why| at.error(why))?;
                    let trimmed = match normal.strip_suffix('/') {
                        Some(rest) if !rest.is_empty() => rest.to_owned(),
                        _ => normal,
                    };
                    PathKey::Prefix(trimmed)
                }
                PathMatchType::RegularExpression => {
                    check_syntax(&path.value, at)?;
                    PathKey::Regex(path.value.clone())
                }
            },
        };
        let mut conditions = Conditions {
            method: config
                .method
                .as_deref()
                .map(|m| {
                    Method::from_bytes(m.as_bytes())
                        .map_err(|_| at.error(format!("method {m:?} is not a token")))
                })
                .transpose()?,
            headers: self.header_conditions(&config.headers, at)?,
            query: Vec::new(),
            grpc: false,
        };
        conditions.query = self.query_conditions(&config.query_params, at)?;
        let precedence = self.precedence(route, rule_index, match_index, &conditions, at)?;
        Ok(CompiledMatch {
            key,
            precedence,
            conditions: (!conditions.is_empty()).then_some(conditions),
        })
    }

    pub(super) fn compile_grpc_match(
        &mut self,
        config: &GrpcMatchConfig,
        route: RouteId,
        rule_index: usize,
        match_index: usize,
        at: &Origin,
    ) -> Result<CompiledMatch, Error> {
        let key = match &config.method {
            None => PathKey::Prefix("/".to_owned()),
            Some(method) => {
                let service = method.service.as_deref();
                let name = method.method.as_deref();
                match method.kind {
                    StringMatchType::Exact => {
                        if let Some(service) = service {
                            check_grpc_name(service, true, at)?;
                        }
                        if let Some(name) = name {
                            check_grpc_name(name, false, at)?;
                        }
                        match (service, name) {
                            (Some(service), Some(name)) => {
                                PathKey::Exact(format!("/{service}/{name}"))
                            }
                            (Some(service), None) => PathKey::Prefix(format!("/{service}")),
                            // Method names are `[A-Za-z0-9_]`, so they need no escaping.
                            (None, Some(name)) => PathKey::Regex(format!("/[^/]+/{name}")),
                            (None, None) => {
                                return Err(
                                    at.error("gRPC method match needs a service or a method")
                                );
                            }
                        }
                    }
                    StringMatchType::RegularExpression => {
                        if service.is_none() && name.is_none() {
                            return Err(at.error("gRPC method match needs a service or a method"));
                        }
                        for part in [service, name].into_iter().flatten() {
                            check_syntax(part, at)?;
                        }
                        PathKey::Regex(format!(
                            "/(?:{})/(?:{})",
                            service.unwrap_or("[^/]+"),
                            name.unwrap_or("[^/]+")
                        ))
                    }
                }
            }
        };
        let conditions = Conditions {
            method: None,
            headers: self.header_conditions(&config.headers, at)?,
            query: Vec::new(),
            grpc: true,
        };
        let precedence = self.precedence(route, rule_index, match_index, &conditions, at)?;
        Ok(CompiledMatch {
            key,
            precedence,
            conditions: Some(conditions),
        })
    }

    /// Header conditions; of several with the same name only the first counts, as
    /// Gateway API specifies.
    fn header_conditions(
        &mut self,
        configs: &[HeaderMatchConfig],
        at: &Origin,
    ) -> Result<Vec<(HeaderName, ValueMatch)>, Error> {
        let mut out: Vec<(HeaderName, ValueMatch)> = Vec::with_capacity(configs.len());
        for config in configs {
            let name = HeaderName::from_bytes(config.name.as_bytes())
                .map_err(|_| at.error(format!("invalid header name {:?}", config.name)))?;
            if out.iter().any(|(seen, _)| *seen == name) {
                continue;
            }
            let value = self.value_match(config.kind, &config.value, at)?;
            out.push((name, value));
        }
        Ok(out)
    }

    /// Query conditions; names are case-sensitive and only the first of a name counts.
    fn query_conditions(
        &mut self,
        configs: &[QueryParamMatchConfig],
        at: &Origin,
    ) -> Result<Vec<(Box<str>, ValueMatch)>, Error> {
        let mut out: Vec<(Box<str>, ValueMatch)> = Vec::with_capacity(configs.len());
        for config in configs {
            if config.name.is_empty() || config.name.contains(['&', '=', '#']) {
                return Err(at.error(format!("invalid query parameter name {:?}", config.name)));
            }
            if out.iter().any(|(seen, _)| **seen == *config.name) {
                continue;
            }
            let value = self.value_match(config.kind, &config.value, at)?;
            out.push((config.name.as_str().into(), value));
        }
        Ok(out)
    }

    fn value_match(
        &mut self,
        kind: StringMatchType,
        value: &str,
        at: &Origin,
    ) -> Result<ValueMatch, Error> {
        Ok(match kind {
            StringMatchType::Exact => ValueMatch::Exact(value.as_bytes().into()),
            StringMatchType::RegularExpression => {
                // Parsed alone first: a pattern like `x)|(?:y` must not escape the
                // whole-value wrapper it is compiled in.
                check_syntax(value, at)?;
                ValueMatch::Regex(self.regex.compile(&[value.to_owned()]).map_err(|reason| {
                    Error::Regex {
                        at: Box::new(at.clone()),
                        pattern: value.to_owned(),
                        reason,
                    }
                })?)
            }
        })
    }
}

fn check_syntax(pattern: &str, at: &Origin) -> Result<(), Error> {
    regex_automata::util::syntax::parse(pattern)
        .map(|_| ())
        .map_err(|error| Error::Regex {
            at: Box::new(at.clone()),
            pattern: pattern.to_owned(),
            reason: error.to_string(),
        })
}

/// gRPC service names are dotted identifiers; method names are identifiers.
fn check_grpc_name(name: &str, dotted: bool, at: &Origin) -> Result<(), Error> {
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || (dotted && b == b'.'));
    if valid {
        Ok(())
    } else {
        Err(at.error(format!("gRPC name {name:?} is not a valid identifier")))
    }
}
