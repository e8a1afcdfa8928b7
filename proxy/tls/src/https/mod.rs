//! The pooled HTTPS client (feature `client`): hyper-util's pooled HTTP/1.1 client over
//! hyper-rustls, on settings from [`crate::client_config`], with a connect timeout. A request's whole-exchange timeout (body included) is the caller's: it
//! wraps the exchange, since only it knows when the body it wants is read.

use std::time::Duration;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::ClientConfig;

/// The pooled HTTPS client over hyper-rustls, sending bodies of type `B`.
pub type HttpsClient<B> = Client<HttpsConnector<HttpConnector>, B>;

/// How [`https_client`] connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpsOptions {
    /// The longest a TCP connect may take.
    pub connect_timeout: Duration,
    /// Whether `http://` URIs are served too (in clear text); otherwise refused.
    pub allow_http: bool,
    /// Whether `TCP_NODELAY` is set on each connection.
    pub nodelay: bool,
    /// How long an idle pooled connection is kept.
    pub pool_idle_timeout: Duration,
}

impl HttpsOptions {
    /// HTTPS only, this connect timeout, Nagle's algorithm left on, idle connections
    /// kept 30 s.
    pub fn new(connect_timeout: Duration) -> Self {
        Self {
            connect_timeout,
            allow_http: false,
            nodelay: false,
            pool_idle_timeout: Duration::from_secs(30),
        }
    }
}

/// A pooled HTTP/1.1 client over `tls`, connecting as `options` say.
pub fn https_client<B>(tls: ClientConfig, options: HttpsOptions) -> HttpsClient<B>
where
    B: http_body::Body + Send,
    B::Data: Send,
{
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(options.nodelay);
    tcp.set_connect_timeout(Some(options.connect_timeout));
    #[allow(
        clippy::disallowed_methods,
        reason = "this crate is the one place that builds the connector"
    )]
    let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls);
    let connector = if options.allow_http {
        builder.https_or_http().enable_http1().wrap_connector(tcp)
    } else {
        builder.https_only().enable_http1().wrap_connector(tcp)
    };
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(options.pool_idle_timeout)
        .build(connector)
}

#[cfg(test)]
mod tests;
