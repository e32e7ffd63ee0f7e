//! `GET /webhook-dlq/stats`: the numbers an on-call engineer reads first.

use super::batch_reader::{Batch, Slot};
use super::stats_lifecycle;
use super::ApiResult;
use crate::entries::relay_client::Relay;
use hookrelay_core::admin::stats_destinations::{
    self, BreakerFigure, LastHourFigure, PerDestination,
};
use hookrelay_core::retention::RetentionConfig;
use hookrelay_core::state::{EntryStatus, ReplayOutcome};
use hookrelay_core::support::redact::destination_label;
use hookrelay_platform::db::breakers::{self, BreakerRow};
use hookrelay_platform::db::counters::{self, CounterRow};
use hookrelay_platform::db::{dead_letters, delivery_rows, rates, replay_audit};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use worker::D1Database;

#[derive(Deserialize)]
struct ParkedByDestination {
    destination: Option<String>,
    n: i64,
    oldest: Option<i64>,
}

#[derive(Deserialize)]
struct RateRow {
    destination: String,
    rate_per_s: f64,
}

#[derive(Deserialize)]
struct LastHourRow {
    destination: String,
    n: i64,
    delivered: i64,
    dead_lettered: i64,
}

/// `parked: {count, oldest_age_s, by_destination: [...]}`: deliveries held
/// while their destination is unwell or over its rate, waiting for its
/// drain (a legacy parked event counts as its source's destination's).
fn parked(total: Option<Total>, by: &[ParkedByDestination], now: i64) -> Value {
    let age = |t: Option<i64>| t.map(|t| (now - t).max(0) / 1000);
    let total = total.unwrap_or(Total {
        n: None,
        oldest: None,
    });
    let by_destination: Vec<Value> = by
        .iter()
        .map(|d| json!({"destination": label(&d.destination), "count": d.n, "oldest_age_s": age(d.oldest)}))
        .collect();
    json!({"count": total.n.unwrap_or(0), "oldest_age_s": age(total.oldest), "by_destination": by_destination})
}

/// A destination as the stats name it: its name, or a pre-deliveries
/// URL's label (a URL may carry credentials in its user-info or query).
fn label(name: &Option<String>) -> String {
    destination_label(name.as_deref().unwrap_or(""))
}

/// `destinations`: per destination its breaker, rate, parked deliveries
/// and last hour, one line each.
fn destinations(
    breakers: &[BreakerRow],
    rates: Vec<RateRow>,
    parked: &[ParkedByDestination],
    hour: Vec<LastHourRow>,
    now: i64,
) -> Value {
    let breakers = breakers
        .iter()
        .map(|b| {
            let figure = BreakerFigure {
                state: b.state_name.as_str().to_string(),
                since: b.updated_at,
            };
            (destination_label(&b.destination), figure)
        })
        .collect();
    let parked = parked
        .iter()
        .map(|p| (label(&p.destination), p.n, p.oldest))
        .collect();
    let hour = hour
        .into_iter()
        .map(|h| {
            let figure = LastHourFigure {
                total: h.n,
                delivered: h.delivered,
                dead_lettered: h.dead_lettered,
            };
            (h.destination, figure)
        })
        .collect();
    let rates = rates
        .into_iter()
        .map(|r| (r.destination, r.rate_per_s))
        .collect();
    let reads = PerDestination {
        breakers,
        rates,
        parked,
        last_hour: hour,
    };
    json!(stats_destinations::join(reads, now))
}

#[derive(Deserialize)]
struct Pending {
    n: i64,
    oldest: Option<i64>,
}

