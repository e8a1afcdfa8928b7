//! The HTTP front end: HTTPS (HTTP/1.1) on a loopback listener with bearer-token
//! auth, decoding a request into a verb on a target, consulting the injected fault
//! rules, calling the API semantics, and writing the answer (a JSON body, a
//! `Status`, a plain-text `404 page not found`, or a chunked watch stream). Every
//! answered request goes into the request log. Start at [`serve`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

use crate::api::{self, Patch, Target, WriteOptions};
use crate::error::Status;
use crate::list::{self, ListQuery};
use crate::query::url_query;
use crate::registry::Registry;
use crate::rules::{Action, RequestFacts, Verb};
use crate::state::{Inner, LoggedRequest};
use crate::tls::Material;
use crate::watch;

type Body = BoxBody<Bytes, std::io::Error>;

/// A running listener: where it listens and how to stop it.
pub(crate) struct Listener {
    pub(crate) addr: SocketAddr,
    pub(crate) stop: oneshot::Sender<()>,
    pub(crate) ca_pem: String,
}

fn material(inner: &Inner) -> std::io::Result<Material> {
    if let Some(material) = inner.tls.get() {
        return Ok(material.clone());
    }
    let fresh = Material::generate().map_err(std::io::Error::other)?;
    // Another task may have won the race; either way one material is kept.
    let _ = inner.tls.set(fresh);
    inner
        .tls
        .get()
        .cloned()
        .ok_or_else(|| std::io::Error::other("TLS material missing"))
}

