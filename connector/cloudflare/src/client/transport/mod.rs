//! The HTTP client under the API calls: `culvert-tls`'s pooled client (hyper-util over
//! hyper-rustls, rustls on aws-lc-rs) trusting the system's roots and any extra CA given.
//!
//! The base URL must be `https://`, except on a loopback host, where `http://` is
//! allowed for the simulator; an `http://` URL anywhere else is refused, so a typo can
//! never send the API token in clear text.

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use culvert_tls::HttpsClient;
use http_body_util::Full;
use rustls::RootCertStore;

use crate::Error;

/// The pooled HTTP client.
pub(crate) type Http = HttpsClient<Full<Bytes>>;

/// Where the API lives: scheme, authority and path prefix (no trailing `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BaseUrl {
    https: bool,
    authority: String,
    prefix: String,
}

impl BaseUrl {
    /// Checks a base URL such as `https://api.cloudflare.com/client/v4`.
    pub(crate) fn parse(url: &str) -> Result<Self, Error> {
        let bad = |why: &str| Error::Config(format!("base url {url:?}: {why}"));
        let uri: http::Uri = url.parse().map_err(|_| bad("not a url"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad("the scheme must be https")),
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("user information is not allowed"));
        }
        if uri.query().is_some() {
            return Err(bad("a query is not allowed"));
        }
        if !https && !is_loopback(authority.host()) {
            return Err(bad("http is allowed only on a loopback host; use https"));
        }
        Ok(Self {
            https,
            authority: authority.as_str().to_owned(),
            prefix: uri.path().trim_end_matches('/').to_owned(),
        })
    }

    /// Whether the URL is `https://`.
    pub(crate) fn is_https(&self) -> bool {
        self.https
    }

    /// The full URI of `path_and_query` (which starts with `/`) below the base.
    pub(crate) fn join(&self, path_and_query: &str) -> Result<http::Uri, Error> {
        let scheme = if self.https { "https" } else { "http" };
        format!(
            "{scheme}://{}{}{path_and_query}",
            self.authority, self.prefix
        )
        .parse()
        .map_err(|_| Error::Config("a request path does not make a url".to_owned()))
    }
}

/// `localhost`, or an address in 127.0.0.0/8 or `::1`.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Builds the pooled client. `system_roots` adds the platform's trusted roots to the
/// `extra_pem` ones; roots are needed only for an `https://` base.
pub(crate) fn http(
    base: &BaseUrl,
    extra_pem: Option<&str>,
    system_roots: bool,
    connect_timeout: Duration,
) -> Result<Http, Error> {
    let roots = if base.is_https() {
        roots(extra_pem, system_roots)?
    } else {
        RootCertStore::empty()
    };
    let tls = culvert_tls::client_config(roots).map_err(Error::Tls)?;
    // Plain http is reachable only because `BaseUrl::parse` allowed it for loopback.
    let options = culvert_tls::HttpsOptions {
        allow_http: true,
        nodelay: true,
        ..culvert_tls::HttpsOptions::new(connect_timeout)
    };
    Ok(culvert_tls::https_client(tls, options))
}

fn roots(extra_pem: Option<&str>, system: bool) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    if let Some(pem) = extra_pem {
        culvert_tls::add_pem_roots(&mut roots, pem.as_bytes()).map_err(Error::Tls)?;
    }
    if system {
        let found = culvert_tls::add_system_roots(&mut roots);
        if roots.is_empty() {
            return Err(Error::Trust(format!(
                "no system root certificates found ({})",
                found.errors_text()
            )));
        }
    }
    if roots.is_empty() {
        return Err(Error::Trust(
            "system roots are off and no extra ca is given".to_owned(),
        ));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests;
