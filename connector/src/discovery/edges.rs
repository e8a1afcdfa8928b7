//! Finding the edge as cloudflared does (PROTOCOL.md §2.1): the SRV record
//! `_v2-origintunneld._tcp.argotunnel.com` (`_<region>-v2-origintunneld…` with a
//! region) names at least two targets, one per region, each on the SRV's port;
//! each target's A/AAAA records are that region's addresses.
//!
//! When the SRV look-up itself fails (no answer, server failure, no such name),
//! but not when it answers with fewer than two records (an error),
//! the well-known region host names `region1.v2.argotunnel.com` and
//! `region2.v2.argotunnel.com` (`<region>-region1…` with a region) are resolved
//! through the same nameservers on port 7844. cloudflared's own fallback, DNS over
//! TLS to 1.1.1.1, is not implemented.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::message::{Name, RCODE_NXDOMAIN, RecordData, RecordType, Reply, Srv};
use super::resolver::Resolver;
use crate::Error;

/// The SRV service (with a region `R`: `R-v2-origintunneld`).
pub const SRV_SERVICE: &str = "v2-origintunneld";
/// The SRV domain.
pub const SRV_DOMAIN: &str = "argotunnel.com";
/// The region host names resolved when the SRV look-up fails (with a region `R`:
/// `R-region1…`).
pub const FALLBACK_HOSTS: [&str; 2] = ["region1.v2.argotunnel.com", "region2.v2.argotunnel.com"];
/// The edge port used with the fallback host names.
pub const EDGE_PORT: u16 = 7844;
/// Discovered addresses are kept at least this long, whatever the records' TTL.
pub const MIN_TTL: Duration = Duration::from_secs(10);
/// ... and at most this long.
pub const MAX_TTL: Duration = Duration::from_secs(300);
/// At most this many addresses are kept per region.
const MAX_ADDRS_PER_REGION: usize = 64;
/// At most this many CNAME steps are followed inside one answer.
const MAX_CNAMES: usize = 8;

/// Which address families to use (cloudflared's `--edge-ip-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpVersion {
    /// Both: IPv4 addresses first, then IPv6.
    #[default]
    Auto,
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

impl std::str::FromStr for IpVersion {
    type Err = Error;

    /// `4`, `6` or `auto`.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "auto" => Ok(Self::Auto),
            "4" => Ok(Self::V4),
            "6" => Ok(Self::V6),
            other => Err(Error::Config(format!(
                "unknown edge ip version {other:?}: expected 4, 6 or auto"
            ))),
        }
    }
}

/// What discovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeRegions {
    /// One list per region (SRV target), in SRV priority order; none is empty.
    pub regions: Vec<Vec<SocketAddr>>,
    /// How long the answer may be used: the smallest record TTL, within
    /// [`MIN_TTL`]..=[`MAX_TTL`].
    pub ttl: Duration,
    /// Whether the region host names were used because the SRV look-up failed.
    pub fallback: bool,
}

impl EdgeRegions {
    /// Every address, region by region.
    pub fn addrs(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.regions.iter().flatten().copied()
    }
}

/// Checks a region name: a DNS label of letters, digits and `-`.
pub fn validate_region(region: &str) -> Result<(), Error> {
    let ok = !region.is_empty()
        && region.len() <= 40
        && region
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !region.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(Error::Config(format!("invalid tunnel region {region:?}")))
    }
}

/// The SRV name to ask for: `_v2-origintunneld._tcp.argotunnel.com`, or
/// `_<region>-v2-origintunneld._tcp.argotunnel.com`.
pub fn srv_name(region: Option<&str>) -> Result<Name, Error> {
    let prefix = match region {
        Some(region) => {
            validate_region(region)?;
            format!("{region}-")
        }
        None => String::new(),
    };
    Name::parse(&format!("_{prefix}{SRV_SERVICE}._tcp.{SRV_DOMAIN}"))
}

/// The fallback host names: `region1.v2.argotunnel.com` and
/// `region2.v2.argotunnel.com`, or `<region>-region1…` and `<region>-region2…`.
pub fn fallback_hosts(region: Option<&str>) -> Result<Vec<Name>, Error> {
    let prefix = match region {
        Some(region) => {
            validate_region(region)?;
            format!("{region}-")
        }
        None => String::new(),
    };
    FALLBACK_HOSTS
        .iter()
        .map(|host| Name::parse(&format!("{prefix}{host}")))
        .collect()
}

/// The SRV targets of `reply` to `srv`, by priority (then weight, heaviest
/// first); a target named twice counts once, a `.` target not at all.
pub fn srv_targets(srv: &Name, reply: &Reply) -> Vec<Srv> {
    let mut targets: Vec<Srv> = reply
        .answers
        .iter()
        .filter(|r| r.name == *srv)
        .filter_map(|r| match &r.data {
            RecordData::Srv(s) if !s.target.is_root() => Some(s.clone()),
            _ => None,
        })
        .collect();
    targets.sort_by(|a, b| {
        a.priority
            .cmp(&b.priority)
            .then(b.weight.cmp(&a.weight))
            .then(a.target.wire().cmp(b.target.wire()))
    });
    let mut seen = HashSet::new();
    targets.retain(|s| seen.insert(s.target.clone()));
    targets
}

