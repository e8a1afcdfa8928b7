//! The ACME managers: one `culvert_acme::Manager` per ACME hostname of the serving
//! snapshot, on a thread of their own (a current-thread tokio runtime), so an order in
//! flight never shares a runtime with requests or the config API.
//!
//! Every second the thread reads the serving snapshot's ACME hostnames and starts a
//! manager for each new one and stops those no longer named. A manager's rounds (a
//! certificate ordered when missing or due, retried with backoff on failure) are logged
//! by `culvert-acme`; what it writes reaches the listeners through the certificate poll
//! (`SnapshotCell::reload_changed_files`), never from here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use culvert_acme::{AcmeConfig, Clock, Manager};
use tokio::sync::{oneshot, watch};

use super::{AcmeCertificates, AcmeSettings};
use crate::{Error, SnapshotCell};

/// How often the serving snapshot's ACME hostnames are compared with the managers.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// The running managers, by hostname; shared with the [`Server`](crate::Server).
#[derive(Debug, Clone, Default)]
pub(crate) struct AcmeManagers {
    running: Arc<Mutex<BTreeMap<String, Running>>>,
}

#[derive(Debug)]
struct Running {
    manager: Arc<Manager>,
    /// Dropping it ends the manager's task.
    _stop: oneshot::Sender<()>,
}

impl AcmeManagers {
    /// Ends every manager's wait: each runs a round now.
    pub(crate) fn recheck_now(&self) {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        for entry in running.values() {
            entry.manager.recheck_now();
        }
    }

    /// The hostnames managed now.
    pub(crate) fn names(&self) -> Vec<String> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.keys().cloned().collect()
    }
}

/// Starts the managers' thread; it ends when `shutdown`'s sender is dropped.
pub(crate) fn spawn(
    settings: AcmeSettings,
    acme: Arc<AcmeCertificates>,
    cell: Arc<SnapshotCell>,
    mut shutdown: watch::Receiver<()>,
) -> Result<(std::thread::JoinHandle<()>, AcmeManagers), Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let managers = AcmeManagers::default();
    let handle = managers.clone();
    let name = "culvert-acme".to_owned();
    let thread = std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            runtime.block_on(async move {
                let mut refused = BTreeSet::new();
                loop {
                    let wanted = cell
                        .load()
                        .as_ref()
                        .map(|snapshot| snapshot.acme_names())
                        .unwrap_or_default();
                    reconcile(&settings, &acme, &managers, &wanted, &mut refused);
                    tokio::select! {
                        changed = shutdown.changed() => if changed.is_err() { break },
                        () = tokio::time::sleep(RECONCILE_EVERY) => {}
                    }
                }
                let mut running = managers
                    .running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                running.clear();
            });
        })
        .map_err(|source| Error::Thread { name, source })?;
    Ok((thread, handle))
}

/// Starts a manager for each name of `wanted` without one and stops the others. A name
/// whose manager cannot be made is logged once (in `refused`) until it is dropped.
fn reconcile(
    settings: &AcmeSettings,
    acme: &AcmeCertificates,
    managers: &AcmeManagers,
    wanted: &BTreeSet<String>,
    refused: &mut BTreeSet<String>,
) {
    let mut running = managers
        .running
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    running.retain(|name, _| {
        let keep = wanted.contains(name);
        if !keep {
            tracing::info!(name = %name, "acme manager stopped");
        }
        keep
    });
    refused.retain(|name| wanted.contains(name));
    for name in wanted {
        if running.contains_key(name) || refused.contains(name) {
            continue;
        }
        match manager_for(settings, acme, name) {
            Ok(manager) => {
                let manager = Arc::new(manager);
                let (stop, stopped) = oneshot::channel::<()>();
                let task = Arc::clone(&manager);
                tokio::spawn(async move {
                    task.run(async {
                        let _ = stopped.await;
                    })
                    .await;
                });
                tracing::info!(name = %name, directory = %settings.directory_url, "acme manager started");
                running.insert(
                    name.clone(),
                    Running {
                        manager,
                        _stop: stop,
                    },
                );
            }
            Err(err) => {
                tracing::error!(name = %name, error = %err, "acme manager refused its settings");
                refused.insert(name.clone());
            }
        }
    }
}

fn manager_for(
    settings: &AcmeSettings,
    acme: &AcmeCertificates,
    name: &str,
) -> Result<Manager, culvert_acme::Error> {
    let mut config = AcmeConfig::new(
        settings.directory_url.clone(),
        acme.state_dir(),
        vec![name.to_owned()],
        settings.challenge,
    );
    config.contacts.clone_from(&settings.contacts);
    config.trust.clone_from(&settings.trust_pem);
    let manager = Manager::new(config, acme.challenges().clone())?;
    Ok(match &settings.clock {
        Some(clock) => manager.with_clock(Shared(Arc::clone(clock))),
        None => manager,
    })
}

/// A clock given as a trait object, as a [`Clock`].
#[derive(Debug)]
struct Shared(Arc<dyn Clock>);

impl Clock for Shared {
    fn now(&self) -> SystemTime {
        self.0.now()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use std::collections::BTreeSet;

    use super::{AcmeManagers, reconcile};
    use crate::acme::{AcmeCertificates, AcmeSettings, ChallengeKind};

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[tokio::test]
    async fn managers_follow_the_wanted_names_and_a_refused_one_is_kept_out() {
        let dir = std::env::temp_dir().join(format!("culvert-managers-{}", std::process::id()));
        let acme = AcmeCertificates::new(&dir, culvert_acme::Challenges::new());
        // Port 1 on loopback: the managers' rounds fail at once and back off.
        let settings = AcmeSettings::new("https://127.0.0.1:1/dir", &dir, ChallengeKind::Http01);
        let managers = AcmeManagers::default();
        let mut refused = BTreeSet::new();

        reconcile(
            &settings,
            &acme,
            &managers,
            &names(&["a.example", "b.example"]),
            &mut refused,
        );
        assert_eq!(managers.names(), ["a.example", "b.example"]);
        reconcile(
            &settings,
            &acme,
            &managers,
            &names(&["b.example", "c.example"]),
            &mut refused,
        );
        assert_eq!(managers.names(), ["b.example", "c.example"]);
        reconcile(&settings, &acme, &managers, &names(&[]), &mut refused);
        assert!(managers.names().is_empty());

        let broken = AcmeSettings::new("not a url", &dir, ChallengeKind::Http01);
        reconcile(
            &broken,
            &acme,
            &managers,
            &names(&["a.example"]),
            &mut refused,
        );
        assert!(managers.names().is_empty());
        assert_eq!(refused, names(&["a.example"]));
        reconcile(&broken, &acme, &managers, &names(&[]), &mut refused);
        assert!(refused.is_empty(), "a name no longer wanted is forgotten");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
