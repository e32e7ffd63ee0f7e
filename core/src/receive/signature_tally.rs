//! The per-isolate tally of requests that failed their signature check,
//! per source and minute, and when it is written to D1 (the
//! `signature_failures` alarm, DESIGN §5: counted without a D1 write per
//! failure).
//!
//! The rule, per isolate: the first failure after a quiet spell is written
//! at once, so an alarm sees it on the watchdog's next run; failures within
//! [`FLUSH_EVERY_MS`] of a write wait and go out together in one write at
//! the end of that spell. The glue asks for that later write when
//! [`Tally::record`] says [`Next::FlushAt`], keeping the request alive with
//! `wait_until`, whose work may last 30 s after the answer: hence 20 s, not
//! a minute. A flood of forged requests thus costs at most three D1 writes
//! a minute per isolate, whatever its rate. No early flush on a count:
//! memory holds one number per source and minute, bounded by the declared
//! sources, and an early flush would let a flood buy writes.

use crate::support::vec_map::VecMap;

/// The least time between two writes of one isolate's tally.
pub const FLUSH_EVERY_MS: i64 = 20_000;

/// How long a bucket is kept: the alarm reads the last hour, and the hour
/// after it leaves a writer with a slow clock room.
pub const KEEP_MS: i64 = 2 * 3_600_000;

/// The window the `signature_failures` alarm counts over.
pub const WINDOW_MS: i64 = 3_600_000;

/// The width of a bucket the counts are kept and stored in.
pub const BUCKET_MS: i64 = 60_000;

/// The minute bucket `now_ms` falls in (unix minutes).
pub fn bucket(now_ms: i64) -> i64 {
    now_ms.div_euclid(BUCKET_MS)
}

/// One row of a flush: add `count` to `source`'s bucket `minute`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The source whose request failed.
    pub source: String,
    /// The unix minute the failures were counted in.
    pub minute: i64,
    /// How many failed.
    pub count: u64,
}

/// What the glue does after a failure is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Write these rows now.
    Flush(Vec<Row>),
    /// Ask [`Tally::take_flush`] again at `at_ms`, once: no later write is
    /// planned yet.
    FlushAt(i64),
    /// Nothing: a later write is already planned and will carry this one.
    Wait,
}

/// The failures not yet written, and when the last write happened.
#[derive(Debug, Default)]
pub struct Tally {
    pending: VecMap<(String, i64), u64>,
    last_flush_ms: Option<i64>,
    planned: bool,
}

impl Tally {
    /// Counts one failed request to `source` at `now_ms`.
    pub fn record(&mut self, source: &str, now_ms: i64) -> Next {
        let key = (source.to_string(), bucket(now_ms));
        let n = self.pending.get(&key).copied().unwrap_or(0);
        self.pending.insert(key, n.saturating_add(1));
        if let Some(rows) = self.take_flush(now_ms) {
            return Next::Flush(rows);
        }
        if self.planned {
            return Next::Wait;
        }
        self.planned = true;
        Next::FlushAt(self.due_ms())
    }

    /// The rows to write now, if anything is pending and the last write is
    /// at least [`FLUSH_EVERY_MS`] old (or there was none). Taking them
    /// counts as the write.
    pub fn take_flush(&mut self, now_ms: i64) -> Option<Vec<Row>> {
        if self.pending.is_empty() || now_ms < self.due_ms() {
            return None;
        }
        self.last_flush_ms = Some(now_ms);
        self.planned = false;
        let rows = std::mem::take(&mut self.pending)
            .into_iter()
            .map(|((source, minute), count)| Row {
                source,
                minute,
                count,
            })
            .collect();
        Some(rows)
    }

    /// Puts back rows whose write failed, to go out with the next one.
    pub fn restore(&mut self, rows: Vec<Row>) {
        for row in rows {
            let key = (row.source, row.minute);
            let n = self.pending.get(&key).copied().unwrap_or(0);
            self.pending.insert(key, n.saturating_add(row.count));
        }
    }