/// Listens on `addr` until the returned listener's `stop` fires (or is dropped);
/// stopping cuts every open connection, watches included.
pub(crate) async fn serve(inner: Arc<Inner>, addr: SocketAddr) -> std::io::Result<Listener> {
    let material = material(&inner)?;
    let acceptor = TlsAcceptor::from(Arc::clone(&material.server));
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (stop, mut stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let inner = Arc::clone(&inner);
                    let acceptor = acceptor.clone();
                    connections.spawn(async move {
                        let Ok(tls) = acceptor.accept(stream).await else { return };
                        let service = service_fn(move |request| {
                            let inner = Arc::clone(&inner);
                            async move {
                                Ok::<_, std::convert::Infallible>(handle(&inner, request, addr).await)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        // Going down cuts every connection, watches included.
        connections.abort_all();
    });
    Ok(Listener {
        addr,
        stop,
        ca_pem: material.ca_pem,
    })
}

fn full(code: u16, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).map_err(|never| match never {}).boxed());
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    response
}

fn json_answer(code: u16, body: &Value) -> Response<Body> {
    full(code, "application/json", Bytes::from(body.to_string()))
}

fn status_answer(status: &Status) -> Response<Body> {
    let mut response = json_answer(status.code, &status.to_json());
    if let Some(seconds) = status.retry_after {
        if let Ok(value) = http::HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}

fn page_not_found() -> Response<Body> {
    full(
        404,
        "text/plain; charset=utf-8",
        Bytes::from_static(b"404 page not found\n"),
    )
}

/// A decoded request.
struct Received {
    method: String,
    path: String,
    query_text: String,
    query: BTreeMap<String, String>,
    watching: bool,
    content_type: Option<String>,
    partial: bool,
    body: Bytes,
}

#[allow(
    clippy::disallowed_methods,
    reason = "a request's arrival is stamped on the real clock for the fault rules"
)]
async fn handle(
    inner: &Arc<Inner>,
    request: Request<Incoming>,
    addr: SocketAddr,
) -> Response<Body> {
    let header_text = |name: header::HeaderName| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let authorized = header_text(header::AUTHORIZATION).as_deref()
        == Some(format!("Bearer {}", inner.token).as_str());
    let content_type = header_text(header::CONTENT_TYPE);
    let partial =
        header_text(header::ACCEPT).is_some_and(|a| a.contains("as=PartialObjectMetadata"));
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query_text = request.uri().query().unwrap_or_default().to_owned();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let query = url_query(&query_text);
    let watching = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    let incoming = Received {
        method,
        path,
        query_text,
        query,
        watching,
        content_type,
        partial,
        body,
    };
    let response = if authorized {
        answer(inner, &incoming, addr).await
    } else {
        status_answer(&Status::new(401, "Unauthorized", "Unauthorized"))
    };
    inner.log(LoggedRequest {
        method: incoming.method,
        path: incoming.path,
        query: incoming.query_text,
        content_type: incoming.content_type,
        body: incoming.body,
        status: response.status().as_u16(),
        time: SystemTime::now(),
    });
    response
}

fn verb_of(method: &str, target: &Target, watching: bool) -> Option<Verb> {
    Some(match (method, target.name.is_some()) {
        ("GET", true) => Verb::Get,
        ("GET", false) if watching => Verb::Watch,
        ("GET", false) => Verb::List,
        ("POST", false) => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        _ => return None,
    })
}

/// What the injected rules say about a request: a total delay, a failure to
/// answer instead, and whether another writer goes first.
#[derive(Default)]
struct Verdict {
    delay: Duration,
    fail: Option<Status>,
    concurrent_write: bool,
}

fn consult(inner: &Inner, facts: Option<&RequestFacts>, request: &Received) -> Verdict {
    let mut verdict = Verdict::default();
    let mut rules = inner.rules.lock().unwrap_or_else(PoisonError::into_inner);
    for rule in rules.iter_mut() {
        if !rule.matches(facts, &request.method, &request.path, request.watching) {
            continue;
        }
        let used = match &rule.action {
            Action::Delay(d) => {
                verdict.delay += *d;
                false
            }
            Action::Fail(status) if verdict.fail.is_none() => {
                verdict.fail = Some(status.clone());
                true
            }
            Action::ConcurrentWrite
                if !verdict.concurrent_write
                    && facts.is_some_and(|f| matches!(f.verb, Verb::Update | Verb::Patch)) =>
            {
                verdict.concurrent_write = true;
                true
            }
            Action::Fail(_) | Action::ConcurrentWrite => false,
        };
        if used {
            if let Some(n) = rule.remaining.as_mut() {
                *n = n.saturating_sub(1);
            }
        }
    }
    verdict
}

async fn answer(inner: &Arc<Inner>, request: &Received, addr: SocketAddr) -> Response<Body> {
    let (target, discovery) = {
        let registry = inner.registry();
        (
            api::target(&registry, &request.path),
            discovery(&registry, &request.path, inner, addr),
        )
    };
    let facts = target.as_ref().and_then(|t| {
        Some(RequestFacts {
            verb: verb_of(&request.method, t, request.watching)?,
            resource: t.kind.plural.clone(),
            kind: t.kind.kind.clone(),
            namespace: t.namespace.clone(),
            name: t.name.clone(),
            subresource: t.status.then(|| "status".to_owned()),
        })
    });
    let verdict = consult(inner, facts.as_ref(), request);
    if !verdict.delay.is_zero() {
        tokio::time::sleep(verdict.delay).await;
    }
    if let Some(mut status) = verdict.fail {
        if let (409, Some(t), Some(name)) = (
            status.code,
            target.as_ref(),
            target.as_ref().and_then(|t| t.name.as_deref()),
        ) {
            let retry_after = status.retry_after;
            status = api::conflict(&t.kind, name);
            status.retry_after = retry_after;
        }
        return status_answer(&status);
    }
    if let Some(body) = discovery {
        return json_answer(200, &body);
    }
    let (Some(target), Some(facts)) = (target, facts) else {
        return if api::target(&inner.registry(), &request.path).is_some() {
            status_answer(&Status::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            ))
        } else {
            page_not_found()
        };
    };
    if verdict.concurrent_write {
        api::concurrent_write(inner, &target);
    }
    match route(inner, request, target, facts) {
        Ok(response) => response,
        Err(status) => status_answer(&status),
    }
}

fn parse_json(body: &[u8]) -> Result<Value, Status> {
    serde_json::from_slice(body)
        .map_err(|e| Status::bad_request(format!("the body of the request is not valid JSON: {e}")))
}

