//! `culvert route`: compile a `DataPlaneConfig` file and print the routing decision
//! for one request, with the outcome the data plane would produce (redirect
//! `Location`, rewritten host and path, chosen backend). Useful to check a config
//! before pushing it.

use anyhow::{Context, bail};
use culvert_router::outcome::{RedirectRequest, redirect_location, rewrite_path};
use culvert_router::path::{normalize_path, split_query};
use culvert_router::{DataPlaneConfig, RequestView, RouteTableBuilder};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;

/// Arguments of `culvert route`.
#[derive(Debug, clap::Args)]
pub(crate) struct RouteArgs {
    /// DataPlaneConfig JSON file.
    #[arg(long)]
    config: PathBuf,
    /// `Host` header of the request (may include a port).
    #[arg(long)]
    host: String,
    /// Request target: path with optional query.
    #[arg(long, default_value = "/")]
    path: String,
    /// HTTP method.
    #[arg(long, default_value = "GET")]
    method: String,
    /// Listener port the request arrives on.
    #[arg(long, default_value_t = 80)]
    port: u16,
    /// Local address the request arrives on.
    #[arg(long)]
    local_ip: Option<IpAddr>,
    /// `https` when the request arrived over TLS.
    #[arg(long, default_value = "http")]
    scheme: String,
    /// Request header as `name: value`; repeat for more.
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
    /// Number in [0, 1) used for the weighted backend choice.
    #[arg(long, default_value_t = 0.0)]
    random: f64,
}

pub(crate) fn run(args: &RouteArgs) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("reading {}", args.config.display()))?;
    let config: DataPlaneConfig = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}", args.config.display()))?;
    let table = RouteTableBuilder::new()
        .build(&config)
        .with_context(|| format!("compiling {}", args.config.display()))?;
    let headers = parse_headers(&args.headers)?;
    let (raw_path, query) = split_query(&args.path);
    let path = normalize_path(raw_path).with_context(|| format!("request path {raw_path:?}"))?;
    let target = match query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    };
    let view = RequestView {
        port: args.port,
        local_ip: args.local_ip,
        host: &args.host,
        path: &target,
        method: &args.method,
        headers: &headers,
    };
    let mut out = String::new();
    let found = match table.route(&view) {
        Ok(found) => found,
        Err(miss) => {
            writeln!(out, "no match: {miss} (the data plane answers 404)")?;
            return Ok(out);
        }
    };
    let listener = table
        .listener_info(found.listener)
        .context("listener of the match")?;
    let route = table
        .route_info(found.route)
        .context("route of the match")?;
    writeln!(out, "listener: {} (port {})", listener.name, listener.port)?;
    writeln!(
        out,
        "route:    {} {}/{}",
        route.kind.as_str(),
        route.namespace,
        route.name
    )?;
    let rule_name = found
        .rule
        .name()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    writeln!(
        out,
        "rule:     {}{rule_name}, match {}",
        found.rule_index, found.match_index
    )?;
    let filters = found.rule.filters();
    let prefix_len = found.matched_prefix_len.unwrap_or(0);
    if let Some(redirect) = &filters.redirect {
        let request = RedirectRequest {
            scheme: &args.scheme,
            host: &args.host,
            listener_port: args.port,
            path: &path,
            query,
            matched_prefix_len: prefix_len,
        };
        writeln!(
            out,
            "answer:   {} Location: {}",
            redirect.status,
            redirect_location(redirect, &request)
        )?;
        return Ok(out);
    }
    if let Some(rewrite) = &filters.rewrite {
        if let Some(host) = &rewrite.hostname {
            writeln!(out, "rewrite:  host {host}")?;
        }
        if let Some(modifier) = &rewrite.path {
            writeln!(
                out,
                "rewrite:  path {}",
                rewrite_path(modifier, &path, prefix_len)
            )?;
        }
    }
    let backends = found.rule.backends();
    let random = (args.random.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
    match backends.pick(random) {
        None => writeln!(out, "answer:   500 (no backend with weight)")?,
        Some(backend) => match backend.failure_status() {
            Some(status) => writeln!(
                out,
                "answer:   {status} (backend {} unavailable)",
                backend.name
            )?,
            None => {
                let endpoints: Vec<String> =
                    backend.endpoints.iter().map(ToString::to_string).collect();
                writeln!(
                    out,
                    "backend:  {} (weight {} of {}) -> {}",
                    backend.name,
                    backend.weight,
                    backends.total_weight(),
                    endpoints.join(", ")
                )?;
            }
        },
    }
    Ok(out)
}

fn parse_headers(raw: &[String]) -> anyhow::Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    for entry in raw {
        let Some((name, value)) = entry.split_once(':') else {
            bail!("header {entry:?} is not `name: value`");
        };
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .with_context(|| format!("header name in {entry:?}"))?;
        let value = HeaderValue::from_str(value.trim())
            .with_context(|| format!("header value in {entry:?}"))?;
        headers.append(name, value);
    }
    Ok(headers)
}
