//! A deliberately simple reference router, written straight from the Gateway API
//! text: collect every (route, rule, match) that applies, sort by the spec's
//! precedence, take the first. No indexes, no tries, no automata beyond a plain
//! `meta::Regex` per pattern. The compiled table must agree with it.

use culvert_router::config::{DataPlaneConfig, HttpRouteConfig, PathMatchType, StringMatchType};
use regex_automata::meta::Regex;
use std::cmp::Reverse;

/// A request as the model sees it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) host: String,
    pub(crate) path: String,
    pub(crate) query: Option<String>,
    pub(crate) method: String,
    pub(crate) headers: Vec<(String, String)>,
}

/// `name#rule.match`, `NoListener` or `NoRoute`, like the table tests print.
pub(crate) fn route(config: &DataPlaneConfig, request: &Request) -> String {
    let host = normalize_host(&request.host);
    let listeners: Vec<_> = config.listeners.iter().filter(|l| l.port == 80).collect();
    let Some(listener) = listeners
        .iter()
        .filter(|l| host_matches(l.hostname.as_deref(), &host))
        .max_by_key(|l| specificity(l.hostname.as_deref()))
    else {
        return "NoListener".to_owned();
    };
    // Effective hostnames of each attached route on this listener, keeping those that
    // match the request; only the most specific hostname's routes take part.
    let mut attached: Vec<(&HttpRouteConfig, Option<String>)> = Vec::new();
    for route in &config.http_routes {
        if !route.listeners.contains(&listener.name) {
            continue;
        }
        for effective in effective_hosts(listener.hostname.as_deref(), &route.hostnames) {
            if host_matches(effective.as_deref(), &host) {
                attached.push((route, effective));
            }
        }
    }
    let Some(best) = attached
        .iter()
        .map(|(_, h)| specificity(h.as_deref()))
        .max()
    else {
        return "NoRoute".to_owned();
    };
    let mut winners = Vec::new();
    for (route, effective) in &attached {
        if specificity(effective.as_deref()) != best {
            continue;
        }
        for (rule_index, rule) in route.rules.iter().enumerate() {
            let default = [Default::default()];
            let matches = if rule.matches.is_empty() {
                &default[..]
            } else {
                &rule.matches[..]
            };
            for (match_index, m) in matches.iter().enumerate() {
                let (kind, value) = m
                    .path
                    .as_ref()
                    .map_or((PathMatchType::PathPrefix, "/".to_owned()), |p| {
                        (p.kind, p.value.clone())
                    });
                if !path_matches(kind, &value, &request.path)
                    || m.method
                        .as_ref()
                        .is_some_and(|method| *method != request.method)
                {
                    continue;
                }
                let headers = first_by(&m.headers, |h| h.name.to_ascii_lowercase());
                let query = first_by(&m.query_params, |q| q.name.clone());
                let headers_ok = headers.iter().all(|h| {
                    header_value(&request.headers, &h.name)
                        .is_some_and(|v| value_matches(h.kind, &h.value, &v))
                });
                let query_ok = query.iter().all(|q| {
                    query_value(request.query.as_deref(), &q.name)
                        .is_some_and(|v| value_matches(q.kind, &q.value, v))
                });
                if !headers_ok || !query_ok {
                    continue;
                }
                let (class, length) = match kind {
                    PathMatchType::Exact => (0, 0),
                    PathMatchType::PathPrefix => (1, value.trim_end_matches('/').len()),
                    PathMatchType::RegularExpression => (2, 0),
                };
                let created = route
                    .creation_timestamp
                    .clone()
                    .unwrap_or_else(|| "9999".to_owned());
                let key = (
                    class,
                    Reverse(length),
                    m.method.is_none(),
                    Reverse(headers.len()),
                    Reverse(query.len()),
                    created,
                    route.namespace.clone(),
                    route.name.clone(),
                    rule_index,
                    match_index,
                );
                winners.push((key, format!("{}#{rule_index}.{match_index}", route.name)));
            }
        }
    }
    winners.sort();
    winners
        .into_iter()
        .next()
        .map_or_else(|| "NoRoute".to_owned(), |(_, name)| name)
}

fn first_by<T, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<&T> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for item in items {
        let k = key(item);
        if !seen.contains(&k) {
            seen.push(k);
            out.push(item);
        }
    }
    out
}

fn normalize_host(host: &str) -> String {
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Ranks hostnames: any < wildcards by suffix length < exact names.
fn specificity(pattern: Option<&str>) -> (u8, usize) {
    match pattern {
        None => (0, 0),
        Some(p) if p.starts_with("*.") => (1, p.len()),
        Some(p) => (2, p.len()),
    }
}

fn host_matches(pattern: Option<&str>, host: &str) -> bool {
    match pattern.map(str::to_ascii_lowercase) {
        None => true,
        Some(p) => match p.strip_prefix('*') {
            Some(suffix) => host.ends_with(suffix) && host.len() > suffix.len(),
            None => p == host,
        },
    }
}

fn effective_hosts(listener: Option<&str>, route: &[String]) -> Vec<Option<String>> {
    if route.is_empty() {
        return vec![listener.map(str::to_owned)];
    }
    let mut out = Vec::new();
    for host in route {
        let host = host.to_ascii_lowercase();
        let effective = match listener {
            None => Some(host),
            Some(l) if host_matches(Some(l), &host) || l == host => Some(host),
            Some(l) if host.starts_with("*.") && host_matches(Some(&host), l) => Some(l.to_owned()),
            Some(l) if host.starts_with("*.") && l.starts_with("*.") && l.ends_with(&host[1..]) => {
                Some(l.to_owned())
            }
            Some(_) => None,
        };
        if let Some(e) = effective {
            if !out.contains(&Some(e.clone())) {
                out.push(Some(e));
            }
        }
    }
    out
}

fn path_matches(kind: PathMatchType, value: &str, path: &str) -> bool {
    match kind {
        PathMatchType::Exact => value == path,
        PathMatchType::PathPrefix => {
            let prefix = value.trim_end_matches('/');
            prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/"))
        }
        PathMatchType::RegularExpression => whole_match(value, path),
    }
}

fn whole_match(pattern: &str, text: &str) -> bool {
    Regex::new(&format!(r"\A(?:{pattern})\z"))
        .expect("generated pattern compiles")
        .is_match(text)
}

fn value_matches(kind: StringMatchType, expected: &str, actual: &str) -> bool {
    match kind {
        StringMatchType::Exact => expected == actual,
        StringMatchType::RegularExpression => whole_match(expected, actual),
    }
}

fn header_value(headers: &[(String, String)], name: &str) -> Option<String> {
    let values: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

fn query_value<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then_some(v)
    })
}
