//! The [`Manager`]: keeps one certificate obtained and renewed. A round
//! ([`Manager::renew_if_due`]) reads the stored pair, plans with the injected clock,
//! and when due runs the order on its own task (so a bug reached through server input
//! cannot take the caller down) and writes the result. [`Manager::run`] repeats rounds:
//! after success it sleeps until the renewal time (re-checking at least twice a day),
//! after failure it backs off. Its latest outcome is observable through
//! [`Manager::subscribe`].

use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use instant_acme::Account;
use tokio::sync::{Mutex, Notify, watch};
use tokio::task::AbortHandle;

use crate::Error;
use crate::account;
use crate::challenge::Challenges;
use crate::clock::{Clock, SystemClock};
use crate::config::{AcmeConfig, Settings};
use crate::files::blocking;
use crate::issue::{Issued, issue};
use crate::renewal::{self, Plan, Reason, retry_delay};
use crate::stored::{self, CertificatePaths};

/// The shortest wait between two rounds that succeeded.
const MIN_RECHECK: Duration = Duration::from_secs(60);
/// The longest wait between two rounds: files edited or removed by hand are noticed.
const MAX_RECHECK: Duration = Duration::from_secs(12 * 60 * 60);

/// What a round did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The stored certificate is good until the renewal time; nothing was ordered.
    Kept,
    /// A certificate was ordered and written.
    Obtained {
        /// The account URL it was ordered with.
        account: String,
    },
}

/// The outcome of a round: what was done and the dates of the certificate now on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Kept or obtained.
    pub action: Action,
    /// The certificate's notBefore.
    pub not_before: SystemTime,
    /// The certificate's notAfter.
    pub not_after: SystemTime,
    /// When it is due for renewal: two thirds of the way from notBefore to notAfter.
    pub renew_at: SystemTime,
}

/// The latest outcome of [`Manager::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// No round has finished yet.
    Starting,
    /// The last round succeeded.
    Ready(Report),
    /// The last `failures` rounds failed; the next is in `retry_in`.
    Failed {
        /// The last error with its causes.
        error: String,
        /// Failed rounds in a row.
        failures: u32,
        /// The wait before the next round.
        retry_in: Duration,
    },
}

/// Obtains and renews one certificate. See the module documentation.
pub struct Manager {
    settings: Settings,
    paths: CertificatePaths,
    challenges: Challenges,
    clock: Arc<dyn Clock>,
    /// Held for a whole round, so rounds never overlap; caches the account.
    account: Mutex<Option<Account>>,
    status: watch::Sender<Status>,
    /// Ends [`Manager::run`]'s wait between rounds early.
    recheck: Notify,
}

impl Manager {
    /// Checks `config` and prepares a manager that publishes its answers in
    /// `challenges`. Nothing is read, written or sent yet.
    pub fn new(config: AcmeConfig, challenges: Challenges) -> Result<Self, Error> {
        let settings = config.validate()?;
        // `validate` refuses an empty list of names.
        let paths = CertificatePaths::new(&settings.state_dir, &settings.names[0]);
        Ok(Self {
            settings,
            paths,
            challenges,
            clock: Arc::new(SystemClock),
            account: Mutex::new(None),
            status: watch::Sender::new(Status::Starting),
            recheck: Notify::new(),
        })
    }

    /// Replaces the clock renewal decisions are made with.
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Where the certificate and key are written.
    pub fn paths(&self) -> &CertificatePaths {
        &self.paths
    }

    /// The names the certificate is for (lower case).
    pub fn names(&self) -> &[String] {
        &self.settings.names
    }

    /// The latest outcome of [`Manager::run`], updated after every round.
    pub fn subscribe(&self) -> watch::Receiver<Status> {
        self.status.subscribe()
    }

    /// Ends the wait of [`Manager::run`] so its next round starts now (or right after
    /// the one under way). Whether that round orders is still decided by the stored
    /// certificate and the clock.
    pub fn recheck_now(&self) {
        self.recheck.notify_one();
    }

