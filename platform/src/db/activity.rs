//! The activity feed's one read (`GET /api/v1/admin/activity`), across
//! three tables, each through its own time index: events accepted
//! (`events`, `events_by_ingest`), deliveries settled (`deliveries`
//! delivered or dead-lettered, `deliveries_settled_by_time` of migration
//! 0020) and dead letters stored (`dead_letters`, `dead_letters_by_time`).
//! Each table gives at most a page of rows after the position, up to the
//! horizon, and the union keeps the oldest page of them: a poll reads at
//! most three pages of rows whatever the tables hold.
//!
//! A row's position is its time and an id unique across the three kinds:
//! the event id, `<event id>/<destination>` for a delivery, the entry id
//! (`dlq_…`) for a dead letter. An event from before deliveries existed
//! (no `deliveries` row) shows as accepted only.

use super::{text, Where};
use crate::db::Query;
use hookrelay_core::admin::query::{ActivityQuery, Cursor};
use hookrelay_core::deliver::deliveries::DeliveryState;
use serde::{Deserialize, Serialize};
use worker::{D1Database, Result};

/// One thing that happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActivityItem {
    /// When (unix ms): ingested, settled, or dead-lettered.
    pub at: i64,
    /// `event` (accepted), `delivery` (settled) or `dead_letter` (stored).
    pub kind: String,
    /// The position's id; the answer's cursor carries it.
    #[serde(skip_serializing)]
    pub id: String,
    /// The event (absent for a dead letter whose message named none).
    pub event_id: Option<String>,
    /// Its idempotency key.
    pub idempotency_key: Option<String>,
    /// Its source.
    pub source: Option<String>,
    /// A delivery's destination, or a delivery dead letter's.
    pub destination: Option<String>,
    /// A delivery's outcome: `delivered` or `dead_lettered`.
    pub outcome: Option<String>,
    /// The error code of a dead letter or of a dead-lettered delivery.
    pub code: Option<String>,
    /// A dead letter's entry id.
    pub entry_id: Option<String>,
}

impl ActivityItem {
    /// Its position, for the next cursor.
    pub fn position(&self) -> Cursor {
        Cursor {
            at_ms: self.at,
            id: self.id.clone(),
        }
    }
}

/// One table's part of the feed: its columns as the item's, its time and
/// id expressions, and how the two filters read on it.
struct Member {
    select: &'static str,
    from: &'static str,
    at: &'static str,
    id: &'static str,
    source: &'static str,
    destination: &'static str,
}

const EVENTS: Member = Member {
    select: "'event' AS kind, e.ingested_at AS at, e.event_id AS id, e.event_id, e.idempotency_key, e.source, \
             NULL AS destination, NULL AS outcome, NULL AS code, NULL AS entry_id",
    from: "events e",
    at: "e.ingested_at",
    id: "e.event_id",
    source: "e.source",
    // An event is in a destination's feed when it was routed there.
    destination: "EXISTS (SELECT 1 FROM deliveries x WHERE x.event_id = e.event_id AND x.destination = {})",
};

const DELIVERIES: Member = Member {
    select: "'delivery' AS kind, d.updated_at AS at, d.event_id || '/' || d.destination AS id, d.event_id, \
             e.idempotency_key, e.source, d.destination, d.state AS outcome, \
             CASE WHEN d.state = 'dead_lettered' THEN d.last_error END AS code, NULL AS entry_id",
    from: "deliveries d JOIN events e ON e.event_id = d.event_id",
    at: "d.updated_at",
    id: "d.event_id || '/' || d.destination",
    source: "e.source",
    destination: "d.destination = {}",
};

const DEAD_LETTERS: Member = Member {
    select: "'dead_letter' AS kind, l.created_at AS at, l.id AS id, l.event_id, l.idempotency_key, l.source, \
             l.destination, NULL AS outcome, l.error_code AS code, l.id AS entry_id",
    from: "dead_letters l",
    at: "l.created_at",
    id: "l.id",
    source: "l.source",
    destination: "l.destination = {}",
};

/// The settled states, spelled as the partial index of migration 0020
/// spells them (SQLite uses it only for a query that repeats its WHERE).
fn settled() -> String {
    format!(
        "d.state IN ('{}', '{}')",
        DeliveryState::Delivered.as_str(),
        DeliveryState::DeadLettered.as_str()
    )
}

/// The items after `query.after` up to `horizon_ms` (inclusive), oldest
/// first, at most `query.limit + 1` (the extra one says a page is full).
pub async fn read(
    db: &D1Database,
    query: &ActivityQuery,
    horizon_ms: i64,
) -> Result<Vec<ActivityItem>> {
    let mut w = Where::default();
    let horizon = w.bind(super::int(horizon_ms));
    let after = query
        .after
        .as_ref()
        .map(|c| (w.bind(super::int(c.at_ms)), w.bind(text(&c.id))));
    let source = query.source.as_deref().map(|s| w.bind(text(s)));
    let destination = query.destination.as_deref().map(|d| w.bind(text(d)));
    let limit = w.bind(super::int(i64::from(query.limit) + 1));
    let part = |m: &Member, extra: Option<String>| {
        let mut conditions: Vec<String> = extra.into_iter().collect();
        conditions.push(format!("{} <= {horizon}", m.at));
        if let Some((at, id)) = &after {
            conditions.push(format!(
                "{0} >= {at} AND ({0} > {at} OR {1} > {id})",
                m.at, m.id
            ));
        }
        if let Some(s) = &source {
            conditions.push(format!("{} = {s}", m.source));
        }
        if let Some(d) = &destination {
            conditions.push(m.destination.replace("{}", d));
        }
        format!(
            "SELECT * FROM (SELECT {} FROM {} WHERE {} ORDER BY at, id LIMIT {limit})",
            m.select,
            m.from,
            conditions.join(" AND ")
        )
    };
    let sql = format!(
        "{} UNION ALL {} UNION ALL {} ORDER BY at, id LIMIT {limit}",
        part(&EVENTS, None),
        part(&DELIVERIES, Some(settled())),
        part(&DEAD_LETTERS, None),
    );
    db.prepare(sql).bind(&w.params)?.query().await?.decode()
}
