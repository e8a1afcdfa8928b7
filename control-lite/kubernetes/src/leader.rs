//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's
//! `leaderelection` does it: every plane serves, only the holder of the Lease writes
//! status and events. The holder renews every [`LeaseConfig::retry`]; a candidate
//! takes the Lease over once the record it last saw has not changed for the lease
//! duration, measured on its own clock (so clock skew between nodes does not
//! matter). Every write names the `resourceVersion` it read, so two candidates
//! cannot both win. A holder that cannot renew within the duration steps down
//! before anyone else can take over.

#![allow(
    clippy::disallowed_methods,
    reason = "the cluster side owns its clock: Lease renewal deadlines"
)]

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;

/// Which Lease, who competes for it and how fast.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This process's identity (the pod name).
    pub identity: String,
    /// How long a holder's claim lasts without renewal.
    pub duration: Duration,
    /// How often the holder renews and candidates look.
    pub retry: Duration,
}

impl LeaseConfig {
    /// client-go's defaults: 15 s leases, renewed every 2 s.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            duration: Duration::from_secs(15),
            retry: Duration::from_secs(2),
        }
    }
}

/// The last Lease record seen, and when it was first seen in that form.
struct Seen {
    holder: Option<String>,
    renew: Option<String>,
    since: Instant,
}

/// Campaigns for the Lease until `stop` fires; `leader` says whether this process
/// holds it. On stop a holder releases the Lease so a successor need not wait.
pub async fn run(
    client: Client,
    config: LeaseConfig,
    leader: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let api: Api<Lease> = Api::namespaced(client, &config.namespace);
    let mut seen: Option<Seen> = None;
    let mut renewed = Instant::now();
    loop {
        match attempt(&api, &config, &mut seen).await {
            Ok(true) => {
                renewed = Instant::now();
                leader.send_if_modified(|held| !std::mem::replace(held, true));
            }
            Ok(false) => {
                leader.send_if_modified(|held| std::mem::replace(held, false));
            }
            Err(error) => {
                tracing::warn!(lease = %config.name, %error, "lease request failed");
                // Step down before the lease can have expired for the others.
                if *leader.borrow() && renewed.elapsed() >= config.duration.mul_f64(2.0 / 3.0) {
                    leader.send_replace(false);
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(config.retry) => {}
            _ = stop.changed() => break,
        }
    }
    if *leader.borrow() {
        leader.send_replace(false);
        if let Err(error) = release(&api, &config).await {
            tracing::warn!(lease = %config.name, %error, "releasing the lease failed");
        }
    }
}

/// One round: take, renew or watch the Lease. Returns whether this process holds it.
async fn attempt(
    api: &Api<Lease>,
    config: &LeaseConfig,
    seen: &mut Option<Seen>,
) -> Result<bool, kube::Error> {
    let now = MicroTime(Timestamp::now());
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                namespace: Some(config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(duration_seconds(config.duration)),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        };
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
    let renew = spec.renew_time.as_ref().map(|t| t.0.to_string());
    let unchanged = seen
        .as_ref()
        .is_some_and(|s| s.holder == holder && s.renew == renew);
    if !unchanged {
        *seen = Some(Seen {
            holder: holder.clone(),
            renew,
            since: Instant::now(),
        });
    }
    let ours = holder.as_deref() == Some(config.identity.as_str());
    let expired = holder.is_none()
        || seen
            .as_ref()
            .is_some_and(|s| s.since.elapsed() >= config.duration);
    if !ours && !expired {
        return Ok(false);
    }
    let mut spec = spec;
    if !ours {
        spec.acquire_time = Some(now.clone());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    }
    spec.holder_identity = Some(config.identity.clone());
    spec.lease_duration_seconds = Some(duration_seconds(config.duration));
    spec.renew_time = Some(now);
    lease.spec = Some(spec);
    // The read resourceVersion stays in `lease.metadata`: a replace over a newer
    // record fails with 409 instead of overwriting another candidate's win.
    match api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        Ok(_) => {
            *seen = None;
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Clears the holder so the next candidate takes over at once.
async fn release(api: &Api<Lease>, config: &LeaseConfig) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        return Ok(());
    };
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(());
    };
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    api.replace(&config.name, &PostParams::default(), &lease)
        .await
        .map(|_| ())
}

fn duration_seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs().max(1)).unwrap_or(i32::MAX)
}
