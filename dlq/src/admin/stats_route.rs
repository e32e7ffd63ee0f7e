//! `GET /webhook-dlq/stats`: the numbers an on-call engineer reads first.

use super::ApiResult;
use hookrelay_core::redact::destination_label;
use hookrelay_core::state::{EntryStatus, ReplayOutcome};
use hookrelay_platform::db::breakers::{self, BreakerRow};
use hookrelay_platform::db::counters::{self, CounterRow};
use hookrelay_platform::db::Rows;
use hookrelay_platform::db::{dead_letters, events, replay_audit};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use worker::D1Database;

#[derive(Deserialize)]
struct ParkedByDestination {
    destination: Option<String>,
    n: i64,
    oldest: Option<i64>,
}

/// `parked: {count, oldest_age_s, by_destination: [...]}`: events held
/// while their destination's breaker is open, waiting for its drain.
fn parked(total: Option<Pending>, by: Vec<ParkedByDestination>, now: i64) -> Value {
    let age = |t: Option<i64>| t.map(|t| (now - t).max(0) / 1000);
    let total = total.unwrap_or(Pending { n: 0, oldest: None });
    let by_destination: Vec<Value> = by
        .into_iter()
        .map(|d| json!({"destination": destination_label(d.destination.as_deref().unwrap_or("")), "count": d.n, "oldest_age_s": age(d.oldest)}))
        .collect();
    json!({"count": total.n, "oldest_age_s": age(total.oldest), "by_destination": by_destination})
}

#[derive(Deserialize)]
struct Pending {
    n: i64,
    oldest: Option<i64>,
}

fn counts(rows: Vec<CounterRow>) -> Map<String, Value> {
    rows.into_iter()
        .map(|r| (r.k.unwrap_or_else(|| "unknown".into()), json!(r.n)))
        .collect()
}

/// `counts` with a zero for every name that had no row.
fn counts_with_zeros<'a>(rows: Vec<CounterRow>, names: impl Iterator<Item = &'a str>) -> Value {
    let mut m = counts(rows);
    for name in names {
        m.entry(name).or_insert(json!(0));
    }
    Value::Object(m)
}

/// Depth, oldest pending age, ingress in the last hour, the dominant failure
/// code, counts by status and class, replay outcomes, breaker states, and
/// every counter (totals by metric, and by metric and code), and the parked
/// events, in one D1 round trip.
pub async fn stats(db: &D1Database, now: i64) -> ApiResult {
    let mut statements = dead_letters::stats_statements(db, now - 3_600_000)?;
    statements.extend([
        replay_audit::outcome_counts(db)?,
        counters::totals_by_metric(db),
        breakers::all(db),
        counters::totals_by_label(db),
        events::parked_total(db)?,
        events::parked_by_destination(db)?,
    ]);
    let results = hookrelay_platform::db::batch(db, statements).await?;
    let rows = |i: usize| read::<CounterRow>(&results, i);
    let pending = read::<Pending>(&results, 0)
        .pop()
        .unwrap_or(Pending { n: 0, oldest: None });
    let breakers: Vec<Value> = read::<BreakerRow>(&results, 7)
        .into_iter()
        .map(|b| json!({"destination": destination_label(&b.destination), "state": b.state_name, "since": b.updated_at}))
        .collect();
    Ok(json!({
        "depth": pending.n,
        "oldest_pending_age_s": pending.oldest.map(|t| (now - t).max(0) / 1000),
        "ingress_last_hour": rows(1).first().map_or(0, |r| r.n),
        "dominant_failure_code": rows(2).into_iter().next().and_then(|r| r.k),
        "by_status": counts_with_zeros(rows(3), EntryStatus::ALL.iter().map(|s| s.as_str())),
        "by_class": counts(rows(4)),
        "replay": counts_with_zeros(rows(5), ReplayOutcome::ALL.iter().map(|s| s.as_str())),
        "breakers": breakers,
        "counters": counts(rows(6)),
        "counters_by_label": counts(rows(8)),
        "parked": parked(read::<Pending>(&results, 9).pop(), read(&results, 10), now),
    }))
}

fn read<T: for<'de> Deserialize<'de>>(results: &[Rows], i: usize) -> Vec<T> {
    results
        .get(i)
        .and_then(|r| r.decode::<T>().ok())
        .unwrap_or_default()
}
