//! The figures the watchdog evaluates, and the stored episodes it advances,
//! read in one D1 batch: one indexed statement per figure. A batch that
//! answers fewer or more result sets than it asked for is an error, never
//! a figure silently dropped.

use hookrelay_core::alarms::conditions::{
    BreakerFigure, DlqFigures, Figures, ParkedFigure, PullDueFigure, SignatureFailureFigure,
    SourceFigure, StorageFigure,
};
use hookrelay_core::alarms::machine::{AlarmRecord, Owing};
use hookrelay_core::config::RelayConfig;
use hookrelay_core::dead_letter::arrivals;
use hookrelay_core::deliver::breaker::BreakerState;
use hookrelay_core::deliver::pull_figures::oldest_due;
use hookrelay_core::retention::plan::effective_dedupe_window_ms;
use hookrelay_platform::db::dead_letters::dead_letter_figures as dead;
use hookrelay_platform::db::events::event_figures as events;
use hookrelay_platform::db::{
    alarms, batch, breakers, deliveries, signature_failures, tombstones, Rows,
};
use worker::{D1Database, Result};

const HOUR_MS: i64 = 3_600_000;

/// What one watchdog run reads: the figures, every firing episode, and
/// the oldest resolved ones whose alert may still be owed.
pub type Read = (Figures, Vec<AlarmRecord>, Vec<AlarmRecord>);

/// Reads everything one watchdog run needs at `now`.
pub async fn read(db: &D1Database, cfg: &RelayConfig, owing: &Owing, now: i64) -> Result<Read> {
    let watched: Vec<(&str, i64)> = cfg
        .sources
        .values()
        .filter_map(|s| Some((s.spec.name.as_str(), s.spec.expect_every_ms?)))
        .collect();
    // A pull destination's deliveries due and unpulled feed `parked_oldest`
    // (DESIGN §3); the relay alone knows which destinations pull.
    let pulls = cfg.delivery.pull_names();
    let mut statements = vec![
        dead::pending_and_oldest(db)?,
        dead::ingress_by_code(db, arrivals::first_bucket_of_window(now))?,
        tombstones::evicted_since(db, now - HOUR_MS)?,
        breakers::not_closed(db)?,
        events::parked_oldest(db)?,
        alarms::watch_state(db, now)?,
        alarms::firing(db)?,
        alarms::owed_resolved(db, owing.resolved_cutoff(now), owing.resolved_read_limit())?,
        signature_failures::last_hour_statement(db, now)?,
        deliveries::pull_waiting_figures(db, &pulls, now)?,
    ];
    for (source, _) in &watched {
        statements.push(events::last_received(db, source)?);
    }
    let asked = statements.len();
    let answers = batch(db, statements).await?;
    let [pending, ingress, evicted, breakers_rows, parked, watch, firing, owed, forged, pull_waiting, last @ ..] =
        answers.as_slice()
    else {
        return Err(miscounted(answers.len(), asked));
    };
    if last.len() != watched.len() {
        return Err(miscounted(answers.len(), asked));
    }
    let (watched_since, size, swept) = alarms::read_watch_state(watch, now)?;
    let figures = Figures {
        dlq: dlq_figures(pending, ingress, evicted, cfg.dlq_capacity)?,
        breakers: breaker_figures(breakers_rows)?,
        parked: events::read_parked(parked)?
            .into_iter()
            .map(|(destination, count, event_id, at)| ParkedFigure {
                destination,
                count,
                oldest: (event_id, at),
            })
            .collect(),
        pull_due: pull_due_figures(pull_waiting, now)?,
        sources: source_figures(&watched, last, watched_since)?,
        signature_failures: signature_failure_figures(forged)?,
        storage: size.map(|size_bytes| StorageFigure {
            size_bytes,
            cap_bytes: cfg.retention.d1_max_bytes,
            effective_window_ms: effective_dedupe_window_ms(
                now,
                cfg.retention.event_retention_ms,
                swept,
            ),
            event_retention_ms: cfg.retention.event_retention_ms,
        }),
    };
    Ok((figures, alarms::records(firing)?, alarms::records(owed)?))
}

/// A batch that did not answer one result set per statement: an error, or
/// a source's silence would be judged on another source's figure or not
/// at all.
fn miscounted(answered: usize, asked: usize) -> worker::Error {
    worker::Error::RustError(format!(
        "D1 answered {answered} result sets for the watchdog's {asked} reads; no alarm was judged, the next run reads again"
    ))
}

fn dlq_figures(
    pending: &Rows,
    ingress: &Rows,
    evicted: &Rows,
    capacity: u64,
) -> Result<DlqFigures> {
    let (pending, oldest_pending) = dead::read_pending(pending)?;
    let (ingress_last_hour, dominant_code) = dead::read_ingress(ingress)?;
    Ok(DlqFigures {
        pending,
        capacity,
        oldest_pending,
        ingress_last_hour,
        dominant_code,
        evicted_last_hour: tombstones::read_count(evicted)?,
    })
}

/// Breakers not CLOSED, labelled without credentials or query (an alert
/// and its id never carry a secret from a destination URL).
fn breaker_figures(rows: &Rows) -> Result<Vec<BreakerFigure>> {
    Ok(breakers::read_not_closed(rows)?
        .into_iter()
        .map(|(destination, state, left_closed_at)| {
            let cause = match state {
                BreakerState::Open { cause, .. } | BreakerState::HalfOpen { cause, .. } => cause,
                BreakerState::Closed { .. } => None,
            };
            BreakerFigure {
                destination,
                state: state.state_name().as_str(),
                left_closed_at: Some(left_closed_at),
                cause: cause.map(|c| c.as_str().to_string()),
            }
        })
        .collect())
}

/// Each pull destination with a delivery due and unpulled at `now`: how
/// many, and the oldest with when it became due.
fn pull_due_figures(rows: &Rows, now: i64) -> Result<Vec<PullDueFigure>> {
    Ok(deliveries::read_pull_waiting_figures(rows)?
        .into_iter()
        .filter_map(|w| {
            let oldest = oldest_due(&w, now)?;
            Some(PullDueFigure {
                destination: w.destination,
                due: w.due,
                oldest,
            })
        })
        .collect())
}

fn signature_failure_figures(rows: &Rows) -> Result<Vec<SignatureFailureFigure>> {
    Ok(signature_failures::parse_last_hour(rows)?
        .into_iter()
        .map(|f| SignatureFailureFigure {
            source: f.source,
            last_hour: f.count.max(0) as u64,
        })
        .collect())
}

fn source_figures(
    watched: &[(&str, i64)],
    last: &[Rows],
    watched_since: i64,
) -> Result<Vec<SourceFigure>> {
    watched
        .iter()
        .zip(last)
        .map(|((source, every), rows)| {
            Ok(SourceFigure {
                source: (*source).to_string(),
                expect_every_ms: *every,
                last_received_at: events::read_last(rows)?,
                watched_since,
            })
        })
        .collect()
}