    /// When the next write may happen.
    fn due_ms(&self) -> i64 {
        self.last_flush_ms
            .map_or(i64::MIN, |t| t.saturating_add(FLUSH_EVERY_MS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_040_000; // a minute boundary

    fn row(source: &str, minute_ms: i64, count: u64) -> Row {
        Row {
            source: source.into(),
            minute: bucket(minute_ms),
            count,
        }
    }

    /// A script of steps and what each answers.
    enum Step {
        Record(&'static str, i64, Next),
        Take(i64, Option<Vec<Row>>),
    }

    fn run(steps: Vec<Step>) {
        let mut t = Tally::default();
        for (i, step) in steps.into_iter().enumerate() {
            match step {
                Step::Record(s, at, want) => assert_eq!(t.record(s, at), want, "step {i}"),
                Step::Take(at, want) => assert_eq!(t.take_flush(at), want, "step {i}"),
            }
        }
    }

    #[test]
    fn the_flush_rule_as_a_table() {
        use Step::*;
        let due = T0 + FLUSH_EVERY_MS;
        // The first failure is written at once; the next ones wait for one
        // planned write at the end of the spell.
        run(vec![
            Record("a", T0, Next::Flush(vec![row("a", T0, 1)])),
            Record("a", T0 + 1, Next::FlushAt(due)),
            Record("a", T0 + 2, Next::Wait),
            Record("b", T0 + 3, Next::Wait),
            Take(due - 1, None),
            Take(due, Some(vec![row("a", T0, 2), row("b", T0, 1)])),
            Take(due, None),
        ]);
        // A failure after the spell, with nothing planned, is written at once.
        run(vec![
            Record("a", T0, Next::Flush(vec![row("a", T0, 1)])),
            Record("a", due, Next::Flush(vec![row("a", due, 1)])),
        ]);
        // The planned write, taken late by a failure rather than the timer,
        // carries every minute the spell crossed.
        run(vec![
            Record("a", T0 + 50_000, Next::Flush(vec![row("a", T0, 1)])),
            Record("a", T0 + 59_999, Next::FlushAt(T0 + 70_000)),
            Record("a", T0 + 60_000, Next::Wait),
            Record(
                "a",
                T0 + 70_000,
                Next::Flush(vec![row("a", T0, 1), row("a", T0 + 60_000, 2)]),
            ),
        ]);
        // Nothing pending: a timer's take writes nothing.
        run(vec![Take(T0, None)]);
    }

    #[test]
    fn a_flood_costs_one_write_per_spell() {
        let mut t = Tally::default();
        let mut writes = 0;
        let mut counted = 0;
        let mut planned = None;
        // 25 failures a second for a minute and a half.
        for i in 0..(25 * 90) {
            let now = T0 + i * 40;
            if planned.is_some_and(|at| now >= at) {
                if let Some(rows) = t.take_flush(now) {
                    writes += 1;
                    counted += rows.iter().map(|r| r.count).sum::<u64>();
                }
                planned = None;
            }
            match t.record("a", now) {
                Next::Flush(rows) => {
                    writes += 1;
                    counted += rows.iter().map(|r| r.count).sum::<u64>();
                }
                Next::FlushAt(at) => planned = Some(at),
                Next::Wait => {}
            }
        }
        let rest = t.take_flush(i64::MAX).unwrap_or_default();
        counted += rest.iter().map(|r| r.count).sum::<u64>();
        assert_eq!(counted, 25 * 90, "every failure is counted once");
        assert!(writes <= 1 + 90_000 / FLUSH_EVERY_MS, "{writes} writes");
    }

    #[test]
    fn a_failed_write_goes_out_with_the_next() {
        let mut t = Tally::default();
        let Next::Flush(rows) = t.record("a", T0) else {
            panic!("the first failure is written at once");
        };
        t.restore(rows);
        assert_eq!(t.record("a", T0 + 1), Next::FlushAt(T0 + FLUSH_EVERY_MS));
        assert_eq!(
            t.take_flush(T0 + FLUSH_EVERY_MS),
            Some(vec![row("a", T0, 2)])
        );
    }

    #[test]
    fn buckets_are_unix_minutes_before_1970_too() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(59_999), 0);
        assert_eq!(bucket(60_000), 1);
        assert_eq!(bucket(-1), -1);
    }
}
