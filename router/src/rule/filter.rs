//! Compiled filters: header edits, redirects, rewrites, mirrors and CORS, validated
//! once when the table is built so applying them cannot fail.

use super::Backend;
use super::backend::compile_backend;
use crate::config::{
    CorsConfig, HeaderModifierConfig, HttpFilterConfig, PathModifierConfig, RequestMirrorConfig,
    RequestRedirectConfig, UrlRewriteConfig,
};
use crate::error::{Error, Origin};
use crate::host::HostPattern;
use http::{HeaderName, HeaderValue};

/// The filters of one rule. Each kind appears at most once, except mirrors.
#[derive(Debug, Default)]
pub struct Filters {
    /// Request header edits.
    pub request_headers: Option<HeaderModifier>,
    /// Response header edits.
    pub response_headers: Option<HeaderModifier>,
    /// Answer with a redirect instead of forwarding.
    pub redirect: Option<Redirect>,
    /// Rewrite host and path before forwarding.
    pub rewrite: Option<Rewrite>,
    /// Copies of the request to send elsewhere.
    pub mirrors: Vec<Mirror>,
    /// CORS policy.
    pub cors: Option<Cors>,
}

impl Filters {
    pub(crate) const EMPTY: Self = Self {
        request_headers: None,
        response_headers: None,
        redirect: None,
        rewrite: None,
        mirrors: Vec::new(),
        cors: None,
    };

    /// Whether a redirect or rewrite uses `ReplacePrefixMatch`.
    pub(crate) fn replaces_prefix(&self) -> bool {
        let redirect = self.redirect.as_ref().and_then(|r| r.path.as_ref());
        let rewrite = self.rewrite.as_ref().and_then(|r| r.path.as_ref());
        [redirect, rewrite]
            .into_iter()
            .flatten()
            .any(|path| matches!(path, PathModifier::ReplacePrefixMatch(_)))
    }
}

/// Header edits, applied as set, then add, then remove. Names are validated and
/// lower-cased.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderModifier {
    /// Replace every value of the header with this one.
    pub set: Vec<(HeaderName, HeaderValue)>,
    /// Append this value to the header.
    pub add: Vec<(HeaderName, HeaderValue)>,
    /// Delete the header.
    pub remove: Vec<HeaderName>,
}

/// A redirect answered by the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// New scheme; `None` keeps the request's.
    pub scheme: Option<RedirectScheme>,
    /// New hostname; `None` keeps the request's.
    pub hostname: Option<Box<str>>,
    /// New path; `None` keeps the request's.
    pub path: Option<PathModifier>,
    /// New port; `None` derives it as Gateway API specifies.
    pub port: Option<u16>,
    /// 301, 302, 303, 307 or 308.
    pub status: u16,
}

/// Scheme of a redirect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectScheme {
    /// `http`, well-known port 80.
    Http,
    /// `https`, well-known port 443.
    Https,
}

impl RedirectScheme {
    /// The scheme as written in a URL.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }

    /// The scheme's well-known port.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }
}

/// A path change for redirects and rewrites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathModifier {
    /// Replace the whole path (the query is kept).
    ReplaceFullPath(Box<str>),
    /// Replace the part of the path the rule's `PathPrefix` matched.
    ReplacePrefixMatch(Box<str>),
}

/// A rewrite applied before forwarding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// New `Host`.
    pub hostname: Option<Box<str>>,
    /// New path.
    pub path: Option<PathModifier>,
}

/// A request mirror: a share of requests is copied to `backend`.
#[derive(Debug, Clone)]
pub struct Mirror {
    /// Where copies go.
    pub backend: Backend,
    /// Share mirrored: `numerator / denominator`.
    pub numerator: u32,
    /// Denominator of the share; never 0.
    pub denominator: u32,
}

impl Mirror {
    /// Whether this request is mirrored, from a caller-supplied uniform random number.
    pub fn sample(&self, random: u64) -> bool {
        let point = (u128::from(random) * u128::from(self.denominator)) >> 64;
        point < u128::from(self.numerator)
    }
}

