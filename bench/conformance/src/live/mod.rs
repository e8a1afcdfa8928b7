//! The live conformance harness behind `culvert-conformance DIR --live`: the same
//! vector files as the static replay, but every exchange goes over real sockets
//! through a real data plane ([`Server`], one per file, configured through its config
//! API on each step) to echo backends on loopback, one per endpoint the translation
//! produced.
//!
//! What a request produced is read off the wire and off the echo backends (each
//! request carries a tag header, so copies and retries are told apart), turned into
//! the same `Observed` the static replay computes, and judged by the same
//! `check`. gRPC calls are unary `EchoRequest`s over h2c, judged by the
//! `grpc-status` that came back. TLSRoute exchanges (`scheme: tls`) open TLS with
//! the vector's SNI to TCP echo backends and are judged by their greeting (which
//! Service, whether it terminated TLS, the SNI it saw) and a line echoed through a
//! half-close. A request's `clientCertificate` is shown from the TLS Secret it
//! names. Exchanges that need what is not built yet are skipped with the reason:
//! TLS to backends.
//!
//! Gateways listen on their own loopback addresses (`127.0.N.1`) at the vectors'
//! ports, except that a privileged one (below 1024: 80, 443, ...) is moved up by
//! `PORT_SHIFT` (80 to 20080), so the harness runs as any user. What the port
//! shows through (a redirect's `Location` that keeps the listener's port) is
//! mapped back before it is judged.
//!
//! Start at [`LiveJudge::new`] and [`run_dir_live`].

pub(crate) mod client;
mod fleet;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Duration;

use crate::checks::Verdict;
use crate::observe::{Observed, check, check_distribution, check_mirrors};
use crate::prepare::EndpointOwners;
use crate::run::{ExchangeJudge, Tally, run_dir_with};
use crate::vector::{Exchange, RequestSpec};
use base64::Engine as _;
use bytes::Bytes;
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::Translation;
use culvert_router::outcome::{grpc_status, grpc_status_for_http};
use http::{HeaderName, HeaderValue, Request, Version};
use http_body_util::Full;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use client::{Answer, CLIENT_TIMEOUT, Target, Wire, exchange, tls_echo};
use culvert_proxy::{Error, ServeConfig, Server};
use fleet::Fleet;

/// The header that tags each request, so its arrival (and its copies) can be found.
const TAG: &str = "x-culvert-conformance-tag";
/// Seed of the data plane's random numbers in live runs.
const LIVE_SEED: u64 = 0x6375_6c76_6572_7421;
/// An empty `EchoRequest` with its gRPC length prefix: uncompressed, 0 bytes.
const EMPTY_GRPC_MESSAGE: &[u8] = &[0; 5];
/// How far a privileged vector port is moved up (see [`listen_port`]).
const PORT_SHIFT: u16 = 20_000;

/// The port the data plane listens on for a vector's `port`: the same one, or for
/// a privileged port (below 1024) that port plus [`PORT_SHIFT`].
fn listen_port(port: u16) -> u16 {
    if port < 1024 { port + PORT_SHIFT } else { port }
}

/// A `Location` as it would read with the vector's own ports: a port
/// [`listen_port`] moved is moved back, and left out when it is the scheme's
/// default (as the router leaves it out).
fn vector_location(location: &str) -> String {
    let Ok(uri) = location.parse::<http::Uri>() else {
        return location.to_owned();
    };
    let (Some(scheme), Some(host), Some(port)) = (uri.scheme_str(), uri.host(), uri.port_u16())
    else {
        return location.to_owned();
    };
    let Some(original) = port.checked_sub(PORT_SHIFT).filter(|p| *p < 1024) else {
        return location.to_owned();
    };
    let default = match scheme {
        "http" => 80,
        "https" => 443,
        _ => 0,
    };
    let port = if original == default {
        String::new()
    } else {
        format!(":{original}")
    };
    let path = uri.path_and_query().map_or("", |pq| pq.as_str());
    format!("{scheme}://{host}{port}{path}")
}

/// How long mirrored copies may take to arrive after a sample.
const MIRROR_SETTLE: Duration = Duration::from_millis(500);

