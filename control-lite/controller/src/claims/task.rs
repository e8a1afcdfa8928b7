//! [`Claims`] wires the claim checks into the controller, and [`ClaimTask`] runs
//! them: on each change of the claims and at least every [`CHECK_EVERY`], it reads
//! the credential Secrets (again when the claims changed, else every
//! [`READ_CREDENTIALS_EVERY`]), checks the claims that are due, and bumps the
//! source's `retranslate` whenever what some Gateway's claim is known to be has
//! changed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use culvert_cloudflare::{ApiToken, ClaimProver, Client};
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{Proof, Translation};
use culvert_kubernetes::SharedClaims;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{ClaimInputs, ClaimProofs, inputs};
use crate::cloudflare_sync::CredentialRef;
use crate::cluster::Cluster;
use crate::run::CloudflareSettings;

/// The longest time between two rounds of checks (each checks only the claims
/// that are due, so most rounds ask Cloudflare nothing).
pub const CHECK_EVERY: Duration = Duration::from_secs(5);

/// The longest time a credential Secret's value is reused; it is read again
/// sooner when the claims change.
pub const READ_CREDENTIALS_EVERY: Duration = Duration::from_secs(30);

/// The token the shared client is built with. Never sent: every check replaces it
/// with the claim's own credential.
const UNUSED_TOKEN: &str = "unused";

/// What the translation is told, as last compared: whether proof is available, and
/// the claims not unchecked.
type View = (bool, BTreeMap<NamespacedName, Proof>);

/// The claim checks of one controller: the checker the source asks, the channel its
/// translation hook feeds, and the signal that makes it translate again.
pub struct Claims {
    proofs: Arc<ClaimProofs>,
    /// `None` until the first translation.
    inputs: Arc<watch::Sender<Option<Arc<ClaimInputs>>>>,
    retranslate: Arc<watch::Sender<u64>>,
}

impl Claims {
    /// Checks with a client for the API at `settings.api_url`. Fails only on
    /// settings the client refuses (a URL that is not `https://`, or `http://` off
    /// loopback); nothing is sent yet.
    pub fn new(settings: &CloudflareSettings) -> Result<Self, culvert_cloudflare::Error> {
        let client = Client::builder(ApiToken::new(UNUSED_TOKEN)?)
            .base_url(settings.api_url.clone())
            .build()?;
        Ok(Self {
            proofs: Arc::new(ClaimProofs::new(Arc::new(ClaimProver::new(client)))),
            inputs: Arc::new(watch::Sender::new(None)),
            retranslate: Arc::new(watch::Sender::new(0)),
        })
    }

    /// The checker for [`SourceConfig::claims`](culvert_kubernetes::SourceConfig::claims).
    pub fn checker(&self) -> SharedClaims {
        SharedClaims(Arc::clone(&self.proofs) as _)
    }

    /// The signal for [`SourceConfig::retranslate`](culvert_kubernetes::SourceConfig::retranslate).
    pub fn retranslate(&self) -> watch::Receiver<u64> {
        self.retranslate.subscribe()
    }

    /// The sender of that signal, for others that need the source to translate
    /// again (a [handover](crate::handover) waiting for a plane).
    pub fn retranslate_sender(&self) -> Arc<watch::Sender<u64>> {
        Arc::clone(&self.retranslate)
    }

    /// What the translation hook calls: takes the claims of a translation (the
    /// task wakes only when they differ from the last).
    pub fn feeder(&self) -> impl Fn(&Store, &Translation) + Send + Sync + 'static {
        let sender = Arc::clone(&self.inputs);
        move |store, translation| {
            let next = inputs(store, translation);
            sender.send_if_modified(|current| {
                let changed = current.as_deref() != Some(&next);
                if changed {
                    *current = Some(Arc::new(next));
                }
                changed
            });
        }
    }

    /// The checker's proofs (for tests and status).
    pub fn proofs(&self) -> &Arc<ClaimProofs> {
        &self.proofs
    }

    /// The task that runs the checks, reading credentials through `cluster`.
    pub fn task(self, cluster: Cluster) -> ClaimTask {
        ClaimTask {
            inputs: self.inputs.subscribe(),
            last: self.proofs.view(&ClaimInputs::default()),
            claims: self,
            cluster,
            read: BTreeMap::new(),
            read_for: None,
            problems: BTreeMap::new(),
        }
    }
}

