//! The batch's counters and its summary line.

use super::{Batch, COMPONENT};
use hookrelay_core::metrics::{Metric, MetricName};
use hookrelay_core::retry::disposition::{Disposition, Outcome};
use hookrelay_platform::{log, metrics};

/// What one batch came to.
#[derive(Default)]
pub struct Tally {
    ingested: u32,
    duplicates: u32,
    retried: u32,
    dead_lettered: u32,
    parked: u32,
}

impl Tally {
    fn add(&mut self, outcome: &Outcome, disposition: &Disposition) {
        match (outcome, disposition) {
            (Outcome::Ingested, _) => self.ingested += 1,
            (Outcome::Duplicate, _) => self.duplicates += 1,
            (_, Disposition::Retry { .. }) => self.retried += 1,
            (Outcome::Parked, _) => self.parked += 1,
            (_, Disposition::DeadLetter { .. }) => self.dead_lettered += 1,
            (Outcome::Failed(_), Disposition::Ack) => {}
        }
    }

    /// Writes the `batch_done` line.
    pub fn log(&self, size: usize) {
        log::info(
            COMPONENT,
            "batch_done",
            log::fields! {"size": size, "ingested": self.ingested, "duplicates": self.duplicates, "retried": self.retried, "dead_lettered": self.dead_lettered, "parked": self.parked},
        );
    }
}

/// Counts each message's retry or hand-off, and tallies the batch.
pub fn count(batch: &Batch<'_>, outcomes: &[Outcome], dispositions: &[Disposition]) -> Tally {
    let mut tally = Tally::default();
    for ((disposition, outcome), event) in dispositions.iter().zip(outcomes).zip(batch.decoded) {
        tally.add(outcome, disposition);
        let source = event.as_ref().map_or("", |e| e.source.as_str());
        let (name, failure) = match disposition {
            Disposition::Ack => continue,
            Disposition::Retry { failure, .. } => (MetricName::Retry, failure),
            Disposition::DeadLetter { failure } => (MetricName::DeadLetterHandoff, failure),
        };
        metrics::count(
            Metric::new(name, COMPONENT)
                .source(source)
                .code(failure.code),
            1,
        );
    }
    tally
}