/// The addresses `reply` gives for `name`, following CNAMEs inside the answer,
/// with the smallest TTL seen.
pub fn addresses(name: &Name, reply: &Reply) -> (Vec<IpAddr>, Option<u32>) {
    let mut names = vec![name.clone()];
    let mut ttl: Option<u32> = None;
    for _ in 0..MAX_CNAMES {
        let Some(current) = names.last() else { break };
        let next = reply.answers.iter().find_map(|r| match &r.data {
            RecordData::Cname(target) if r.name == *current => Some((target.clone(), r.ttl)),
            _ => None,
        });
        match next {
            Some((target, t)) if !names.contains(&target) => {
                ttl = Some(ttl.map_or(t, |ttl| ttl.min(t)));
                names.push(target);
            }
            _ => break,
        }
    }
    let mut ips = Vec::new();
    for record in &reply.answers {
        if !names.contains(&record.name) {
            continue;
        }
        let ip = match record.data {
            RecordData::A(ip) => IpAddr::V4(ip),
            RecordData::Aaaa(ip) => IpAddr::V6(ip),
            _ => continue,
        };
        if !ips.contains(&ip) {
            ttl = Some(ttl.map_or(record.ttl, |t| t.min(record.ttl)));
            ips.push(ip);
        }
    }
    (ips, ttl)
}

/// Discovers the edge: SRV first, the region host names if the SRV look-up fails.
pub async fn discover(
    resolver: &Resolver,
    region: Option<&str>,
    ip_version: IpVersion,
) -> Result<EdgeRegions, Error> {
    let srv = srv_name(region)?;
    let srv_reply = resolver
        .query(&srv, RecordType::Srv)
        .await
        .and_then(|reply| {
            if reply.rcode == RCODE_NXDOMAIN {
                Err(Error::Dns {
                    name: srv.to_string(),
                    reason: "no such name".to_owned(),
                })
            } else {
                Ok(reply)
            }
        });
    let reply = match srv_reply {
        Ok(reply) => reply,
        Err(srv_error) => {
            tracing::warn!(%srv_error, "srv look-up failed; trying the region host names");
            let hosts = fallback_hosts(region)?;
            let targets: Vec<_> = hosts.into_iter().map(|h| (h, EDGE_PORT)).collect();
            return resolve_regions(resolver, &targets, ip_version, None, true)
                .await
                .map_err(|fallback| {
                    let fallback = match fallback {
                        Error::Discovery(reason) => reason,
                        other => other.to_string(),
                    };
                    Error::Discovery(format!("{srv_error}; fallback: {fallback}"))
                });
        }
    };
    let targets = srv_targets(&srv, &reply);
    if targets.len() < 2 {
        return Err(Error::Discovery(format!(
            "{srv} has {} usable srv record(s); at least 2 regions are needed",
            targets.len()
        )));
    }
    let srv_ttl = reply
        .answers
        .iter()
        .filter(|r| matches!(r.data, RecordData::Srv(_)))
        .map(|r| r.ttl)
        .min();
    let targets: Vec<_> = targets.into_iter().map(|s| (s.target, s.port)).collect();
    resolve_regions(resolver, &targets, ip_version, srv_ttl, false).await
}

/// Resolves each `(host, port)` target into one region.
async fn resolve_regions(
    resolver: &Resolver,
    targets: &[(Name, u16)],
    ip_version: IpVersion,
    ttl: Option<u32>,
    fallback: bool,
) -> Result<EdgeRegions, Error> {
    let mut ttl = ttl;
    let mut regions = Vec::with_capacity(targets.len());
    for (host, port) in targets {
        let (ips, host_ttl) = resolve_host(resolver, host, ip_version).await?;
        if let Some(t) = host_ttl {
            ttl = Some(ttl.map_or(t, |ttl| ttl.min(t)));
        }
        let addrs: Vec<SocketAddr> = ips
            .into_iter()
            .take(MAX_ADDRS_PER_REGION)
            .map(|ip| SocketAddr::new(ip, *port))
            .collect();
        regions.push(addrs);
    }
    let ttl = Duration::from_secs(u64::from(ttl.unwrap_or(0))).clamp(MIN_TTL, MAX_TTL);
    Ok(EdgeRegions {
        regions,
        ttl,
        fallback,
    })
}

/// One host's addresses of the families `ip_version` allows; at least one.
async fn resolve_host(
    resolver: &Resolver,
    host: &Name,
    ip_version: IpVersion,
) -> Result<(Vec<IpAddr>, Option<u32>), Error> {
    let types: &[RecordType] = match ip_version {
        IpVersion::Auto => &[RecordType::A, RecordType::Aaaa],
        IpVersion::V4 => &[RecordType::A],
        IpVersion::V6 => &[RecordType::Aaaa],
    };
    let mut ips = Vec::new();
    let mut ttl: Option<u32> = None;
    let mut errors = Vec::new();
    for &rtype in types {
        match resolver.query(host, rtype).await {
            Ok(reply) => {
                let (found, t) = addresses(host, &reply);
                ips.extend(found);
                if let Some(t) = t {
                    ttl = Some(ttl.map_or(t, |ttl| ttl.min(t)));
                }
            }
            Err(error) => errors.push(error.to_string()),
        }
    }
    if ips.is_empty() {
        let why = if errors.is_empty() {
            "no address records".to_owned()
        } else {
            errors.join("; ")
        };
        return Err(Error::Discovery(format!("edge host {host}: {why}")));
    }
    Ok((ips, ttl))
}