/// A CORS policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cors {
    /// Allowed origins.
    pub allow_origins: Vec<OriginPattern>,
    /// Whether credentials are allowed.
    pub allow_credentials: bool,
    /// Allowed methods.
    pub allow_methods: AllowList,
    /// Allowed request headers.
    pub allow_headers: AllowList,
    /// Response headers exposed to scripts.
    pub expose_headers: AllowList,
    /// Seconds a preflight answer may be cached.
    pub max_age: u32,
}

/// An allowed origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPattern {
    /// `*`: every origin.
    Any,
    /// One origin, `scheme://host[:port]`, lower-cased.
    Exact(Box<str>),
    /// `scheme://*.suffix[:port]`: `prefix` is `scheme://`, `suffix` is `.suffix[:port]`.
    Wildcard {
        /// Everything before the `*`.
        prefix: Box<str>,
        /// Everything after the `*`.
        suffix: Box<str>,
    },
}

impl OriginPattern {
    /// Whether a request's `Origin` value is allowed.
    pub fn matches(&self, origin: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(exact) => exact.eq_ignore_ascii_case(origin),
            Self::Wildcard { prefix, suffix } => {
                let lower = origin.to_ascii_lowercase();
                lower.len() > prefix.len() + suffix.len()
                    && lower.starts_with(&**prefix)
                    && lower.ends_with(&**suffix)
                    && !lower[prefix.len()..lower.len() - suffix.len()].contains(['/', ':', '@'])
            }
        }
    }
}

/// A list of allowed values, or `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowList {
    /// `*`.
    Any,
    /// These values (possibly none).
    Only(Vec<Box<str>>),
}

/// Where a list of filters appears; each place allows different kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterScope {
    /// A rule of an HTTP route: every kind.
    HttpRule,
    /// A rule of a gRPC route: header modifiers and mirrors.
    GrpcRule,
    /// One backend: header modifiers.
    Backend,
}

/// Validates and compiles a filter list; `None` when it is empty.
pub(crate) fn compile_filters(
    configs: &[HttpFilterConfig],
    scope: FilterScope,
    at: &Origin,
) -> Result<Option<Box<Filters>>, Error> {
    if configs.is_empty() {
        return Ok(None);
    }
    let mut filters = Filters::default();
    for config in configs {
        let kind = filter_kind(config);
        let allowed = match scope {
            FilterScope::HttpRule => true,
            FilterScope::GrpcRule => matches!(
                config,
                HttpFilterConfig::RequestHeaderModifier { .. }
                    | HttpFilterConfig::ResponseHeaderModifier { .. }
                    | HttpFilterConfig::RequestMirror { .. }
            ),
            FilterScope::Backend => matches!(
                config,
                HttpFilterConfig::RequestHeaderModifier { .. }
                    | HttpFilterConfig::ResponseHeaderModifier { .. }
            ),
        };
        if !allowed {
            return Err(at.error(format!("filter {kind} is not supported here")));
        }
        let duplicate = || at.error(format!("filter {kind} appears more than once"));
        match config {
            HttpFilterConfig::RequestHeaderModifier {
                request_header_modifier,
            } => {
                if filters.request_headers.is_some() {
                    return Err(duplicate());
                }
                filters.request_headers =
                    Some(compile_header_modifier(request_header_modifier, at)?);
            }
            HttpFilterConfig::ResponseHeaderModifier {
                response_header_modifier,
            } => {
                if filters.response_headers.is_some() {
                    return Err(duplicate());
                }
                filters.response_headers =
                    Some(compile_header_modifier(response_header_modifier, at)?);
            }
            HttpFilterConfig::RequestRedirect { request_redirect } => {
                if filters.redirect.is_some() {
                    return Err(duplicate());
                }
                filters.redirect = Some(compile_redirect(request_redirect, at)?);
            }
            HttpFilterConfig::UrlRewrite { url_rewrite } => {
                if filters.rewrite.is_some() {
                    return Err(duplicate());
                }
                filters.rewrite = Some(compile_rewrite(url_rewrite, at)?);
            }
            HttpFilterConfig::RequestMirror { request_mirror } => {
                filters.mirrors.push(compile_mirror(request_mirror, at)?);
            }
            HttpFilterConfig::Cors { cors } => {
                if filters.cors.is_some() {
                    return Err(duplicate());
                }
                filters.cors = Some(compile_cors(cors, at)?);
            }
        }
    }
    if filters.redirect.is_some() && filters.rewrite.is_some() {
        return Err(at.error("RequestRedirect and URLRewrite cannot be combined"));
    }
    Ok(Some(Box::new(filters)))
}