    /// One round: reads the stored certificate and, if it is missing, unusable or past
    /// two thirds of its lifetime by the manager's clock, orders a new one and writes
    /// it. Rounds of one manager never overlap.
    pub async fn renew_if_due(&self) -> Result<Report, Error> {
        let mut cached_account = self.account.lock().await;
        let stored = {
            let (paths, names) = (self.paths.clone(), self.settings.names.clone());
            blocking(move || stored::inspect(&paths, &names)).await??
        };
        let reason = match renewal::plan(stored, self.clock.now()) {
            Plan::Keep { validity, renew_at } => {
                return Ok(Report {
                    action: Action::Kept,
                    not_before: validity.not_before,
                    not_after: validity.not_after,
                    renew_at,
                });
            }
            Plan::Obtain(reason) => reason,
        };
        let names = self.settings.names.join(",");
        match &reason {
            Reason::Missing => tracing::info!(%names, "ordering a certificate"),
            Reason::Unusable(why) => {
                tracing::warn!(%names, reason = %why, "stored certificate unusable; ordering a new one");
            }
            Reason::Due { .. } => tracing::info!(%names, "renewing a certificate"),
        }

        let (account, issued) = self.order(cached_account.clone()).await?;
        *cached_account = Some(account.clone());
        let Issued {
            chain_pem,
            key_pem,
            validity,
        } = issued;
        let paths = self.paths.clone();
        blocking(move || stored::store(&paths, chain_pem.as_bytes(), key_pem.as_bytes())).await??;
        let renew_at = renewal::renew_at(validity.not_before, validity.not_after);
        tracing::info!(%names, path = %self.paths.certificate.display(), "certificate written");
        Ok(Report {
            action: Action::Obtained {
                account: account.id().to_owned(),
            },
            not_before: validity.not_before,
            not_after: validity.not_after,
            renew_at,
        })
    }

    /// Loads or creates the account and runs the order on a task of its own, aborted if
    /// this future is dropped.
    async fn order(&self, account: Option<Account>) -> Result<(Account, Issued), Error> {
        let settings = self.settings.clone();
        let challenges = self.challenges.clone();
        let task = tokio::spawn(async move {
            let account = match account {
                Some(account) => account,
                None => account::load_or_create(&settings).await?,
            };
            let issued = issue(&account, &settings, &challenges).await?;
            Ok::<_, Error>((account, issued))
        });
        let _abort = AbortOnDrop(task.abort_handle());
        task.await.map_err(Error::Join)?
    }

    /// Runs rounds until `shutdown` completes: after a success, the next round is at
    /// the renewal time (at least a minute and at most twelve hours later); after a
    /// failure, after the configured backoff; [`Manager::recheck_now`] ends a wait
    /// early. Publishes each outcome to [`Manager::subscribe`].
    pub async fn run(&self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut failures = 0u32;
        loop {
            let result = tokio::select! {
                () = &mut shutdown => return,
                result = self.renew_if_due() => result,
            };
            let wait = match result {
                Ok(report) => {
                    failures = 0;
                    let until = report
                        .renew_at
                        .duration_since(self.clock.now())
                        .unwrap_or(Duration::ZERO);
                    self.status.send_replace(Status::Ready(report));
                    until.clamp(MIN_RECHECK, MAX_RECHECK)
                }
                Err(err) => {
                    failures = failures.saturating_add(1);
                    let retry_in = retry_delay(self.settings.backoff, failures);
                    let error = describe(&err);
                    tracing::warn!(names = %self.settings.names.join(","), %error, failures, retry_in_s = retry_in.as_secs(), "acme round failed");
                    self.status.send_replace(Status::Failed {
                        error,
                        failures,
                        retry_in,
                    });
                    retry_in
                }
            };
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(wait) => {}
                () = self.recheck.notified() => {}
            }
        }
    }
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("names", &self.settings.names)
            .field("directory_url", &self.settings.directory_url)
            .field("paths", &self.paths)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

/// An error and its causes on one line.
pub(crate) fn describe(error: &Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests;
