//! The loop that keeps Cloudflare in step with the tunnel planes: on every change
//! of the [`SyncInputs`] (after a short pause, so a burst of changes costs one
//! sync) and at least every [`RESYNC`], while this controller leads, it reads the
//! API tokens through the Kubernetes API, syncs every account
//! ([`apply::sync_account`]), restores a catch-all ingress on tunnels no Gateway
//! serves any more and plans their accounts' DNS once more so their records go,
//! then publishes the [`SyncStatus`] (waking a status write when it changed).
//! API tokens are held in memory only and never logged.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use culvert_cloudflare::dns::OwnerId;
use culvert_cloudflare::{AccountId, ApiToken, Client, TunnelId, ingress};
use tokio::sync::watch;

use super::apply::{self, AccountReport};
use super::status::SyncStatus;
use super::{CredentialRef, SyncInputs, TunnelSync};
use crate::cluster::Cluster;
use crate::run::CloudflareSettings;

/// Longest time between two syncs: drift at Cloudflare (a record deleted by
/// hand) is repaired within it.
pub const RESYNC: Duration = Duration::from_secs(300);

/// How long a change waits for more before the sync starts.
const SETTLE: Duration = Duration::from_millis(300);

/// What earlier syncs wrote, to undo when it is no longer wanted.
#[derive(Default)]
struct Written {
    /// Tunnels whose ingress was written, with their account and credential.
    tunnels: BTreeMap<String, (String, CredentialRef)>,
    /// Accounts synced, with a credential.
    accounts: BTreeMap<String, CredentialRef>,
}

/// Runs syncs until `stop` turns true.
pub async fn run(
    cluster: Cluster,
    settings: CloudflareSettings,
    mut inputs: watch::Receiver<Option<Arc<SyncInputs>>>,
    mut leader: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
    status: Arc<watch::Sender<SyncStatus>>,
    wake: Arc<watch::Sender<u64>>,
) {
    let owner = match OwnerId::new(&settings.owner_id) {
        Ok(owner) => owner,
        Err(error) => {
            tracing::error!(%error, "no Cloudflare sync: the DNS owner id is unusable");
            return;
        }
    };
    let mut written = Written::default();
    let mut clients = Clients::new(settings.api_url.clone());
    loop {
        let current = inputs.borrow_and_update().clone();
        let leading = *leader.borrow_and_update();
        if let (Some(current), true) = (current, leading) {
            let synced = Box::pin(sync_all(
                &cluster,
                &mut clients,
                &owner,
                &current,
                &mut written,
                settings.dry_run,
            ))
            .await;
            if status.send_if_modified(|now| {
                let changed = *now != synced;
                *now = synced;
                changed
            }) {
                wake.send_modify(|n| *n += 1);
            }
        }
        tokio::select! {
            _ = inputs.changed() => tokio::time::sleep(SETTLE).await,
            _ = leader.changed() => {}
            _ = stop.changed() => {}
            () = tokio::time::sleep(RESYNC) => {}
        }
        if *stop.borrow() {
            return;
        }
    }
}

/// API clients by credential, sharing one connection pool and rate budget.
struct Clients {
    api_url: String,
    first: Option<Client>,
    by_credential: BTreeMap<CredentialRef, (String, Client)>,
}

impl Clients {
    fn new(api_url: String) -> Self {
        Self {
            api_url,
            first: None,
            by_credential: BTreeMap::new(),
        }
    }

    /// The client for the API token in `credential`, read anew on every sync
    /// (a rotated token takes effect on the next one).
    async fn for_credential(
        &mut self,
        cluster: &Cluster,
        credential: &CredentialRef,
    ) -> Result<Client, String> {
        let value = cluster
            .read_secret(&credential.namespace, &credential.secret)
            .await
            .map_err(|e| format!("reading the Cloudflare API token: {e}"))?;
        if let Some((known, client)) = self.by_credential.get(credential) {
            if *known == value {
                return Ok(client.clone());
            }
        }
        let token = ApiToken::new(value.trim()).map_err(|e| e.to_string())?;
        let client = match &self.first {
            Some(first) => first.with_token(token),
            None => {
                let client = Client::builder(token)
                    .base_url(&self.api_url)
                    .build()
                    .map_err(|e| e.to_string())?;
                self.first = Some(client.clone());
                client
            }
        };
        self.by_credential
            .insert(credential.clone(), (value, client.clone()));
        Ok(client)
    }
}