/// Runs every vector file in `dir` live and renders the report (the static format).
pub fn run_dir_live(dir: &Path) -> Result<(String, Tally), String> {
    let mut failure = None;
    let result = run_dir_with(dir, &mut || match LiveJudge::new() {
        Ok(judge) => Box::new(judge),
        Err(err) => {
            failure = Some(err.chain());
            Box::new(Broken(err.chain()))
        }
    });
    match failure {
        Some(why) => Err(why),
        None => result,
    }
}

/// A judge that could not start: every exchange fails with why.
struct Broken(String);

impl ExchangeJudge for Broken {
    fn converge(&mut self, _: &Store, _: &Translation, _: &EndpointOwners) -> Vec<String> {
        Vec::new()
    }

    fn judge(&mut self, _: &Exchange) -> Verdict {
        Verdict::Fail(self.0.clone())
    }
}

/// Judges exchanges on real sockets through a data plane started for one file.
pub struct LiveJudge {
    runtime: tokio::runtime::Runtime,
    fleet: Fleet,
    server: Option<Server>,
    version: u64,
    /// Gateway addresses of the state being judged.
    addresses: BTreeMap<String, IpAddr>,
    /// Why the current state could not be served, if it could not.
    problem: Option<String>,
    tags: u64,
    /// `(chain PEM, key PEM)` of every TLS Secret, by `namespace/name`: what a
    /// request's `clientCertificate` names.
    client_certificates: BTreeMap<String, (String, String)>,
}

