//! DNS records of the simulated zones: the record type, its validation and the
//! conflict rules of the v4 API (a record identical to an existing one (type, name,
//! content) is `81058`; a CNAME where an A, AAAA or CNAME of the name exists, or any
//! record where a CNAME exists, is `81053`), and the lookup the front door routes
//! by ([`Records::for_host`]: exact name, else the closest wildcard). It knows
//! nothing of tunnels or the account around the zones.

use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use culvert_tunnel_proto::Uuid;

use super::error::{ApiError, internal};
use super::time::now_rfc3339;
use crate::random::random_hex;

/// The suffix of a tunnel's CNAME target (`<tunnel-id>.cfargotunnel.com`).
pub(crate) const TUNNEL_TARGET_SUFFIX: &str = ".cfargotunnel.com";

/// One zone of the account.
#[derive(Debug, Clone)]
pub(crate) struct Zone {
    pub(crate) id: String,
    pub(crate) name: String,
}

/// One DNS record.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) id: String,
    pub(crate) zone_id: String,
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) content: String,
    pub(crate) proxied: bool,
    pub(crate) ttl: u32,
    pub(crate) comment: Option<String>,
    pub(crate) created_on: String,
    pub(crate) modified_on: String,
}

impl Record {
    pub(crate) fn to_json(&self, zone_name: &str) -> Value {
        json!({
            "id": self.id,
            "zone_id": self.zone_id,
            "zone_name": zone_name,
            "name": self.name,
            "type": self.kind,
            "content": self.content,
            "proxied": self.proxied,
            "ttl": self.ttl,
            "comment": self.comment,
            "created_on": self.created_on,
            "modified_on": self.modified_on,
        })
    }

    /// The tunnel this record routes to: a proxied CNAME to
    /// `<tunnel-id>.cfargotunnel.com`.
    pub(crate) fn tunnel_target(&self) -> Option<Uuid> {
        if self.kind != "CNAME" || !self.proxied {
            return None;
        }
        let content = self.content.trim_end_matches('.').to_ascii_lowercase();
        content
            .strip_suffix(TUNNEL_TARGET_SUFFIX)
            .and_then(|id| id.parse().ok())
    }
}

/// A `POST`/`PUT /dns_records` body.
#[derive(Debug, Deserialize)]
pub(crate) struct RecordBody {
    #[serde(rename = "type")]
    kind: String,
    name: String,
    content: String,
    #[serde(default)]
    proxied: Option<bool>,
    #[serde(default)]
    ttl: Option<u32>,
    #[serde(default)]
    comment: Option<String>,
}

/// Record types the simulator stores.
const RECORD_TYPES: &[&str] = &["A", "AAAA", "CNAME", "TXT", "MX", "NS", "CAA", "SRV"];

/// Bounds on what a client may store (everything from outside is bounded).
const MAX_NAME: usize = 253;
const MAX_CONTENT: usize = 4096;
const MAX_RECORDS: usize = 10_000;

/// The records of every zone of the account, in creation order.
#[derive(Debug, Default)]
pub(crate) struct Records(Vec<Record>);

