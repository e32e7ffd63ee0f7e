//! The stats' lifecycle parts (DESIGN §4, §5), read in the stats' one batch:
//! `rows` per table (the `rows:{table}` counters the triggers of migrations
//! 0010 and 0018 keep, never a `COUNT(*)`), `oldest_kept`, `storage`, `archive`,
//! `last_sweep`, and `hourly` (dead letters and parked events per hour over
//! the last 24 hours, from indexed range reads).

use super::batch_reader::{Answer, Batch, Slot};
use super::ApiError;
use hookrelay_core::admin::stats_hourly::{series, series_since};
use hookrelay_core::retention::plan::effective_dedupe_window_ms;
use hookrelay_core::retention::RetentionConfig;
use hookrelay_platform::db::counters::CounterRow;
use hookrelay_platform::db::{dead_letters, events, sweep_state};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use worker::D1Database;

/// Counts per hour index.
#[derive(Deserialize)]
pub struct HourRow {
    k: i64,
    n: i64,
}

/// The oldest time a table keeps.
#[derive(Deserialize)]
pub struct OldestRow {
    oldest: Option<i64>,
}

/// `sweep_state`'s row.
#[derive(Deserialize)]
pub struct SweepRow {
    last_run_at: Option<i64>,
    last_result: Option<String>,
    last_error: Option<String>,
    size_swept_through: Option<i64>,
    archive_objects: i64,
    archive_rows: i64,
}

/// Where the lifecycle parts are in the stats batch.
pub struct Slots {
    dead_per_hour: Slot<HourRow>,
    parked_per_hour: Slot<HourRow>,
    oldest_event: Slot<OldestRow>,
    sweep: Slot<SweepRow>,
}

impl Slots {
    /// Adds the lifecycle statements to the stats batch.
    pub fn add(b: &mut Batch, db: &D1Database, now: i64) -> worker::Result<Slots> {
        let since = series_since(now);
        Ok(Slots {
            dead_per_hour: b.add(
                "the dead letters per hour",
                dead_letters::per_hour(db, since)?,
            ),
            parked_per_hour: b.add(
                "the parked events per hour",
                events::parked_per_hour(db, since)?,
            ),
            oldest_event: b.add("the oldest event kept", events::oldest_kept(db)),
            sweep: b.add("the sweep's state", sweep_state::stats_statement(db)),
        })
    }
}

/// Adds the lifecycle parts to `answer`. `by_label` are the labelled
/// counters, whose `rows:{table}` entries are the rows per table.
pub fn fill(
    answer: &mut Value,
    a: &Answer,
    s: &Slots,
    by_label: &[CounterRow],
    retention: &RetentionConfig,
    now: i64,
) -> Result<(), ApiError> {
    // Inserted one by one: collecting into the map would link a sort.
    let mut rows = Map::new();
    for r in by_label {
        if let Some(table) = r.k.as_deref().and_then(|k| k.strip_prefix("rows:")) {
            rows.insert(table.to_string(), json!(r.n));
        }
    }
    let sweep = a.first(&s.sweep)?.ok_or_else(|| {
        ApiError::Unavailable("sweep_state has no row; apply migrations/0010_lifecycle.sql".into())
    })?;
    let pairs = |v: Vec<HourRow>| v.into_iter().map(|h| (h.k, h.n)).collect::<Vec<_>>();
    let hourly = series(
        now,
        &pairs(a.rows(&s.dead_per_hour)?),
        &pairs(a.rows(&s.parked_per_hour)?),
    );
    let size = a.size_after().ok_or_else(|| {
        ApiError::Unavailable("D1 answered no meta.size_after for the stats; try again".into())
    })?;
    let last_result = sweep
        .last_result
        .as_deref()
        .and_then(|t| serde_json::from_str::<Value>(t).ok());
    answer["rows"] = Value::Object(rows);
    answer["oldest_kept"] = json!({"events": a.first(&s.oldest_event)?.and_then(|o| o.oldest)});
    answer["storage"] = json!({
        "size_bytes": size,
        "cap_bytes": retention.d1_max_bytes,
        "effective_dedupe_window_ms": effective_dedupe_window_ms(now, retention.event_retention_ms, sweep.size_swept_through),
        "event_retention_ms": retention.event_retention_ms,
    });
    answer["archive"] = json!({"objects": sweep.archive_objects, "rows": sweep.archive_rows});
    answer["last_sweep"] =
        json!({"at": sweep.last_run_at, "result": last_result, "error": sweep.last_error});
    answer["hourly"] = json!(hourly);
    Ok(())
}
