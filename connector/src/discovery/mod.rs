//! Edge discovery (PROTOCOL.md §2.1) with a DNS stub resolver of our own.
//!
//! * [`message`]: sans-IO DNS messages, a query encoder and a strict reply parser
//!   over `&[u8]` (untrusted input: bounded, never panics).
//! * [`ResolverConfig`] (`resolv_conf.rs`): nameservers, timeout and attempts, from
//!   `/etc/resolv.conf` or given directly.
//! * [`Resolver`] (`resolver.rs`): the thin async layer, UDP with random IDs and
//!   source ports, TCP when a reply is truncated.
//! * [`discover`] (`edges.rs`): the SRV look-up, one region per target, each
//!   target's A/AAAA records; the region host names when the SRV look-up fails.
//!
//! The tunnel driver calls [`discover`] when [`crate::io::TunnelConfig::edges`] is
//! empty, with a [`DiscoveryConfig`], and again when a connection needs a new
//! address after the answer's TTL ran out.

mod edges;
pub mod message;
mod resolv_conf;
mod resolver;

pub use edges::{
    EDGE_PORT, EdgeRegions, FALLBACK_HOSTS, IpVersion, MAX_TTL, MIN_TTL, SRV_DOMAIN, SRV_SERVICE,
    addresses, discover, fallback_hosts, srv_name, srv_targets, validate_region,
};
pub use resolv_conf::{NoNameserver, RESOLV_CONF, ResolverConfig};
pub use resolver::Resolver;

use crate::Error;

/// How the tunnel finds the edge when no static edges are given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryConfig {
    /// The region (`--region`, e.g. `us`): prefixes the SRV service and the
    /// fallback host names. A token's endpoint (`e`) acts as the region too;
    /// setting both is an error.
    pub region: Option<String>,
    /// Which address families to use.
    pub ip_version: IpVersion,
    /// The nameservers; `None` reads `/etc/resolv.conf` at each discovery.
    pub resolver: Option<ResolverConfig>,
    /// The longest an answer is used: a connection that needs a new address
    /// after this (or after the records' TTL, if shorter) resolves again.
    /// Default [`MAX_TTL`].
    pub refresh_after: std::time::Duration,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self {
            region: None,
            ip_version: IpVersion::Auto,
            resolver: None,
            refresh_after: MAX_TTL,
        }
    }
}

impl DiscoveryConfig {
    /// The region to use: the configured one or the token's endpoint, not both.
    pub fn region<'a>(&'a self, token_endpoint: Option<&'a str>) -> Result<Option<&'a str>, Error> {
        let token_endpoint = token_endpoint.filter(|e| !e.is_empty());
        match (self.region.as_deref(), token_endpoint) {
            (Some(region), Some(endpoint)) => Err(Error::Config(format!(
                "a tunnel region ({region:?}) was given but the token already names one \
                 ({endpoint:?}); drop the region"
            ))),
            (Some(region), None) | (None, Some(region)) => {
                validate_region(region)?;
                Ok(Some(region))
            }
            (None, None) => Ok(None),
        }
    }

    /// The resolver to use: the configured nameservers, else `/etc/resolv.conf`.
    pub fn resolver(&self) -> Result<Resolver, Error> {
        let config = match &self.resolver {
            Some(config) => config.clone(),
            None => ResolverConfig::system()?,
        };
        Ok(Resolver::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_from_flag_or_token_not_both() {
        let none = DiscoveryConfig::default();
        assert_eq!(none.region(None).expect("ok"), None);
        assert_eq!(none.region(Some("us")).expect("ok"), Some("us"));
        assert_eq!(none.region(Some("")).expect("ok"), None);
        let us = DiscoveryConfig {
            region: Some("us".into()),
            ..DiscoveryConfig::default()
        };
        assert_eq!(us.region(None).expect("ok"), Some("us"));
        let both = us.region(Some("fed")).expect_err("both set");
        assert!(
            both.to_string().contains("token already names one"),
            "{both}"
        );
        let bad = DiscoveryConfig {
            region: Some("u s".into()),
            ..DiscoveryConfig::default()
        };
        assert!(bad.region(None).is_err());
    }

    #[test]
    fn srv_and_fallback_names() {
        assert_eq!(
            srv_name(None).expect("valid").to_string(),
            "_v2-origintunneld._tcp.argotunnel.com"
        );
        assert_eq!(
            srv_name(Some("us")).expect("valid").to_string(),
            "_us-v2-origintunneld._tcp.argotunnel.com"
        );
        let hosts: Vec<String> = fallback_hosts(Some("us"))
            .expect("valid")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            hosts,
            [
                "us-region1.v2.argotunnel.com",
                "us-region2.v2.argotunnel.com"
            ]
        );
        assert!(srv_name(Some("x.y")).is_err());
    }
}