impl Records {
    /// Every record, in creation order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, Record> {
        self.0.iter()
    }

    pub(crate) fn create(&mut self, zone: &Zone, body: RecordBody) -> Result<Record, ApiError> {
        if self.0.len() >= MAX_RECORDS {
            return Err(ApiError::bad_request(81045, "Record quota exceeded."));
        }
        let record = self.checked(zone, body, None)?;
        self.0.push(record.clone());
        Ok(record)
    }

    pub(crate) fn replace(
        &mut self,
        zone: &Zone,
        id: &str,
        body: RecordBody,
    ) -> Result<Record, ApiError> {
        let Some(index) = self
            .0
            .iter()
            .position(|r| r.zone_id == zone.id && r.id == id)
        else {
            return Err(record_not_found());
        };
        let mut record = self.checked(zone, body, Some(id))?;
        if let Some(old) = self.0.get_mut(index) {
            record.id = old.id.clone();
            record.created_on = old.created_on.clone();
            *old = record.clone();
        }
        Ok(record)
    }

    pub(crate) fn delete(&mut self, zone: &Zone, id: &str) -> Result<Value, ApiError> {
        let before = self.0.len();
        self.0.retain(|r| !(r.zone_id == zone.id && r.id == id));
        if self.0.len() == before {
            return Err(record_not_found());
        }
        Ok(json!({ "id": id }))
    }

    /// Validates a record body against the zone and the conflict rules, ignoring
    /// the record `replacing` (a `PUT`).
    fn checked(
        &self,
        zone: &Zone,
        body: RecordBody,
        replacing: Option<&str>,
    ) -> Result<Record, ApiError> {
        let kind = body.kind.trim().to_ascii_uppercase();
        if !RECORD_TYPES.contains(&kind.as_str()) {
            return Err(ApiError::bad_request(
                1004,
                format!(
                    "DNS Validation Error: unsupported record type {:?}",
                    body.kind
                ),
            ));
        }
        let name = full_name(&body.name, &zone.name)?;
        let content = body.content.trim().to_owned();
        if content.is_empty() || content.len() > MAX_CONTENT {
            return Err(ApiError::bad_request(
                9007,
                "Content for the record is invalid (empty or too long).",
            ));
        }
        match kind.as_str() {
            "A" if content.parse::<std::net::Ipv4Addr>().is_err() => {
                return Err(ApiError::bad_request(
                    9005,
                    "Content for A record must be a valid IPv4 address.",
                ));
            }
            "AAAA" if content.parse::<std::net::Ipv6Addr>().is_err() => {
                return Err(ApiError::bad_request(
                    9006,
                    "Content for AAAA record must be a valid IPv6 address.",
                ));
            }
            _ => {}
        }
        let proxied = body.proxied.unwrap_or(false);
        if proxied && !matches!(kind.as_str(), "A" | "AAAA" | "CNAME") {
            return Err(ApiError::bad_request(
                9004,
                "This record type cannot be proxied.",
            ));
        }
        let ttl = body.ttl.unwrap_or(1);
        if ttl != 1 && !(30..=86_400).contains(&ttl) {
            return Err(ApiError::bad_request(
                9021,
                "Invalid TTL. Must be between 30 and 86400 seconds, or 1 for Automatic.",
            ));
        }
        let content = if kind == "CNAME" {
            content.trim_end_matches('.').to_ascii_lowercase()
        } else {
            content
        };
        let others = || {
            self.0
                .iter()
                .filter(|r| r.zone_id == zone.id && r.name == name)
                .filter(|r| Some(r.id.as_str()) != replacing)
        };
        if others().any(|r| r.kind == kind && r.content == content) {
            return Err(ApiError::bad_request(
                81058,
                "An identical record already exists.",
            ));
        }
        let address_like = |k: &str| matches!(k, "A" | "AAAA" | "CNAME");
        if (kind == "CNAME" && others().any(|r| address_like(&r.kind)))
            || others().any(|r| r.kind == "CNAME")
        {
            return Err(ApiError::bad_request(
                81053,
                "An A, AAAA, or CNAME record with that host already exists.",
            ));
        }
        let now = now_rfc3339();
        Ok(Record {
            id: random_hex::<16>().map_err(|e| internal(&e))?,
            zone_id: zone.id.clone(),
            name,
            kind,
            content,
            proxied,
            ttl,
            comment: body.comment.filter(|c| !c.is_empty()),
            created_on: now.clone(),
            modified_on: now,
        })
    }

    /// The records deciding where `host` goes: those named `host`, else those of
    /// the closest wildcard (`*.<suffix>`, any depth below it), as DNS resolves.
    pub(crate) fn for_host(&self, host: &str) -> Vec<&Record> {
        let exact: Vec<&Record> = self.0.iter().filter(|r| r.name == host).collect();
        if !exact.is_empty() {
            return exact;
        }
        let mut rest = host;
        while let Some((_, parent)) = rest.split_once('.') {
            let wildcard = format!("*.{parent}");
            let matched: Vec<&Record> = self.0.iter().filter(|r| r.name == wildcard).collect();
            if !matched.is_empty() {
                return matched;
            }
            rest = parent;
        }
        Vec::new()
    }
}

pub(crate) fn record_not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, 81044, "Record does not exist.")
}

