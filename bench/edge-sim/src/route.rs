//! Where the front door sends a request, from its `Host` (port stripped,
//! case-insensitive) and the account's DNS records, as Cloudflare's edge would:
//!
//! * the records named like the host (else those of the closest wildcard
//!   `*.<parent>`, which covers any depth below it) include a proxied CNAME to
//!   `<tunnel-id>.cfargotunnel.com`: that tunnel's connections only. An unknown or
//!   deleted tunnel, or one with no registered connection, is a `530` (error 1033).
//!   If the tunnel has a remote configuration, the first ingress rule whose
//!   hostname matches decides: an `http_status:NNN` service answers `NNN` at the
//!   edge (what cloudflared would answer itself; paths of rules are not matched);
//! * no such record (no record at all, or only other kinds): the start-up tunnel,
//!   as before DNS existed in the simulator.

use http::StatusCode;
use serde_json::Value;

use culvert_tunnel_proto::Uuid;

use crate::api::state::Cloud;
use crate::shared::SimShared;

/// The decision for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// Forward over a connection of this tunnel; `via_dns` when a record chose it.
    Tunnel { id: Uuid, via_dns: bool },
    /// Answer at the edge.
    Answer(StatusCode, String),
}

/// The 530 body of a hostname whose tunnel is not connected (Cloudflare error 1033).
pub(crate) const TUNNEL_ERROR_BODY: &str = "error code: 1033\n";

/// The status of a hostname whose tunnel is not connected: 530.
pub(crate) fn tunnel_error_status() -> StatusCode {
    StatusCode::from_u16(530).unwrap_or(StatusCode::BAD_GATEWAY)
}

/// The 530 answer of error 1033.
pub(crate) fn tunnel_error() -> Route {
    Route::Answer(tunnel_error_status(), TUNNEL_ERROR_BODY.to_owned())
}

/// `Host` without its port, lowercase, without a final dot.
pub(crate) fn host_name(host: &str) -> String {
    let host = host.trim();
    let bare = if let Some(rest) = host.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(inside, _)| inside)
    } else {
        host.rsplit_once(':')
            .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
            .map_or(host, |(name, _)| name)
    };
    bare.trim_end_matches('.').to_ascii_lowercase()
}

/// Decides where a request for `host` goes (the simulator's state, locked briefly).
pub(crate) fn route(shared: &SimShared, host: Option<&str>) -> Route {
    decide(&shared.cloud(), shared.token.tunnel_id, host)
}

/// Where a request for `host` goes in `cloud`, `default` being the start-up tunnel.
pub(crate) fn decide(cloud: &Cloud, default: Uuid, host: Option<&str>) -> Route {
    let default = Route::Tunnel {
        id: default,
        via_dns: false,
    };
    let Some(host) = host.map(host_name) else {
        return default;
    };
    let target = cloud
        .records
        .for_host(&host)
        .iter()
        .find_map(|r| r.tunnel_target());
    let Some(id) = target else {
        return default;
    };
    let Some(tunnel) = cloud.tunnel(id).filter(|t| t.deleted_at.is_none()) else {
        return tunnel_error();
    };
    let rules = tunnel
        .config
        .as_ref()
        .and_then(|c| c.get("ingress"))
        .and_then(Value::as_array);
    if let Some(rules) = rules {
        let matched = rules.iter().find(|rule| {
            rule.get("hostname")
                .and_then(Value::as_str)
                .is_none_or(|pattern| hostname_matches(pattern, &host))
        });
        let service = matched
            .and_then(|rule| rule.get("service"))
            .and_then(Value::as_str);
        match service {
            None => return Route::Answer(StatusCode::NOT_FOUND, String::new()),
            Some(service) => {
                if let Some(code) = service.strip_prefix("http_status:") {
                    let status = code
                        .trim()
                        .parse::<u16>()
                        .ok()
                        .and_then(|c| StatusCode::from_u16(c).ok())
                        .unwrap_or(StatusCode::BAD_GATEWAY);
                    return Route::Answer(status, String::new());
                }
            }
        }
    }
    Route::Tunnel { id, via_dns: true }
}