fn route(
    inner: &Arc<Inner>,
    request: &Received,
    target: Target,
    facts: RequestFacts,
) -> Result<Response<Body>, Status> {
    let options = WriteOptions {
        field_manager: request.query.get("fieldManager").cloned(),
        force: request.query.get("force").is_some_and(|f| f == "true"),
    };
    let shown = |object: Value| {
        if request.partial {
            api::partial(&object)
        } else {
            object
        }
    };
    Ok(match facts.verb {
        Verb::Get => json_answer(200, &shown(api::get(inner, &target)?)),
        Verb::List | Verb::Watch => {
            let mut query = ListQuery::parse(&request.query, &target.kind)?;
            query.partial = request.partial;
            if facts.verb == Verb::List {
                return Ok(json_answer(200, &list::list(inner, &target, &query)?));
            }
            watch::check(inner, &query)?;
            let chunks = watch::start(Arc::clone(inner), target, query, facts);
            let stream = futures_util::stream::unfold(chunks, |mut chunks| async move {
                let chunk = chunks.recv().await?;
                Some((chunk.map(Frame::data), chunks))
            });
            let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            response
        }
        Verb::Create => json_answer(
            201,
            &api::create(inner, &target, parse_json(&request.body)?)?,
        ),
        Verb::Update => json_answer(
            200,
            &api::update(inner, &target, parse_json(&request.body)?, &options)?,
        ),
        Verb::Patch => {
            let media = request
                .content_type
                .as_deref()
                .and_then(|c| c.split(';').next())
                .unwrap_or_default()
                .trim();
            let patch = match media {
                "application/merge-patch+json" => Patch::Merge(parse_json(&request.body)?),
                "application/strategic-merge-patch+json" => {
                    Patch::Strategic(parse_json(&request.body)?)
                }
                "application/json-patch+json" => Patch::Json(parse_json(&request.body)?),
                "application/apply-patch+yaml" => Patch::Apply(
                    serde_yaml_ng::from_slice(&request.body)
                        .map_err(|e| Status::bad_request(format!("error decoding YAML: {e}")))?,
                ),
                _ => {
                    let accepted = if target.kind.custom {
                        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
                    } else {
                        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
                    };
                    return Err(Status::new(
                        415,
                        "UnsupportedMediaType",
                        format!(
                            "the body of the request was in an unknown format - accepted media types include: {accepted}"
                        ),
                    ));
                }
            };
            let (code, object) = api::patch(inner, &target, patch, &options)?;
            json_answer(code, &object)
        }
        Verb::Delete => {
            let options = (!request.body.is_empty())
                .then(|| parse_json(&request.body))
                .transpose()?;
            let (code, object) = api::delete(inner, &target, options.as_ref())?;
            json_answer(code, &object)
        }
    })
}

/// `/version` and the legacy discovery documents (`/api`, `/apis`, `/api/v1`,
/// `/apis/G`, `/apis/G/V`).
fn discovery(registry: &Registry, path: &str, inner: &Inner, addr: SocketAddr) -> Option<Value> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let groups = || {
        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for kind in registry.kinds().iter().filter(|k| !k.group.is_empty()) {
            let versions = groups.entry(kind.group.as_str()).or_default();
            if !versions.contains(&kind.version.as_str()) {
                versions.push(kind.version.as_str());
            }
        }
        groups
    };
    let group_json = |name: &str, versions: &[&str]| {
        let versions: Vec<Value> = versions
            .iter()
            .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
            .collect();
        json!({"name": name, "versions": versions, "preferredVersion": versions.first()})
    };
    match parts.as_slice() {
        ["version"] => {
            let (minor, git_version) = inner.profile().version();
            Some(
                json!({"major": "1", "minor": minor, "gitVersion": git_version,
                        "gitCommit": "culvert-fake-apiserver", "gitTreeState": "clean",
                        "platform": "linux/amd64"}),
            )
        }
        ["api"] => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr.to_string()}]})),
        ["apis"] => {
            let groups: Vec<Value> = groups()
                .iter()
                .map(|(name, versions)| group_json(name, versions))
                .collect();
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["apis", group] => groups().get(group).map(|versions| {
            let mut g = group_json(group, versions);
            g["kind"] = json!("APIGroup");
            g["apiVersion"] = json!("v1");
            g
        }),
        ["api", version] => resources(registry, "", version),
        ["apis", group, version] => resources(registry, group, version),
        _ => None,
    }
}

fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    if !registry.serves_group_version(group, version) {
        return None;
    }
    let mut resources = Vec::new();
    for kind in registry
        .kinds()
        .iter()
        .filter(|k| k.group == group && k.version == version)
    {
        resources.push(json!({
            "name": kind.plural, "singularName": kind.kind.to_lowercase(),
            "namespaced": kind.namespaced, "kind": kind.kind,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }));
        if kind.status {
            resources.push(json!({
                "name": format!("{}/status", kind.plural), "singularName": "",
                "namespaced": kind.namespaced, "kind": kind.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": group_version, "resources": resources}))
}