/// A record name made absolute in `zone`: `@` is the apex, a name outside the
/// zone gets the zone appended (as the API does), lowercase, no final dot.
fn full_name(name: &str, zone: &str) -> Result<String, ApiError> {
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    let full = if name == "@" || name == zone {
        zone.to_owned()
    } else if name.ends_with(&format!(".{zone}")) {
        name.clone()
    } else {
        format!("{name}.{zone}")
    };
    let valid_label = |(i, l): (usize, &str)| {
        !l.is_empty()
            && l.len() <= 63
            && (l == "*" && i == 0
                || l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    };
    if name.is_empty() || full.len() > MAX_NAME || !full.split('.').enumerate().all(valid_label) {
        return Err(ApiError::bad_request(
            9005,
            format!("DNS name is invalid: {name:?}"),
        ));
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::full_name;
    use crate::api::state::{Cloud, TunnelEntry};
    use crate::random::generate_token;

    fn cloud() -> Cloud {
        let token = generate_token().expect("random");
        Cloud::new(
            token.account_tag.clone(),
            "token".to_owned(),
            &["Example.com.".to_owned(), "example.com".to_owned()],
            TunnelEntry::new(&token, "startup", "cloudflare"),
        )
        .expect("random")
    }

    fn add(cloud: &mut Cloud, kind: &str, name: &str, content: &str) -> Result<String, u32> {
        let zone = cloud.zones[0].clone();
        let body = serde_json::from_value(json!({"type": kind, "name": name, "content": content}))
            .expect("valid body");
        cloud
            .records
            .create(&zone, body)
            .map(|r| r.id)
            .map_err(|e| e.code)
    }

    #[test]
    fn zones_are_normalised_and_unique() {
        let cloud = cloud();
        assert_eq!(cloud.zones.len(), 1);
        assert_eq!(cloud.zones[0].name, "example.com");
        assert_eq!(cloud.zones[0].id.len(), 32);
    }

    #[test]
    fn names_are_made_absolute_and_checked() {
        let zone = "example.com";
        for (name, want) in [
            ("@", Some("example.com")),
            ("example.com", Some("example.com")),
            ("WWW", Some("www.example.com")),
            ("www.example.com.", Some("www.example.com")),
            ("*.apps", Some("*.apps.example.com")),
            ("_owner.app", Some("_owner.app.example.com")),
            ("a.*.example.com", None),
            ("a..b", None),
            ("", None),
            ("sp ace", None),
        ] {
            assert_eq!(full_name(name, zone).ok().as_deref(), want, "{name:?}");
        }
    }

    #[test]
    fn conflict_rules() {
        let mut cloud = cloud();
        assert!(add(&mut cloud, "A", "a", "192.0.2.1").is_ok());
        // More A records of a name are fine, an identical one is not.
        assert!(add(&mut cloud, "A", "a", "192.0.2.2").is_ok());
        assert_eq!(add(&mut cloud, "A", "a", "192.0.2.1"), Err(81058));
        assert_eq!(add(&mut cloud, "CNAME", "a", "t.example.net"), Err(81053));
        assert!(add(&mut cloud, "TXT", "a", "\"x\"").is_ok());
        // A TXT record does not block a CNAME; a CNAME blocks everything.
        assert!(add(&mut cloud, "TXT", "c", "\"x\"").is_ok());
        let c = add(&mut cloud, "CNAME", "c", "T.example.net.").expect("cname");
        assert_eq!(add(&mut cloud, "CNAME", "c", "t.example.net"), Err(81058));
        assert_eq!(add(&mut cloud, "TXT", "c", "\"y\""), Err(81053));
        assert_eq!(add(&mut cloud, "AAAA", "c", "2001:db8::1"), Err(81053));
        // Replacing the CNAME itself is not a conflict with itself.
        let zone = cloud.zones[0].clone();
        let body = serde_json::from_value(
            json!({"type": "CNAME", "name": "c", "content": "u.example.net"}),
        )
        .expect("valid body");
        let replaced = cloud.records.replace(&zone, &c, body).expect("replace");
        assert_eq!(replaced.content, "u.example.net");
        assert_eq!(replaced.id, c);
        // Validation.
        assert_eq!(add(&mut cloud, "A", "v", "not-an-ip"), Err(9005));
        assert_eq!(add(&mut cloud, "AAAA", "v", "192.0.2.1"), Err(9006));
        assert_eq!(add(&mut cloud, "BOGUS", "v", "x"), Err(1004));
        assert_eq!(add(&mut cloud, "TXT", "v", ""), Err(9007));
    }

    #[test]
    fn lookups_prefer_the_name_then_the_closest_wildcard() {
        let mut cloud = cloud();
        for (kind, name, content) in [
            ("A", "*", "192.0.2.1"),
            ("A", "*.apps", "192.0.2.2"),
            ("A", "x.apps", "192.0.2.3"),
        ] {
            add(&mut cloud, kind, name, content).expect("no conflict");
        }
        let content = |host: &str| -> Vec<String> {
            cloud
                .records
                .for_host(host)
                .iter()
                .map(|r| r.content.clone())
                .collect()
        };
        assert_eq!(content("x.apps.example.com"), ["192.0.2.3"]);
        assert_eq!(content("y.apps.example.com"), ["192.0.2.2"]);
        assert_eq!(content("a.b.y.apps.example.com"), ["192.0.2.2"]);
        assert_eq!(content("other.example.com"), ["192.0.2.1"]);
        assert_eq!(content("example.com"), Vec::<String>::new());
        assert_eq!(content("example.org"), Vec::<String>::new());
    }
}
