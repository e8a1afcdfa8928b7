//! The access log: one JSON line per request on stdout, written by its own thread so
//! a slow terminal or pipe never stalls a worker.
//!
//! Workers hand finished lines over a bounded channel ([`AccessLog::write`] never
//! blocks); when the channel is full the line is dropped and counted, and the count
//! is reported on the next line written. Sampling keeps a fraction of successful
//! requests; every request answered with a 5xx, a backend failure or a gRPC status
//! other than `OK` is logged.
//! Never formats anything for a request it will not log.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::SystemTime;

use crate::Error;

/// Lines waiting for the writer thread before new ones are dropped.
const QUEUE: usize = 16 * 1024;

/// Where workers send access-log lines.
#[derive(Debug)]
pub struct AccessLog {
    sender: Option<SyncSender<String>>,
    /// Fraction of successful requests logged, as a threshold on a uniform `u64`.
    threshold: u64,
    dropped: Arc<AtomicU64>,
}

impl AccessLog {
    /// A log that writes nothing.
    pub fn off() -> Self {
        Self {
            sender: None,
            threshold: 0,
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Starts the writer thread; `sample` (0.0 to 1.0) is the fraction of
    /// successful requests logged.
    pub fn start(sample: f64) -> Result<Self, Error> {
        let (sender, receiver) = sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&dropped);
        let name = "culvert-access-log".to_owned();
        std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || write_lines(&receiver, &counter))
            .map_err(|source| Error::Thread { name, source })?;
        let sample = if sample.is_nan() {
            0.0
        } else {
            sample.clamp(0.0, 1.0)
        };
        // Rounding at the top end: 1.0 must keep every request.
        let threshold = if sample >= 1.0 {
            u64::MAX
        } else {
            (sample * u64::MAX as f64) as u64
        };
        Ok(Self {
            sender: Some(sender),
            threshold,
            dropped,
        })
    }

    /// Whether a request should be logged: always for failures, else when `random`
    /// falls under the sampling threshold.
    pub(crate) fn wants(&self, failed: bool, random: u64) -> bool {
        self.sender.is_some() && (failed || random <= self.threshold)
    }

    /// Queues one line (without its newline). Never blocks.
    pub(crate) fn write(&self, line: String) {
        let Some(sender) = &self.sender else {
            return;
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = sender.try_send(line) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn write_lines(receiver: &Receiver<String>, dropped: &AtomicU64) {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    while let Ok(line) = receiver.recv() {
        let mut next = Some(line);
        while let Some(line) = next {
            let lost = dropped.swap(0, Ordering::Relaxed);
            if lost > 0 {
                let _ = writeln!(out, "{{\"accessLogDropped\":{lost}}}");
            }
            let _ = writeln!(out, "{line}");
            next = receiver.try_recv().ok();
        }
        let _ = out.flush();
    }
}

/// When something that has run for `elapsed` began, as [`rfc3339`]: the wall clock
/// is read once, when the line is written.
#[allow(
    clippy::disallowed_methods,
    reason = "the log line is written on the wall clock"
)]
pub(crate) fn started_rfc3339(elapsed: std::time::Duration) -> String {
    let started = SystemTime::now()
        .checked_sub(elapsed)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    rfc3339(started)
}

/// `time` as RFC 3339 UTC with milliseconds, such as `2026-11-30T17:05:01.123Z`.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    culvert_time::format_rfc3339(time, culvert_time::Precision::Millis)
}

#[cfg(test)]
mod tests;