fn filter_kind(config: &HttpFilterConfig) -> &'static str {
    match config {
        HttpFilterConfig::RequestHeaderModifier { .. } => "RequestHeaderModifier",
        HttpFilterConfig::ResponseHeaderModifier { .. } => "ResponseHeaderModifier",
        HttpFilterConfig::RequestRedirect { .. } => "RequestRedirect",
        HttpFilterConfig::UrlRewrite { .. } => "URLRewrite",
        HttpFilterConfig::RequestMirror { .. } => "RequestMirror",
        HttpFilterConfig::Cors { .. } => "CORS",
    }
}

fn header_name(name: &str, at: &Origin) -> Result<HeaderName, Error> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| at.error(format!("invalid header name {name:?}")))
}

fn compile_header_modifier(
    config: &HeaderModifierConfig,
    at: &Origin,
) -> Result<HeaderModifier, Error> {
    let pairs = |list: &[crate::config::HeaderValueConfig],
                 what: &str|
     -> Result<Vec<(HeaderName, HeaderValue)>, Error> {
        let mut out: Vec<(HeaderName, HeaderValue)> = Vec::with_capacity(list.len());
        for entry in list {
            let name = header_name(&entry.name, at)?;
            if out.iter().any(|(seen, _)| *seen == name) {
                return Err(at.error(format!("header {:?} appears twice in {what}", entry.name)));
            }
            let value = HeaderValue::from_str(&entry.value)
                .map_err(|_| at.error(format!("invalid value for header {:?}", entry.name)))?;
            out.push((name, value));
        }
        Ok(out)
    };
    let remove = config
        .remove
        .iter()
        .map(|name| header_name(name, at))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HeaderModifier {
        set: pairs(&config.set, "set")?,
        add: pairs(&config.add, "add")?,
        remove,
    })
}

fn precise_hostname(text: &str, at: &Origin) -> Result<Box<str>, Error> {
    match HostPattern::parse(text) {
        Ok(HostPattern::Exact(name)) => Ok(name),
        Ok(HostPattern::Wildcard(_)) => {
            Err(at.error(format!("hostname {text:?} may not be a wildcard here")))
        }
        Err(why) => Err(at.error(why.to_string())),
    }
}

fn compile_path_modifier(config: &PathModifierConfig, at: &Origin) -> Result<PathModifier, Error> {
    let check = |value: &str| -> Result<Box<str>, Error> {
        crate::path::normalize_config_path(value)
            .map(String::into_boxed_str)
            .map_err(|why| at.error(why))
    };
    Ok(match config {
        PathModifierConfig::ReplaceFullPath { replace_full_path } => {
            PathModifier::ReplaceFullPath(check(replace_full_path)?)
        }
        PathModifierConfig::ReplacePrefixMatch {
            replace_prefix_match,
        } => PathModifier::ReplacePrefixMatch(check(replace_prefix_match)?),
    })
}

