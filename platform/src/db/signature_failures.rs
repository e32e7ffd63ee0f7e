//! `signature_failures`: requests that failed their signature check, per
//! source and unix minute (migration 0015), added by the relay's flush of
//! its isolate tally and read by the `signature_failures` alarm.

use super::{batch, counters, int, text};
use crate::db::Rows;
use hookrelay_core::receive::signature_tally::{bucket, Row, BUCKET_MS, KEEP_MS, WINDOW_MS};
use worker::{D1Database, D1PreparedStatement, Result};

/// Adds a flush's rows to their buckets and to the stats' total per source
/// (`counters`' `signature_failures:{source}`), and prunes the buckets
/// older than [`KEEP_MS`], in one round trip.
pub async fn add(db: &D1Database, rows: &[Row], now_ms: i64) -> Result<()> {
    let mut statements = Vec::with_capacity(2 * rows.len() + 1);
    for row in rows {
        let n = i64::try_from(row.count).unwrap_or(i64::MAX);
        statements.push(counters::bump(
            db,
            &format!("signature_failures:{}", row.source),
            n,
        )?);
        statements.push(
            db.prepare(
                "INSERT INTO signature_failures (source, minute, count, writes) VALUES (?1, ?2, ?3, 1) \
                 ON CONFLICT(source, minute) DO UPDATE SET count = count + excluded.count, writes = writes + 1",
            )
            .bind(&[
                text(&row.source),
                int(row.minute),
                int(n),
            ])?,
        );
    }
    statements.push(
        db.prepare("DELETE FROM signature_failures WHERE minute < ?1")
            .bind(&[int(bucket(now_ms.saturating_sub(KEEP_MS)))])?,
    );
    batch(db, statements).await.map(|_| ())
}

/// One source's failures over the last hour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFailures {
    /// The source.
    pub source: String,
    /// Requests to it that failed their signature check.
    pub count: i64,
}

/// Failures per source over the hour before `now_ms` (the 60 buckets
/// whose minute started in it, the current one included), for the sources
/// with any, by source name: a statement for the watchdog's read batch,
/// answered by [`parse_last_hour`].
pub fn last_hour_statement(db: &D1Database, now_ms: i64) -> Result<D1PreparedStatement> {
    let since = bucket(now_ms.saturating_sub(WINDOW_MS - BUCKET_MS));
    db.prepare(
        "SELECT source, sum(count) AS n FROM signature_failures WHERE minute >= ?1 \
         GROUP BY source ORDER BY source",
    )
    .bind(&[int(since)])
}

/// The rows [`last_hour_statement`] read.
pub fn parse_last_hour(result: &Rows) -> Result<Vec<SourceFailures>> {
    result.map(|r| {
        Ok(SourceFailures {
            source: r.text("source")?,
            count: r.int("n")?,
        })
    })
}
