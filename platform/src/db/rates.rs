//! `rates`: the shared budget of each rated destination (DESIGN §3,
//! "Rates"). One atomic upsert reserves a caller's starts and answers them
//! (`hookrelay_core::deliver::rate_slots`, whose `SlotAsk::apply` this statement
//! carries out: the first start is the later of now and the row's next
//! free start; the row moves on by the span asked, clamped to whole
//! spacings before the horizon). The row keeps the destination's
//! `rate_per_s` its reservations are made at, which the stats show.

use super::{int, text};
use crate::db::{batch, Query, Rows};
use hookrelay_core::deliver::rate_slots::{Grant, SlotAsk};
use worker::wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

/// The reservation of `ask` from `destination`'s row: a statement for a
/// batch, answered by [`parse_grant`].
pub fn reserve_statement(
    db: &D1Database,
    destination: &str,
    ask: &SlotAsk,
) -> Result<D1PreparedStatement> {
    // ?2 now, ?3 span asked, ?4 horizon, ?5 spacing. The CAST truncates
    // toward zero, as Rust's integer `/` does in `SlotAsk::apply` (a bound
    // number may arrive as a REAL, whose `/` would not).
    db.prepare(
        "INSERT INTO rates (destination, first_at, next_at, rate_per_s) \
         VALUES (?1, ?2, ?2 + MAX(0, MIN(?3, CAST((?4 - ?2) / ?5 AS INTEGER) * ?5)), ?6) \
         ON CONFLICT(destination) DO UPDATE SET \
         rate_per_s = ?6, \
         first_at = MAX(rates.next_at, ?2), \
         next_at = MAX(rates.next_at, ?2) + MAX(0, MIN(?3, CAST((?4 - MAX(rates.next_at, ?2)) / ?5 AS INTEGER) * ?5)) \
         RETURNING first_at, next_at",
    )
    .bind(&[
        text(destination),
        int(ask.now_ms),
        int(ask.span_ms),
        int(ask.horizon_ms),
        int(ask.spacing_ms),
        JsValue::from_f64(ask.rate_per_s),
    ])
}

/// Each rated destination's `rate_per_s`, as its last reservation made it
/// (`destination`, `rate_per_s`), for the stats.
pub fn rate_by_destination(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT destination, rate_per_s FROM rates WHERE rate_per_s IS NOT NULL")
}

/// The grant a [`reserve_statement`] answered.
pub fn parse_grant(rows: &Rows) -> Result<Grant> {
    rows.map_first(|r| {
        Ok(Grant {
            first_at_ms: r.int("first_at")?,
            next_at_ms: r.int("next_at")?,
        })
    })?
    .ok_or_else(|| worker::Error::RustError("the rate reservation answered no row".into()))
}

/// Reserves `ask` from `destination`'s budget alone (one round trip).
pub async fn reserve(db: &D1Database, destination: &str, ask: &SlotAsk) -> Result<Grant> {
    parse_grant(&reserve_statement(db, destination, ask)?.query().await?)
}

/// Reserves each `(destination, ask)` in one round trip, in order.
pub async fn reserve_many(db: &D1Database, asks: &[(&str, SlotAsk)]) -> Result<Vec<Grant>> {
    let statements = asks
        .iter()
        .map(|(d, a)| reserve_statement(db, d, a))
        .collect::<Result<Vec<_>>>()?;
    batch(db, statements)
        .await?
        .iter()
        .map(parse_grant)
        .collect()
}
