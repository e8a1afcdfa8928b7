//! Which nameservers to ask and how patiently: [`ResolverConfig`], read from
//! `/etc/resolv.conf` or given directly (tests point it at their own server).
//!
//! Only what a stub resolver needs is read: `nameserver` lines (the first three, as
//! glibc does; IPv6 addresses with a numeric zone only) and `options timeout:N` /
//! `attempts:N`. Search domains do not matter: every name asked is fully qualified.
//! A file without a usable nameserver is an error rather than a guess.

use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::path::Path;
use std::time::Duration;

use crate::Error;

/// The system resolver configuration file.
pub const RESOLV_CONF: &str = "/etc/resolv.conf";
/// glibc's `MAXNS`: later nameserver lines are ignored.
const MAX_NAMESERVERS: usize = 3;
/// glibc's defaults and caps.
const DEFAULT_TIMEOUT_SECS: u64 = 5;
const MAX_TIMEOUT_SECS: u64 = 30;
const DEFAULT_ATTEMPTS: u32 = 2;
const MAX_ATTEMPTS: u32 = 5;

/// A `resolv.conf` without a usable `nameserver` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no usable nameserver line")]
pub struct NoNameserver;

/// Where and how to send DNS queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolverConfig {
    /// Nameservers, asked in order (port 53 unless given).
    pub nameservers: Vec<SocketAddr>,
    /// How long to wait for one nameserver's answer (per try).
    pub timeout: Duration,
    /// How many rounds over all nameservers.
    pub attempts: u32,
}

impl ResolverConfig {
    /// The given nameservers with glibc's defaults (5 s, 2 attempts).
    pub fn new(nameservers: Vec<SocketAddr>) -> Self {
        Self {
            nameservers,
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            attempts: DEFAULT_ATTEMPTS,
        }
    }

    /// Reads [`RESOLV_CONF`].
    pub fn system() -> Result<Self, Error> {
        Self::read(Path::new(RESOLV_CONF))
    }

    /// Reads a `resolv.conf` file.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: format!("reading {}", path.display()),
            source,
        })?;
        Self::parse(&text).map_err(|reason| Error::Config(format!("{}: {reason}", path.display())))
    }

    /// Parses `resolv.conf` text; unknown lines and options are ignored.
    pub fn parse(text: &str) -> Result<Self, NoNameserver> {
        let mut config = Self::new(Vec::new());
        for line in text.lines() {
            let line = line.split(['#', ';']).next().unwrap_or("");
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => {
                    if let Some(addr) = words.next().and_then(nameserver) {
                        if config.nameservers.len() < MAX_NAMESERVERS {
                            config.nameservers.push(addr);
                        }
                    }
                }
                Some("options") => {
                    for option in words {
                        if let Some(n) = option.strip_prefix("timeout:") {
                            if let Ok(n) = n.parse::<u64>() {
                                config.timeout = Duration::from_secs(n.clamp(1, MAX_TIMEOUT_SECS));
                            }
                        } else if let Some(n) = option.strip_prefix("attempts:") {
                            if let Ok(n) = n.parse::<u32>() {
                                config.attempts = n.clamp(1, MAX_ATTEMPTS);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        if config.nameservers.is_empty() {
            return Err(NoNameserver);
        }
        Ok(config)
    }
}

/// A nameserver address: IPv4, IPv6, or IPv6 with a numeric `%zone`; port 53.
fn nameserver(text: &str) -> Option<SocketAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, 53));
    }
    let (ip, zone) = text.split_once('%')?;
    let ip = ip.parse::<Ipv6Addr>().ok()?;
    let zone = zone.parse::<u32>().ok()?;
    Some(SocketAddr::V6(SocketAddrV6::new(ip, 53, 0, zone)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nameservers_and_options() {
        let text = "# generated\n\
            search example.com\n\
            nameserver 10.0.0.2   # first\n\
            nameserver 2001:db8::53\n\
            nameserver fe80::1%2\n\
            nameserver fe80::1%eth0\n\
            nameserver 10.0.0.9\n\
            options ndots:5 timeout:3 attempts:4 rotate\n";
        let config = ResolverConfig::parse(text).expect("valid");
        assert_eq!(
            config.nameservers,
            vec![
                "10.0.0.2:53".parse().expect("addr"),
                "[2001:db8::53]:53".parse().expect("addr"),
                SocketAddr::V6(SocketAddrV6::new(
                    "fe80::1".parse().expect("addr"),
                    53,
                    0,
                    2
                )),
            ]
        );
        assert_eq!(config.timeout, Duration::from_secs(3));
        assert_eq!(config.attempts, 4);
    }

    #[test]
    fn defaults_and_caps() {
        let config = ResolverConfig::parse("nameserver 1.1.1.1").expect("valid");
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(config.attempts, 2);
        let config = ResolverConfig::parse("nameserver 1.1.1.1\noptions timeout:99 attempts:0")
            .expect("valid");
        assert_eq!(config.timeout, Duration::from_secs(30));
        assert_eq!(config.attempts, 1);
    }

    #[test]
    fn no_nameserver_is_an_error() {
        assert!(ResolverConfig::parse("search example.com\nnameserver not-an-ip\n").is_err());
        assert!(ResolverConfig::parse("").is_err());
    }
}
