//! `counters`: monotonic totals per metric key, read by the stats endpoint.

use super::{int, text};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement, Result};

/// Adds `by` to a named counter (a statement, for batching with other writes).
pub fn bump(db: &D1Database, name: &str, by: i64) -> Result<D1PreparedStatement> {
    db.prepare("INSERT INTO counters (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value")
        .bind(&[text(name), int(by)])
}

/// One counter total.
#[derive(Debug, Deserialize)]
pub struct CounterRow {
    /// The metric name, or the metric plus its label (`retry:UPSTREAM_5XX`).
    pub k: Option<String>,
    /// The total.
    pub n: i64,
}

/// Totals per metric name, labels summed (for the stats batch).
pub fn totals_by_metric(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT substr(name, 1, instr(name || ':', ':') - 1) AS k, sum(value) AS n FROM counters GROUP BY k")
}

/// Totals per metric and label (for the stats batch).
pub fn totals_by_label(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT name AS k, value AS n FROM counters WHERE instr(name, ':') > 0")
}
