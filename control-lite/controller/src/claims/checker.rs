//! [`ClaimProofs`]: what the translation is told about each claim, from the
//! prover's cache and the credentials the last round read. Never does IO, never
//! waits on Cloudflare.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use culvert_cloudflare::{ApiToken, ClaimProver};
use culvert_control_lite::store::NamespacedName;
use culvert_control_lite::translate::{ClaimChecker, Proof};
use culvert_tunnel_proto::TunnelToken;

use super::ClaimInputs;

/// The claim checker handed to the source: the prover's cached proof of each
/// Gateway's claim, checked with that Gateway's credential.
#[derive(Debug)]
pub struct ClaimProofs {
    prover: Arc<ClaimProver>,
    known: Mutex<Known>,
}

/// What the last round of the claim task found.
#[derive(Debug)]
struct Known {
    /// Some credential is configured.
    configured: bool,
    /// The credential each Gateway's claim is checked with, where it reads.
    credentials: BTreeMap<NamespacedName, ApiToken>,
}

impl ClaimProofs {
    /// Proofs from `prover`'s cache. Until [`ClaimProofs::set`] says otherwise,
    /// proof counts as available and no credential as read: before the credentials
    /// were looked at, a new claim waits rather than being accepted unproven.
    pub fn new(prover: Arc<ClaimProver>) -> Self {
        Self {
            prover,
            known: Mutex::new(Known {
                configured: true,
                credentials: BTreeMap::new(),
            }),
        }
    }

    /// The prover whose cache answers.
    pub fn prover(&self) -> &ClaimProver {
        &self.prover
    }

    /// Records whether any credential is configured, and the credential of each
    /// Gateway whose credential reads (a Gateway left out is unchecked).
    pub fn set(&self, configured: bool, credentials: BTreeMap<NamespacedName, ApiToken>) {
        let mut known = self.known();
        known.configured = configured;
        known.credentials = credentials;
    }

    /// The credential `gateway`'s claim is checked with, if it reads.
    pub fn credential(&self, gateway: &NamespacedName) -> Option<ApiToken> {
        self.known().credentials.get(gateway).cloned()
    }

    /// What a translation of `inputs` is told now: whether proof is available, and
    /// each claim whose proof is not [`Proof::Unchecked`].
    pub fn view(&self, inputs: &ClaimInputs) -> (bool, BTreeMap<NamespacedName, Proof>) {
        let proofs = inputs
            .claims
            .iter()
            .map(|claim| {
                (
                    claim.gateway.clone(),
                    self.proof(&claim.gateway, &claim.token),
                )
            })
            .filter(|(_, proof)| *proof != Proof::Unchecked)
            .collect();
        (self.available(), proofs)
    }

    fn known(&self) -> MutexGuard<'_, Known> {
        // Every change is one assignment, so a panic elsewhere leaves nothing
        // half-written.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ClaimChecker for ClaimProofs {
    fn available(&self) -> bool {
        self.known().configured
    }

    fn proof(&self, gateway: &NamespacedName, token: &TunnelToken) -> Proof {
        let Some(credential) = self.credential(gateway) else {
            return Proof::Unchecked;
        };
        match self.prover.proof(token, &credential) {
            culvert_cloudflare::Proof::Confirmed => Proof::Confirmed,
            culvert_cloudflare::Proof::Refuted => Proof::Refuted,
            culvert_cloudflare::Proof::Unchecked => Proof::Unchecked,
        }
    }
}
