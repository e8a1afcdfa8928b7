//! Names and label values derived from a Gateway's name, always within Kubernetes
//! limits.
//!
//! A Gateway name is a DNS-1123 subdomain of up to 253 characters and may hold
//! dots; a Service name is a DNS-1035 label of at most 63 and a label value is at
//! most 63. So a derived name keeps the Gateway's name when it fits as is and is
//! otherwise cut and given `-<hash>`, eight hex digits of an FNV-1a hash of the
//! whole Gateway name: two Gateways whose names share a long prefix, or differ only
//! by `.` against `-`, still get different objects. The hash only separates names,
//! it protects nothing, so FNV is enough. Nothing here panics on any input: the
//! Gateway name is untrusted. Start at [`PlaneNames::new`].

/// Longest Service name and label value (a DNS-1123 / DNS-1035 label).
pub const MAX_NAME: usize = 63;

/// Prefix of every rendered object's name.
const PREFIX: &str = "culvert-";

/// What a class's shared plane's names start with after [`PREFIX`].
const CLASS_PREFIX: &str = "class-";

/// Suffix of the headless config Service's name.
const CONFIG_SUFFIX: &str = "-config";

/// Hex digits of the hash suffix.
const HASH_DIGITS: usize = 8;

/// The names of one Gateway's rendered objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneNames {
    /// The Deployment, and also the NetworkPolicy, PodDisruptionBudget and
    /// HorizontalPodAutoscaler (kinds have separate name spaces): `culvert-<gateway>`.
    pub workload: String,
    /// The headless Service of the config API: `culvert-<gateway>-config`.
    pub config_service: String,
    /// The config API token Secret the controller generates:
    /// `culvert-<gateway>-token`.
    pub token_secret: String,
    /// The config API's serving certificate Secret: `culvert-<gateway>-config-tls`.
    pub config_tls_secret: String,
    /// A shared plane's copy of its class tunnel's token: `culvert-<gateway>-tunnel`.
    pub tunnel_secret: String,
    /// Which plane, as a label value (`app.kubernetes.io/instance`, and for a
    /// Gateway's plane `gateway.networking.k8s.io/gateway-name`): the Gateway's
    /// name, or `class-<class>` for a class's shared plane.
    pub instance_label: String,
}

impl PlaneNames {
    /// The names for the Gateway named `gateway`.
    pub fn new(gateway: &str) -> Self {
        let base = base_name(gateway);
        Self {
            config_service: format!("{base}{CONFIG_SUFFIX}"),
            token_secret: format!("{base}-token"),
            config_tls_secret: format!("{base}{CONFIG_SUFFIX}-tls"),
            tunnel_secret: format!("{base}-tunnel"),
            workload: base,
            instance_label: label_value(gateway),
        }
    }

    /// The names for the shared plane of the GatewayClass `class`:
    /// `culvert-class-<class>`, rendered in the controller's namespace, where no
    /// Gateway is expected to be called `class-<class>`.
    pub fn for_class(class: &str) -> Self {
        Self::new(&format!("{CLASS_PREFIX}{class}"))
    }

    /// The DNS name the config API certificate must hold and the controller dials:
    /// `<config service>.<namespace>.svc`.
    pub fn config_server_name(&self, namespace: &str) -> String {
        format!("{}.{namespace}.svc", self.config_service)
    }
}

/// `culvert-<gateway>`, short enough that the longest suffix (`-config`) still
/// makes a DNS-1035 label of at most [`MAX_NAME`], so every object of a plane shares
/// one stem. The Gateway name is kept when it is already lowercase letters, digits
/// and `-` and fits; otherwise every other character becomes `-`, the result is
/// cut to fit, and `-<hash>` is appended.
pub fn base_name(gateway: &str) -> String {
    let suffix = CONFIG_SUFFIX;
    let unchanged = !gateway.is_empty()
        && gateway
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !gateway.ends_with('-');
    if unchanged && PREFIX.len() + gateway.len() + suffix.len() <= MAX_NAME {
        return format!("{PREFIX}{gateway}");
    }
    let sanitized: String = gateway
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    let room = MAX_NAME.saturating_sub(PREFIX.len() + 1 + HASH_DIGITS + suffix.len());
    // Only ASCII is left, so any byte index is a character boundary.
    let stem = sanitized
        .get(..room.min(sanitized.len()))
        .unwrap_or_default()
        .trim_matches('-');
    let hash = short_hash(gateway);
    if stem.is_empty() {
        format!("{PREFIX}{hash}")
    } else {
        format!("{PREFIX}{stem}-{hash}")
    }
}

/// `text` as a label value: unchanged when it is one already (at most 63 of
/// letters, digits, `-`, `_`, `.`, starting and ending alphanumeric); otherwise
/// other characters become `-`, the result is cut, and `-<hash>` is appended.
pub fn label_value(text: &str) -> String {
    if super::labels::check_label_value(text).is_ok() && !text.is_empty() {
        return text.to_owned();
    }
    let sanitized: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let room = MAX_NAME - 1 - HASH_DIGITS;
    let stem = sanitized
        .get(..room.min(sanitized.len()))
        .unwrap_or_default()
        .trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let hash = short_hash(text);
    if stem.is_empty() {
        hash
    } else {
        format!("{stem}-{hash}")
    }
}

/// Eight hex digits of the 64-bit FNV-1a hash of `text`, folded to 32 bits.
fn short_hash(text: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = text.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    });
    let folded = (hash ^ (hash >> 32)) & 0xffff_ffff;
    format!("{folded:08x}")
}