/// Runs the claim checks; see the module doc.
pub struct ClaimTask {
    claims: Claims,
    inputs: watch::Receiver<Option<Arc<ClaimInputs>>>,
    cluster: Cluster,
    /// The credentials as last read (`None`: unusable), for which claims and when.
    read: BTreeMap<CredentialRef, Option<ApiToken>>,
    read_for: Option<(Arc<ClaimInputs>, Instant)>,
    /// Credentials that did not read, with why, as last logged.
    problems: BTreeMap<CredentialRef, String>,
    /// What the translation was last told.
    last: View,
}

impl ClaimTask {
    /// Checks until `stop` turns true (or its sender goes). Nothing is decided
    /// before the first translation's claims arrive: until then proof counts as
    /// available and nothing as proven.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        loop {
            let inputs = tokio::select! {
                inputs = self.inputs.wait_for(Option::is_some) => match inputs {
                    Ok(inputs) => inputs.clone().unwrap_or_default(),
                    Err(_) => return,
                },
                _ = stop.wait_for(|stop| *stop) => return,
            };
            tokio::select! {
                () = self.round(&inputs) => {}
                _ = stop.wait_for(|stop| *stop) => return,
            }
            tokio::select! {
                changed = self.inputs.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(CHECK_EVERY) => {}
                _ = stop.wait_for(|stop| *stop) => return,
            }
        }
    }

    /// Reads the credentials (when the claims changed, or every
    /// [`READ_CREDENTIALS_EVERY`]), checks what is due, and asks for a translation
    /// when what it would be told changed.
    async fn round(&mut self, inputs: &Arc<ClaimInputs>) {
        let fresh = self.read_for.as_ref().is_some_and(|(read_for, at)| {
            Arc::ptr_eq(read_for, inputs) && at.elapsed() < READ_CREDENTIALS_EVERY
        });
        if !fresh {
            let mut read = BTreeMap::new();
            for credential in inputs.claims.iter().filter_map(|c| c.credential.as_ref()) {
                if !read.contains_key(credential) {
                    let token = self.read_credential(credential).await;
                    read.insert(credential.clone(), token);
                }
            }
            self.problems
                .retain(|credential, _| read.contains_key(credential));
            self.read = read;
            self.read_for = Some((Arc::clone(inputs), Instant::now()));
        }
        let read = &self.read;
        let credentials: BTreeMap<NamespacedName, ApiToken> = inputs
            .claims
            .iter()
            .filter_map(|claim| {
                let token = read.get(claim.credential.as_ref()?)?.clone()?;
                Some((claim.gateway.clone(), token))
            })
            .collect();
        let proofs = Arc::clone(&self.claims.proofs);
        proofs.set(inputs.configured, credentials.clone());
        // What the translation sees may change with the credentials alone.
        self.publish(inputs);
        let due: Vec<_> = inputs
            .claims
            .iter()
            .filter_map(|claim| Some((&claim.token, credentials.get(&claim.gateway)?)))
            .collect();
        let checked = proofs.prover().check_due(due).await;
        if checked > 0 {
            tracing::debug!(checked, "tunnel claims checked");
            self.publish(inputs);
        }
    }

    /// Bumps `retranslate` when what a translation of `inputs` is told changed.
    fn publish(&mut self, inputs: &ClaimInputs) {
        let view = self.claims.proofs.view(inputs);
        if view != self.last {
            self.last = view;
            self.claims.retranslate.send_modify(|n| *n += 1);
        }
    }

    /// The API token in `credential`; `None` (and logged once per cause) when the
    /// Secret or its key is missing or the value is not a token.
    async fn read_credential(&mut self, credential: &CredentialRef) -> Option<ApiToken> {
        let read = self
            .cluster
            .read_secret(&credential.namespace, &credential.secret)
            .await;
        // Neither error repeats the value.
        let problem = match read.map(ApiToken::new) {
            Ok(Ok(token)) => {
                self.problems.remove(credential);
                return Some(token);
            }
            Ok(Err(error)) => format!("not an API token: {error}"),
            Err(error) => error.to_string(),
        };
        if self.problems.get(credential) != Some(&problem) {
            tracing::warn!(
                secret = %format!("{}/{}", credential.namespace, credential.secret.name),
                %problem,
                "Cloudflare credential unusable; its tunnel claims stay unchecked"
            );
            self.problems.insert(credential.clone(), problem);
        }
        None
    }
}