fn compile_redirect(config: &RequestRedirectConfig, at: &Origin) -> Result<Redirect, Error> {
    let scheme = match config.scheme.as_deref() {
        None => None,
        Some("http") => Some(RedirectScheme::Http),
        Some("https") => Some(RedirectScheme::Https),
        Some(other) => {
            return Err(at.error(format!("redirect scheme {other:?} is not http or https")));
        }
    };
    let status = config.status_code.unwrap_or(302);
    if ![301, 302, 303, 307, 308].contains(&status) {
        return Err(at.error(format!(
            "redirect status {status} is not 301, 302, 303, 307 or 308"
        )));
    }
    if config.port == Some(0) {
        return Err(at.error("redirect port must not be 0"));
    }
    Ok(Redirect {
        scheme,
        hostname: config
            .hostname
            .as_deref()
            .map(|h| precise_hostname(h, at))
            .transpose()?,
        path: config
            .path
            .as_ref()
            .map(|p| compile_path_modifier(p, at))
            .transpose()?,
        port: config.port,
        status,
    })
}

fn compile_rewrite(config: &UrlRewriteConfig, at: &Origin) -> Result<Rewrite, Error> {
    Ok(Rewrite {
        hostname: config
            .hostname
            .as_deref()
            .map(|h| precise_hostname(h, at))
            .transpose()?,
        path: config
            .path
            .as_ref()
            .map(|p| compile_path_modifier(p, at))
            .transpose()?,
    })
}

fn compile_mirror(config: &RequestMirrorConfig, at: &Origin) -> Result<Mirror, Error> {
    let (numerator, denominator) = match (config.percent, config.fraction) {
        (Some(_), Some(_)) => return Err(at.error("mirror may give percent or fraction, not both")),
        (Some(percent), None) => (percent, 100),
        (None, Some(fraction)) => (fraction.numerator, fraction.denominator),
        (None, None) => (1, 1),
    };
    if denominator == 0 || numerator > denominator {
        return Err(at.error(format!(
            "mirror share {numerator}/{denominator} is not between 0 and 1"
        )));
    }
    Ok(Mirror {
        backend: compile_backend(&config.backend, at)?,
        numerator,
        denominator,
    })
}

fn compile_cors(config: &CorsConfig, at: &Origin) -> Result<Cors, Error> {
    let allow_origins = config
        .allow_origins
        .iter()
        .map(|origin| compile_origin(origin, at))
        .collect::<Result<Vec<_>, _>>()?;
    let list = |values: &[String], what: &str| -> Result<AllowList, Error> {
        if values.iter().any(|v| v == "*") {
            if values.len() > 1 {
                return Err(at.error(format!("CORS {what} may not combine '*' with other values")));
            }
            return Ok(AllowList::Any);
        }
        for value in values {
            if HeaderName::from_bytes(value.as_bytes()).is_err() {
                return Err(at.error(format!("CORS {what} value {value:?} is not a token")));
            }
        }
        Ok(AllowList::Only(
            values.iter().map(|v| v.as_str().into()).collect(),
        ))
    };
    Ok(Cors {
        allow_origins,
        allow_credentials: config.allow_credentials.unwrap_or(false),
        allow_methods: list(&config.allow_methods, "allowMethods")?,
        allow_headers: list(&config.allow_headers, "allowHeaders")?,
        expose_headers: list(&config.expose_headers, "exposeHeaders")?,
        max_age: config.max_age.unwrap_or(5),
    })
}

fn compile_origin(origin: &str, at: &Origin) -> Result<OriginPattern, Error> {
    if origin == "*" {
        return Ok(OriginPattern::Any);
    }
    let lower = origin.to_ascii_lowercase();
    let bad = || {
        at.error(format!(
            "CORS origin {origin:?} is not scheme://host[:port]"
        ))
    };
    let (scheme, rest) = lower.split_once("://").ok_or_else(bad)?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return Err(bad());
    }
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return Err(bad());
    }
    match rest.strip_prefix('*') {
        Some(suffix) if suffix.starts_with('.') && !suffix.contains('*') => {
            Ok(OriginPattern::Wildcard {
                prefix: format!("{scheme}://").into(),
                suffix: suffix.into(),
            })
        }
        Some(_) => Err(bad()),
        None if rest.contains('*') => Err(bad()),
        None => Ok(OriginPattern::Exact(lower.into())),
    }
}