/// An ingress hostname pattern as cloudflared matches it: empty or `*` matches
/// everything, `*.example.com` any name below `example.com`, else exact
/// (case-insensitive).
fn hostname_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim().trim_end_matches('.').to_ascii_lowercase();
    if pattern.is_empty() || pattern == "*" {
        return true;
    }
    match pattern.strip_prefix('*') {
        Some(suffix) if suffix.starts_with('.') => host.ends_with(suffix),
        _ => pattern == host,
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;
    use serde_json::json;

    use culvert_tunnel_proto::Uuid;

    use super::{Route, decide, host_name, hostname_matches};
    use crate::api::state::{Cloud, TunnelEntry};
    use crate::random::generate_token;

    /// An account with zone `example.com`, a start-up tunnel and a second tunnel
    /// `b` (with a remote configuration for `app.example.com` only), and records:
    /// `app` and `*.wild` -> b, `ghost` -> an unknown tunnel, `plain` an A record,
    /// `dns-only` an unproxied CNAME to b.
    fn cloud() -> (Cloud, Uuid, Uuid) {
        let startup = generate_token().expect("random");
        let mut cloud = Cloud::new(
            startup.account_tag.clone(),
            "token".to_owned(),
            &["example.com".to_owned()],
            TunnelEntry::new(&startup, "startup", "cloudflare"),
        )
        .expect("random");
        let mut b = TunnelEntry::new(&generate_token().expect("random"), "b", "cloudflare");
        b.config = Some(json!({"ingress": [
            {"hostname": "app.example.com", "service": "http://127.0.0.1:1"},
            {"hostname": "*.wild.example.com", "path": "^/x", "service": "http_status:418"},
            {"service": "http_status:404"},
        ]}));
        let b_id = b.id;
        cloud.tunnels.push(b);
        let zone = cloud.zones[0].clone();
        let target = format!("{b_id}.cfargotunnel.com");
        for (kind, name, content, proxied) in [
            ("CNAME", "app", target.as_str(), true),
            ("CNAME", "*.wild", target.as_str(), true),
            (
                "CNAME",
                "ghost",
                "00000000-0000-4000-8000-000000000000.cfargotunnel.com",
                true,
            ),
            ("A", "plain", "192.0.2.1", true),
            ("CNAME", "dns-only", target.as_str(), false),
        ] {
            let body = serde_json::from_value(json!({
                "type": kind, "name": name, "content": content, "proxied": proxied,
            }))
            .expect("valid body");
            cloud.records.create(&zone, body).expect("no conflict");
        }
        (cloud, startup.tunnel_id, b_id)
    }

    #[test]
    fn routing_decisions() {
        let (cloud, startup, b) = cloud();
        let to = |id| Route::Tunnel { id, via_dns: true };
        let default = Route::Tunnel {
            id: startup,
            via_dns: false,
        };
        let status =
            |code| Route::Answer(StatusCode::from_u16(code).expect("valid"), String::new());
        let table = [
            (None, default.clone()),
            (Some("nothing.example.com"), default.clone()),
            (Some("APP.example.com:8443"), to(b)),
            (Some("app.example.com."), to(b)),
            // The wildcard covers any depth; b's ingress answers it at the edge
            // (paths are not matched).
            (Some("a.b.wild.example.com"), status(418)),
            (Some("wild.example.com"), default.clone()),
            (Some("plain.example.com"), default.clone()),
            (Some("dns-only.example.com"), default.clone()),
            (Some("ghost.example.com"), super::tunnel_error()),
        ];
        for (host, want) in table {
            assert_eq!(decide(&cloud, startup, host), want, "{host:?}");
        }
        // Without a configuration the tunnel gets every routed name; deleted, none.
        let (mut cloud, startup, b) = super::tests::cloud();
        let entry = cloud.tunnel_mut(b).expect("b");
        entry.config = None;
        assert_eq!(decide(&cloud, startup, Some("x.wild.example.com")), to(b));
        cloud.tunnel_mut(b).expect("b").deleted_at = Some("now".to_owned());
        assert_eq!(
            decide(&cloud, startup, Some("app.example.com")),
            super::tunnel_error()
        );
    }

    #[test]
    fn host_names_lose_ports_and_case() {
        assert_eq!(host_name("App.Example.COM:8080"), "app.example.com");
        assert_eq!(host_name("app.example.com."), "app.example.com");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
    }

    #[test]
    fn ingress_hostnames_match_like_cloudflared() {
        assert!(hostname_matches("", "a.example.com"));
        assert!(hostname_matches("*", "a.example.com"));
        assert!(hostname_matches("*.example.com", "a.b.example.com"));
        assert!(!hostname_matches("*.example.com", "example.com"));
        assert!(hostname_matches("A.example.com", "a.example.com"));
        assert!(!hostname_matches("b.example.com", "a.example.com"));
    }
}