/// A sum over a union: null when both parts are empty.
#[derive(Deserialize)]
struct Total {
    n: Option<i64>,
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

/// The statements of the stats, each read by its slot.
struct Slots {
    pending: Slot<Pending>,
    ingress: Slot<CounterRow>,
    dominant: Slot<CounterRow>,
    by_status: Slot<CounterRow>,
    by_class: Slot<CounterRow>,
    replay: Slot<CounterRow>,
    counters: Slot<CounterRow>,
    breakers: Slot<BreakerRow>,
    rates: Slot<RateRow>,
    by_label: Slot<CounterRow>,
    parked_total: Slot<Total>,
    parked_by: Slot<ParkedByDestination>,
    last_hour: Slot<LastHourRow>,
    lifecycle: stats_lifecycle::Slots,
}

fn statements(db: &D1Database, now: i64) -> worker::Result<(Batch, Slots)> {
    let mut b = Batch::new("the stats");
    let mut dead = dead_letters::stats_statements(db, now)?.into_iter();
    let mut dead_letter_part = || {
        dead.next()
            .expect("dead_letters::stats_statements answers its five statements, in this order")
    };
    let slots = Slots {
        pending: b.add("the pending dead letters", dead_letter_part()),
        ingress: b.add("the dead letters of the last hour", dead_letter_part()),
        dominant: b.add("the dominant failure code", dead_letter_part()),
        by_status: b.add("the dead letters by status", dead_letter_part()),
        by_class: b.add("the pending dead letters by class", dead_letter_part()),
        replay: b.add("the replay outcomes", replay_audit::outcome_counts(db)?),
        counters: b.add("the counters", counters::totals_by_metric(db)),
        breakers: b.add("the breakers", breakers::all(db)),
        rates: b.add("the destinations' rates", rates::rate_by_destination(db)),
        by_label: b.add("the counters by label", counters::totals_by_label(db)),
        parked_total: b.add("the parked deliveries", delivery_rows::parked_total(db)?),
        parked_by: b.add(
            "the parked deliveries by destination",
            delivery_rows::parked_by_destination(db)?,
        ),
        last_hour: b.add(
            "the deliveries of the last hour by destination",
            delivery_rows::last_hour_by_destination(db, now - 3_600_000)?,
        ),
        lifecycle: stats_lifecycle::Slots::add(&mut b, db, now)?,
    };
    Ok((b, slots))
}

/// `pull`: per pull destination its deliveries waiting, due and leased and
/// its oldest due age (`{"destinations": [...]}`), asked of the relay, which
/// alone knows which destinations pull; or, when that cannot be had, an
/// explicit `{"error": {"code", "message"}}` in its place, never zeros,
/// while the rest of the stats still answer.
async fn pull_part(relay: Result<Relay, String>) -> Value {
    let figures = match relay {
        Ok(relay) => relay.pull_figures().await,
        Err(message) => Err(("UNAVAILABLE".to_string(), message)),
    };
    match figures {
        Ok(f) => json!(f),
        Err((code, message)) => {
            let message = format!("the relay (which alone knows which destinations pull) did not give their figures: {message}");
            json!({"error": {"code": code, "message": message}})
        }
    }
}

/// Depth, oldest pending age, ingress in the last hour, the dominant failure
/// code, counts by status and class, replay outcomes, breaker states, and
/// every counter (totals by metric, and by metric and code), the parked
/// deliveries, and per destination its breaker, parked deliveries and last
/// hour, in one D1 round trip. A destination's `rate_per_s` is the relay's
/// configuration (`DESTINATIONS`), which this worker does not hold: it is
/// read from the `rates` row the relay's reservations keep. A part that
/// cannot be read fails the
/// whole answer, naming it: a zero here would tell on-call "nothing pending"
/// when the truth is "unknown". The lifecycle parts (rows per table, the
/// oldest row, storage, the archive, the last sweep, the hourly series)
/// come from `stats_lifecycle`, in the same batch. The pull destinations'
/// part is the relay's answer ([`pull_part`]), asked first: the one part
/// that may fail alone.
pub async fn stats(
    db: &D1Database,
    retention: &RetentionConfig,
    relay: Result<Relay, String>,
    now: i64,
) -> ApiResult {
    let pull = pull_part(relay).await;
    let (batch, s) = statements(db, now)?;
    let a = batch.run(db).await?;
    let pending = a
        .first(&s.pending)?
        .unwrap_or(Pending { n: 0, oldest: None });
    let breaker_rows = a.rows(&s.breakers)?;
    let parked_by = a.rows(&s.parked_by)?;
    let breakers: Vec<Value> = breaker_rows
        .iter()
        .map(|b| json!({"destination": destination_label(&b.destination), "state": b.state_name, "since": b.updated_at}))
        .collect();
    let by_label = a.rows(&s.by_label)?;
    let mut answer = json!({
        "depth": pending.n,
        "oldest_pending_age_s": pending.oldest.map(|t| (now - t).max(0) / 1000),
        "ingress_last_hour": a.first(&s.ingress)?.map_or(0, |r| r.n),
        "dominant_failure_code": a.first(&s.dominant)?.and_then(|r| r.k),
        "by_status": counts_with_zeros(a.rows(&s.by_status)?, EntryStatus::ALL.iter().map(|s| s.as_str())),
        "by_class": counts(a.rows(&s.by_class)?),
        "replay": counts_with_zeros(a.rows(&s.replay)?, ReplayOutcome::ALL.iter().map(|s| s.as_str())),
        "breakers": breakers,
        "counters": counts(a.rows(&s.counters)?),
        "parked": parked(a.first(&s.parked_total)?, &parked_by, now),
        "destinations": destinations(&breaker_rows, a.rows(&s.rates)?, &parked_by, a.rows(&s.last_hour)?, now),
        "pull": pull,
    });
    stats_lifecycle::fill(&mut answer, &a, &s.lifecycle, &by_label, retention, now)?;
    answer["counters_by_label"] = Value::Object(counts(by_label));
    Ok(answer)
}