impl LiveJudge {
    /// A judge with its own client runtime; the data plane starts on the first state.
    pub fn new() -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        Ok(Self {
            runtime,
            fleet: Fleet::default(),
            server: None,
            version: 0,
            addresses: BTreeMap::new(),
            problem: None,
            tags: 0,
            client_certificates: BTreeMap::new(),
        })
    }

    fn serve(&mut self, translation: &Translation, owners: &EndpointOwners) -> Result<(), String> {
        let mut config = translation.merged_config().unwrap_or_default();
        for listener in &mut config.listeners {
            listener.port = listen_port(listener.port);
        }
        self.version += 1;
        config.version = self.version;
        self.runtime.block_on(self.fleet.rewrite(
            &mut config,
            owners,
            &self.client_certificates,
        ))?;
        match &self.server {
            None => {
                let serve = ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
                    .with_workers(NonZeroUsize::MIN)
                    // Weighted picks and mirror samples repeat run to run, so a
                    // sample's share is judged the same way every time.
                    .with_random_seed(LIVE_SEED)
                    .with_initial(config);
                self.server = Some(Server::start(serve).map_err(|err| err.chain())?);
            }
            Some(server) => {
                let control = server.control_addr();
                let body = serde_json::to_vec(&config).map_err(|err| err.to_string())?;
                let request = Request::put("/config")
                    .header("host", "control")
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .map_err(|err| err.to_string())?;
                let target = Target {
                    addr: control,
                    tls: None,
                    client_certificate: None,
                    wire: Wire::Http1,
                };
                let answer = self.runtime.block_on(exchange(&target, request, None))?;
                if answer.status != 200 {
                    return Err(format!(
                        "config refused: {}",
                        String::from_utf8_lossy(&answer.body)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The next request tag (also the request's `{UUID}`).
    fn next_tag(&mut self) -> String {
        self.tags += 1;
        tag(self.tags)
    }

    /// Sends one request of a sample, tagged `tag`, and observes it.
    fn observe(&mut self, spec: &RequestSpec, tag: &str, expect_timeout: bool) -> Observed {
        let failed = |why: String| Observed {
            failure: Some(why),
            ..Observed::default()
        };
        let Some(&ip) = self.addresses.get(&spec.gateway) else {
            return failed(format!("gateway {} has no address", spec.gateway));
        };
        if spec.scheme == "tls" {
            return self.observe_tls(spec, ip);
        }
        let (mut target, request) = match build(spec, ip, tag) {
            Ok(built) => built,
            Err(why) => return failed(why),
        };
        if let Some(name) = &spec.client_certificate {
            match self.client_certificates.get(name) {
                Some(pair) => target.client_certificate = Some(pair.clone()),
                None => return failed(format!("no TLS Secret {name} for the client certificate")),
            }
        }
        let before = self.fleet.counts();
        let sent = self.runtime.block_on(async {
            tokio::time::timeout(
                CLIENT_TIMEOUT,
                exchange(&target, request, spec.websocket_message.as_deref()),
            )
            .await
        });
        let answer = match sent {
            Ok(Ok(answer)) => answer,
            Ok(Err(why)) => return failed(why),
            Err(_) if expect_timeout => {
                return Observed {
                    status: Some(504),
                    ..Observed::default()
                };
            }
            Err(_) => return failed("client timed out".to_owned()),
        };
        let arrived: Vec<_> = self
            .fleet
            .arrived_since(&before)
            .into_iter()
            .filter(|(_, seen)| seen.header(TAG).contains(&tag))
            .collect();
        let mut observed = observed(&answer, &arrived, is_grpc(spec));
        observed.backend_client_certificate = arrived
            .iter()
            .rev()
            .find_map(|(_, seen)| seen.tls.as_ref()?.client_certificate.as_deref())
            .map(|der| self.secret_holding(der));
        observed
    }

    /// The TLS Secret whose leaf certificate is `der`, as `Secret namespace/name`,
    /// or a description of a certificate no Secret holds.
    fn secret_holding(&self, der: &[u8]) -> String {
        self.client_certificates
            .iter()
            .find(|(_, (chain, _))| {
                CertificateDer::pem_slice_iter(chain.as_bytes())
                    .next()
                    .and_then(Result::ok)
                    .is_some_and(|leaf| leaf.as_ref() == der)
            })
            .map_or_else(
                || format!("a certificate of {} bytes no Secret holds", der.len()),
                |(name, _)| format!("Secret {name}"),
            )
    }

    /// Opens a TLS echo exchange as `spec` says and observes it.
    fn observe_tls(&self, spec: &RequestSpec, ip: IpAddr) -> Observed {
        let addr = SocketAddr::new(ip, listen_port(spec.port));
        let sni = spec.sni.clone().unwrap_or_else(|| ip.to_string());
        let sent = self
            .runtime
            .block_on(async { tokio::time::timeout(CLIENT_TIMEOUT, tls_echo(addr, &sni)).await });
        match sent {
            Ok(Ok(echo)) => Observed {
                backend: Some(echo.service),
                terminated_by_backend: Some(echo.backend_terminated),
                backend_sni: echo.server_name,
                ..Observed::default()
            },
            Ok(Err(why)) => Observed {
                failure: Some(why),
                ..Observed::default()
            },
            Err(_) => Observed {
                failure: Some("client timed out".to_owned()),
                ..Observed::default()
            },
        }
    }

    /// Mirrored copies of the sample tagged `first..=last` that each Service got.
    fn mirror_copies(&self, before: &fleet::Counts, tags: &[String]) -> BTreeMap<String, u32> {
        let mut copies = BTreeMap::new();
        for (service, seen) in self.fleet.arrived_since(before) {
            if seen
                .header(TAG)
                .first()
                .is_some_and(|tag| tags.iter().any(|t| t == tag))
            {
                *copies.entry(service).or_default() += 1;
            }
        }
        copies
    }
}

impl ExchangeJudge for LiveJudge {
    fn converge(
        &mut self,
        store: &Store,
        translation: &Translation,
        owners: &EndpointOwners,
    ) -> Vec<String> {
        self.client_certificates = client_certificates(store);
        self.addresses = translation
            .gateways
            .iter()
            .filter_map(|((namespace, name), status)| {
                let ip = status.addresses.first()?.value.as_deref()?.parse().ok()?;
                Some((format!("{namespace}/{name}"), ip))
            })
            .collect();
        self.problem = self.serve(translation, owners).err();
        self.problem
            .iter()
            .map(|why| format!("live data plane: {why}"))
            .collect()
    }

    fn judge(&mut self, exchange: &Exchange) -> Verdict {
        if let Some(why) = &self.problem {
            return Verdict::Fail(format!("not served: {why}"));
        }
        let expect = &exchange.expect;
        let repeat = exchange.request.repeat.unwrap_or(1).max(1);
        let expect_timeout = expect.status.iter().any(|s| *s == 504 || *s == 408);
        let before = self.fleet.counts();
        let first_tag = self.tags + 1;
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for _ in 0..repeat {
            let tag = self.next_tag();
            let seen = self.observe(&exchange.request, &tag, expect_timeout);
            let mut expect = expect.clone();
            if let Some(path) = &mut expect.backend_sees_path {
                *path = path.replace("{UUID}", &uuid(&tag));
            }
            if let Err(why) = check(&expect, &seen) {
                return Verdict::Fail(why);
            }
            if let Some(backend) = seen.backend {
                *counts.entry(backend).or_default() += 1;
            }
        }
        if let Err(why) = check_distribution(expect, &counts, repeat) {
            return Verdict::Fail(why);
        }
        if !expect.mirrored_to.is_empty() {
            self.runtime
                .block_on(async { tokio::time::sleep(MIRROR_SETTLE).await });
            let tags: Vec<String> = (first_tag..=self.tags).map(tag).collect();
            let copies = self.mirror_copies(&before, &tags);
            if let Err(why) = check_mirrors(expect, &copies, repeat) {
                return Verdict::Fail(why);
            }
        }
        Verdict::Pass
    }
}

/// The certificate chain and key of every TLS Secret in `store`, by
/// `namespace/name`.
fn client_certificates(store: &Store) -> BTreeMap<String, (String, String)> {
    let text = |secret: &culvert_control_lite::model::Secret, key: &str| {
        let encoded = secret.data.get(key)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        String::from_utf8(bytes).ok()
    };
    store
        .secrets
        .iter()
        .filter_map(|((namespace, name), secret)| {
            let pair = (text(secret, "tls.crt")?, text(secret, "tls.key")?);
            Some((format!("{namespace}/{name}"), pair))
        })
        .collect()
}

/// The tag of the `n`-th request of this process.
fn tag(n: u64) -> String {
    format!("{}-{n}", std::process::id())
}

/// What `{UUID}` becomes in the request tagged `tag`: unique per request, as the
/// retry vectors need.
fn uuid(tag: &str) -> String {
    format!("uuid-{tag}")
}

/// Whether `spec` is a gRPC call.
fn is_grpc(spec: &RequestSpec) -> bool {
    spec.protocol.as_deref() == Some("gRPC")
}

/// The target and request a vector describes, tagged with `tag`.
fn build(
    spec: &RequestSpec,
    ip: IpAddr,
    tag: &str,
) -> Result<(Target, Request<Full<Bytes>>), String> {
    let https = spec.scheme == "https";
    let default_port = if https { 443 } else { 80 };
    let host = spec.host.clone().unwrap_or_else(|| {
        if spec.port == default_port {
            ip.to_string()
        } else {
            format!("{ip}:{}", spec.port)
        }
    });
    let grpc = is_grpc(spec);
    let wire = match spec.protocol.as_deref() {
        Some("HTTP/2" | "HTTP/2-prior-knowledge" | "gRPC") => Wire::Http2,
        Some("websocket") => Wire::WebSocket,
        _ => Wire::Http1,
    };
    let sni = https.then(|| {
        spec.sni
            .clone()
            .unwrap_or_else(|| culvert_router::host::normalize_request_host(&host).into_owned())
    });
    let path = spec
        .path
        .clone()
        .unwrap_or_else(|| "/".to_owned())
        .replace("{UUID}", &uuid(tag));
    let uri = match wire {
        Wire::Http2 => format!("{}://{host}{path}", if https { "https" } else { "http" }),
        _ => path,
    };
    let method = match (grpc, spec.method.as_deref()) {
        (true, _) => "POST",
        (false, method) => method.unwrap_or("GET"),
    };
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .version(if wire == Wire::Http2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        });
    if wire != Wire::Http2 {
        request = request.header("host", &host);
    }
    if grpc {
        request = request
            .header("content-type", "application/grpc")
            .header("te", "trailers");
    }
    for (name, value) in spec.headers.iter().chain(&spec.metadata) {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|err| err.to_string())?;
        let value = HeaderValue::from_str(value).map_err(|err| err.to_string())?;
        request = request.header(name, value);
    }
    if !spec.backend_response_headers.is_empty() {
        let list: Vec<String> = spec
            .backend_response_headers
            .iter()
            .map(|(name, value)| format!("{name}:{value}"))
            .collect();
        request = request.header("x-echo-set-header", list.join(","));
    }
    request = request.header(TAG, tag);
    let body = if grpc {
        Bytes::from_static(EMPTY_GRPC_MESSAGE)
    } else {
        Bytes::new()
    };
    let request = request
        .body(Full::new(body))
        .map_err(|err| format!("building the request: {err}"))?;
    let target = Target {
        addr: SocketAddr::new(ip, listen_port(spec.port)),
        tls: sni,
        client_certificate: None,
        wire,
    };
    Ok((target, request))
}

/// What the answer and the backends' records show. The serving backend is the one
/// the echo body names; failing that, the only Service that saw the request. A
/// gRPC call's status is its `grpc-status` (trailers, else a Trailers-Only head),
/// else what its HTTP status stands for.
fn observed(
    answer: &Answer,
    arrived: &[(String, culvert_bench::SeenRequest)],
    grpc: bool,
) -> Observed {
    let grpc_status = grpc.then(|| {
        answer
            .trailers
            .iter()
            .chain([&answer.headers])
            .find_map(grpc_status)
            .unwrap_or_else(|| grpc_status_for_http(answer.status))
    });
    let echo = serde_json::from_slice::<serde_json::Value>(&answer.body).ok();
    let echoed = |field: &str| {
        let echo = echo.as_ref()?;
        let namespace = echo.get("namespace")?.as_str()?;
        Some(format!("{namespace}/{}", echo.get(field)?.as_str()?))
    };
    let named = echoed("service");
    let backend = named.or_else(|| {
        let mut services: Vec<&str> = arrived.iter().map(|(s, _)| s.as_str()).collect();
        services.dedup();
        (services.len() == 1).then(|| services[0].to_owned())
    });
    let seen = backend.as_ref().and_then(|backend| {
        arrived
            .iter()
            .rev()
            .find(|(service, _)| service == backend)
            .map(|(_, seen)| seen)
    });
    let mut backend_headers = http::HeaderMap::new();
    if let Some(seen) = seen {
        for (name, value) in &seen.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                backend_headers.append(name, value);
            }
        }
    }
    Observed {
        status: Some(answer.status),
        failure: None,
        backend: backend.filter(|_| seen.is_some()),
        backend_pod: echoed("pod").filter(|_| seen.is_some()),
        backend_path: seen.map(|seen| seen.path.clone()),
        backend_host: seen.map(|seen| seen.host.clone()),
        backend_method: seen.map(|seen| seen.method.to_string()),
        backend_headers,
        response_headers: answer.headers.clone(),
        location: answer
            .headers
            .get(http::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .map(vector_location),
        terminated_by_backend: None,
        backend_sni: seen.and_then(|seen| seen.tls.as_ref()?.server_name.clone()),
        backend_client_certificate: None,
        protocol: Some(
            match answer.version {
                Version::HTTP_2 => "HTTP/2",
                Version::HTTP_10 => "HTTP/1.0",
                _ => "HTTP/1.1",
            }
            .to_owned(),
        ),
        websocket_echo: answer.websocket_echo.clone(),
        grpc_status,
    }
}

#[cfg(test)]
mod tests {
    use super::{listen_port, vector_location};

    #[test]
    fn privileged_ports_move_up_and_locations_move_back() {
        assert_eq!(listen_port(80), 20_080);
        assert_eq!(listen_port(443), 20_443);
        assert_eq!(listen_port(8080), 8080);
        assert_eq!(
            vector_location("http://a.example:20080/x?y=1"),
            "http://a.example/x?y=1"
        );
        assert_eq!(
            vector_location("https://a.example:20443/"),
            "https://a.example/"
        );
        assert_eq!(
            vector_location("https://a.example:20080/"),
            "https://a.example:80/"
        );
        assert_eq!(
            vector_location("http://a.example:8080/x"),
            "http://a.example:8080/x"
        );
        assert_eq!(vector_location("/relative"), "/relative");
    }
}
