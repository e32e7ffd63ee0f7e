//! `GET /webhook-dlq/stats`: the numbers an on-call engineer reads first.

use super::ApiResult;
use hookrelay_core::redact::destination_label;
use hookrelay_platform::d1::int;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use worker::D1Database;

#[derive(Deserialize)]
struct Pending {
    n: i64,
    oldest: Option<i64>,
}

#[derive(Deserialize)]
struct KeyCount {
    k: Option<String>,
    n: i64,
}

#[derive(Deserialize)]
struct Breaker {
    destination: String,
    state_name: String,
    updated_at: i64,
}

fn counts(rows: Vec<KeyCount>) -> Map<String, Value> {
    rows.into_iter()
        .map(|r| (r.k.unwrap_or_else(|| "unknown".into()), json!(r.n)))
        .collect()
}

/// Depth, oldest pending age, ingress in the last hour, the dominant failure
/// code, counts by status and class, replay outcomes, breaker states, and
/// every counter (totals by metric, and by metric and code), in one D1
/// round trip.
pub async fn stats(db: &D1Database, now: i64) -> ApiResult {
    let hour_ago = now - 3_600_000;
    let results = db
        .batch(vec![
            db.prepare("SELECT count(*) AS n, min(created_at) AS oldest FROM dead_letters WHERE status = 'pending'"),
            db.prepare("SELECT 'ingress' AS k, count(*) AS n FROM dead_letters WHERE created_at >= ?1").bind(&[int(hour_ago)])?,
            db.prepare("SELECT error_code AS k, count(*) AS n FROM dead_letters WHERE status = 'pending' GROUP BY error_code ORDER BY n DESC, error_code LIMIT 1"),
            db.prepare("SELECT status AS k, count(*) AS n FROM dead_letters GROUP BY status"),
            db.prepare("SELECT error_class AS k, count(*) AS n FROM dead_letters WHERE status = 'pending' GROUP BY error_class"),
            db.prepare("SELECT outcome AS k, count(*) AS n FROM replay_audit GROUP BY outcome"),
            db.prepare("SELECT substr(name, 1, instr(name || ':', ':') - 1) AS k, sum(value) AS n FROM counters GROUP BY k"),
            db.prepare("SELECT destination, state_name, updated_at FROM breakers ORDER BY destination"),
            db.prepare("SELECT name AS k, value AS n FROM counters WHERE instr(name, ':') > 0"),
        ])
        .await?;
    let rows = |i: usize| {
        results
            .get(i)
            .and_then(|r| r.results::<KeyCount>().ok())
            .unwrap_or_default()
    };
    let pending = results
        .first()
        .and_then(|r| r.results::<Pending>().ok())
        .and_then(|mut v| v.pop())
        .unwrap_or(Pending { n: 0, oldest: None });
    let ingress = rows(1).first().map_or(0, |r| r.n);
    let dominant = rows(2).into_iter().next().and_then(|r| r.k);
    let mut by_status = counts(rows(3));
    for s in ["pending", "replayed", "poisoned"] {
        by_status.entry(s).or_insert(json!(0));
    }
    let mut replay = counts(rows(5));
    for s in ["succeeded", "failed", "poisoned", "deduped"] {
        replay.entry(s).or_insert(json!(0));
    }
    let breakers: Vec<Value> = results
        .get(7)
        .and_then(|r| r.results::<Breaker>().ok())
        .unwrap_or_default()
        .into_iter()
        .map(|b| json!({"destination": destination_label(&b.destination), "state": b.state_name, "since": b.updated_at}))
        .collect();
    Ok(json!({
        "depth": pending.n,
        "oldest_pending_age_s": pending.oldest.map(|t| (now - t).max(0) / 1000),
        "ingress_last_hour": ingress,
        "dominant_failure_code": dominant,
        "by_status": by_status,
        "by_class": counts(rows(4)),
        "replay": replay,
        "breakers": breakers,
        "counters": counts(rows(6)),
        "counters_by_label": counts(rows(8)),
    }))
}