/// One sync of everything `inputs` wants, and the undoing of what it no longer
/// wants.
async fn sync_all(
    cluster: &Cluster,
    clients: &mut Clients,
    owner: &OwnerId,
    inputs: &SyncInputs,
    written: &mut Written,
    dry_run: bool,
) -> SyncStatus {
    let mut status = SyncStatus {
        dry_run,
        ..SyncStatus::default()
    };
    let mut by_account: BTreeMap<&str, Vec<&TunnelSync>> = BTreeMap::new();
    for tunnel in inputs.tunnels.values() {
        by_account.entry(&tunnel.account).or_default().push(tunnel);
    }
    for (account, tunnels) in &by_account {
        let report = match tunnels.iter().find_map(|t| t.credential.as_ref()) {
            None => failed(
                tunnels,
                "no Cloudflare API token is configured (cloudflareCredentialsSecretRef)",
            ),
            Some(credential) => match clients.for_credential(cluster, credential).await {
                Err(why) => failed(tunnels, &why),
                Ok(client) => {
                    written
                        .accounts
                        .insert((*account).to_owned(), credential.clone());
                    for tunnel in tunnels {
                        written.tunnels.insert(
                            tunnel.tunnel.clone(),
                            ((*account).to_owned(), credential.clone()),
                        );
                    }
                    apply::sync_account(&client, owner, account, tunnels, dry_run).await
                }
            },
        };
        record(&mut status, tunnels, &report);
    }
    undo(
        cluster,
        clients,
        owner,
        inputs,
        &by_account,
        written,
        dry_run,
    )
    .await;
    status
}

/// Restores a catch-all ingress on tunnels no longer wanted, and plans the DNS
/// of accounts no tunnel is wanted in any more (with nothing desired, so their
/// records go).
async fn undo(
    cluster: &Cluster,
    clients: &mut Clients,
    owner: &OwnerId,
    inputs: &SyncInputs,
    by_account: &BTreeMap<&str, Vec<&TunnelSync>>,
    written: &mut Written,
    dry_run: bool,
) {
    let gone: Vec<String> = written
        .tunnels
        .keys()
        .filter(|t| !inputs.tunnels.contains_key(*t))
        .cloned()
        .collect();
    for tunnel in gone {
        let Some((account, credential)) = written.tunnels.get(&tunnel).cloned() else {
            continue;
        };
        let outcome = match (
            AccountId::from_str(&account),
            TunnelId::from_str(&tunnel),
            clients.for_credential(cluster, &credential).await,
        ) {
            (Ok(account), Ok(tunnel_id), Ok(client)) => {
                apply::write_ingress(
                    &client,
                    &account,
                    &tunnel_id,
                    &ingress::catch_all_only(),
                    dry_run,
                )
                .await
            }
            (_, _, Err(why)) => Err(why),
            _ => Err("an unusable account or tunnel id".to_owned()),
        };
        match outcome {
            Ok(_) => {
                written.tunnels.remove(&tunnel);
            }
            Err(error) => {
                tracing::warn!(%tunnel, %error, "the ingress of a tunnel no longer served was not reset")
            }
        }
    }
    let idle: Vec<String> = written
        .accounts
        .keys()
        .filter(|a| !by_account.contains_key(a.as_str()))
        .cloned()
        .collect();
    for account in idle {
        let Some(credential) = written.accounts.get(&account).cloned() else {
            continue;
        };
        let Ok(client) = clients.for_credential(cluster, &credential).await else {
            continue;
        };
        let report = apply::sync_account(&client, owner, &account, &[], dry_run).await;
        if report.failures.is_empty() {
            written.accounts.remove(&account);
        }
    }
}

/// A report failing every one of `tunnels` for `why`.
fn failed(tunnels: &[&TunnelSync], why: &str) -> AccountReport {
    AccountReport {
        failures: tunnels
            .iter()
            .map(|t| (t.tunnel.clone(), why.to_owned()))
            .collect(),
        ..AccountReport::default()
    }
}

/// Folds an account's `report` into `status`, by Gateway and route.
fn record(status: &mut SyncStatus, tunnels: &[&TunnelSync], report: &AccountReport) {
    let conflicted: BTreeSet<_> = report
        .conflicts
        .iter()
        .map(|c| (c.route.clone(), c.gateway.clone()))
        .collect();
    for tunnel in tunnels {
        let failure = report.failures.get(&tunnel.tunnel).cloned();
        for gateway in &tunnel.gateways {
            status.gateways.insert(gateway.clone(), failure.clone());
        }
        if failure.is_some() {
            continue;
        }
        for route in &tunnel.routes {
            let key = (route.route.clone(), route.gateway.clone());
            if !conflicted.contains(&key) {
                status.routes.insert(key);
            }
        }
    }
    for conflict in &report.conflicts {
        status.conflicts.insert(
            (conflict.route.clone(), conflict.gateway.clone()),
            conflict.message.clone(),
        );
    }
}
