//! Which alarm conditions hold now, from a snapshot of figures.
//!
//! The glue reads the figures (a few indexed D1 reads, plus the database
//! size) and passes them in with `now`; [`evaluate`] answers the active
//! conditions, each with a `detail` object that carries what an engineer
//! acts on: counts, the dominant code, the destination or source, the
//! oldest id and the threshold. `dlq_cannot_store` is not here: its state
//! is in R2 (see [`super::cannot_store`]).

use super::AlarmId;
use crate::alarms::settings::AlarmConfig;
use crate::state::AlarmKind;
use crate::UnixMillis;
use serde_json::{json, Value};

/// The share of a limit at which `dlq_capacity` and `storage` fire, in percent.
pub const NEAR_LIMIT_PERCENT: u64 = 90;

/// The dead-letter store's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DlqFigures {
    /// Pending entries now.
    pub pending: u64,
    /// `DLQ_CAPACITY`.
    pub capacity: u64,
    /// The oldest pending entry: its id and when it was dead-lettered.
    pub oldest_pending: Option<(String, UnixMillis)>,
    /// Dead letters stored in the last hour.
    pub ingress_last_hour: u64,
    /// The most frequent code among them, and its count.
    pub dominant_code: Option<(String, u64)>,
    /// Entries evicted at capacity in the last hour.
    pub evicted_last_hour: u64,
}

/// One destination's breaker, as the glue read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerFigure {
    /// The destination URL.
    pub destination: String,
    /// `CLOSED`, `OPEN` or `HALF_OPEN`.
    pub state: &'static str,
    /// When it last left CLOSED (`breakers.left_closed_at`), `None` while
    /// CLOSED. Not `opened_at`, which every OPEN → HALF_OPEN → OPEN resets.
    pub left_closed_at: Option<UnixMillis>,
    /// The failure that opened it.
    pub cause: Option<String>,
}

/// One destination's parked events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedFigure {
    /// The destination URL.
    pub destination: String,
    /// How many events wait for it.
    pub count: u64,
    /// The oldest one: its event id and when it was first parked.
    pub oldest: (String, UnixMillis),
}

/// One pull destination's deliveries due and unpulled (DESIGN §3: the
/// `parked_oldest` alarm counts such a delivery from when it became due).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullDueFigure {
    /// The pull destination's name.
    pub destination: String,
    /// How many of its deliveries are due and unpulled.
    pub due: u64,
    /// The oldest one: its event id and when it became due.
    pub oldest: (String, UnixMillis),
}

/// One source that declares `expect_every`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFigure {
    /// The source name.
    pub source: String,
    /// Its `expect_every`, in milliseconds.
    pub expect_every_ms: i64,
    /// Its newest ingested event, if D1 holds one.
    pub last_received_at: Option<UnixMillis>,
    /// When the watchdog started watching (its first run): a source that
    /// never sent anything counts as silent from then.
    pub watched_since: UnixMillis,
}

/// A source's failed signature checks in the last hour (only sources
/// with any are listed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureFailureFigure {
    /// The source name.
    pub source: String,
    /// Requests that failed their signature check in the last hour.
    pub last_hour: u64,
}

/// D1's size against its cap, and the dedupe window the cap left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageFigure {
    /// `meta.size_after` of the last statement, in bytes.
    pub size_bytes: u64,
    /// `D1_MAX_BYTES`.
    pub cap_bytes: u64,
    /// The effective dedupe window (`retention::plan::effective_dedupe_window_ms`).
    pub effective_window_ms: i64,
    /// `EVENT_RETENTION`.
    pub event_retention_ms: i64,
}

/// Everything the watchdog looks at, read once per run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// The dead-letter store.
    pub dlq: DlqFigures,
    /// Every breaker row.
    pub breakers: Vec<BreakerFigure>,
    /// Every destination with parked events.
    pub parked: Vec<ParkedFigure>,
    /// Every pull destination with a delivery due and unpulled.
    pub pull_due: Vec<PullDueFigure>,
    /// Every source with `expect_every`.
    pub sources: Vec<SourceFigure>,
    /// Every source with failed signature checks in the last hour.
    pub signature_failures: Vec<SignatureFailureFigure>,
    /// The database size, when this run read it.
    pub storage: Option<StorageFigure>,
}

/// A condition that holds now.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// Which alarm it belongs to.
    pub id: AlarmId,
    /// What to act on; always a JSON object.
    pub detail: Value,
}

/// The conditions that hold at `now`, in id order.
pub fn evaluate(f: &Figures, cfg: &AlarmConfig, now: UnixMillis) -> Vec<Condition> {
    let mut out: Vec<Condition> = [
        dlq_oldest(&f.dlq, cfg, now),
        dlq_ingress(&f.dlq, cfg),
        dlq_capacity(&f.dlq),
        f.storage.as_ref().and_then(storage),
    ]
    .into_iter()
    .flatten()
    .collect();
    out.extend(f.breakers.iter().filter_map(|b| breaker_open(b, cfg, now)));
    out.extend(parked_oldest_all(f, cfg, now));
    out.extend(f.sources.iter().filter_map(|s| source_silent(s, now)));
    out.extend(
        f.signature_failures
            .iter()
            .filter_map(|s| signature_failures(s, cfg)),
    );
    crate::support::small_sort::sort_by(&mut out, |a, b| a.id.cmp(&b.id));
    out
}

fn dominant(d: &DlqFigures) -> Value {
    match &d.dominant_code {
        Some((code, count)) => json!({"code": code, "count": count}),
        None => Value::Null,
    }
}

fn oldest_id(d: &DlqFigures) -> Option<&str> {
    d.oldest_pending.as_ref().map(|(id, _)| id.as_str())
}

fn dlq_oldest(d: &DlqFigures, cfg: &AlarmConfig, now: UnixMillis) -> Option<Condition> {
    let (id, at) = d.oldest_pending.as_ref()?;
    let age_ms = now - at;
    (age_ms > cfg.dlq_oldest_ms).then(|| Condition {
        id: AlarmId::new(AlarmKind::DlqOldest, "dlq"),
        detail: json!({"oldest_id": id, "oldest_age_ms": age_ms, "pending": d.pending,
            "dominant_code": dominant(d), "threshold_ms": cfg.dlq_oldest_ms}),
    })
}

fn dlq_ingress(d: &DlqFigures, cfg: &AlarmConfig) -> Option<Condition> {
    (d.ingress_last_hour > cfg.dlq_ingress_per_hour).then(|| Condition {
        id: AlarmId::new(AlarmKind::DlqIngress, "dlq"),
        detail: json!({"last_hour": d.ingress_last_hour, "dominant_code": dominant(d),
            "pending": d.pending, "oldest_id": oldest_id(d), "threshold_per_hour": cfg.dlq_ingress_per_hour}),
    })
}

fn dlq_capacity(d: &DlqFigures) -> Option<Condition> {
    let near = d.capacity > 0 && d.pending * 100 >= d.capacity * NEAR_LIMIT_PERCENT;
    (near || d.evicted_last_hour > 0).then(|| Condition {
        id: AlarmId::new(AlarmKind::DlqCapacity, "dlq"),
        detail: json!({"pending": d.pending, "capacity": d.capacity,
            "evicted_last_hour": d.evicted_last_hour, "threshold_percent": NEAR_LIMIT_PERCENT,
            "dominant_code": dominant(d), "oldest_id": oldest_id(d)}),
    })
}

fn breaker_open(b: &BreakerFigure, cfg: &AlarmConfig, now: UnixMillis) -> Option<Condition> {
    let left = b.left_closed_at?;
    let not_closed_ms = now - left;
    (not_closed_ms > cfg.breaker_open_ms).then(|| Condition {
        id: AlarmId::new(AlarmKind::BreakerOpen, &b.destination),
        detail: json!({"destination": b.destination, "state": b.state, "not_closed_ms": not_closed_ms,
            "left_closed_at": left, "cause": b.cause, "threshold_ms": cfg.breaker_open_ms}),
    })
}

fn parked_oldest(p: &ParkedFigure, cfg: &AlarmConfig, now: UnixMillis) -> Option<Condition> {
    let (event_id, parked_at) = &p.oldest;
    let age_ms = now - parked_at;
    (age_ms > cfg.parked_oldest_ms).then(|| Condition {
        id: AlarmId::new(AlarmKind::ParkedOldest, &p.destination),
        detail: json!({"destination": p.destination, "parked": p.count, "oldest_event_id": event_id,
            "oldest_age_ms": age_ms, "threshold_ms": cfg.parked_oldest_ms}),
    })
}

/// `parked_oldest` per destination: its oldest parked event, or for a pull
/// destination its oldest delivery due and unpulled, aged from when it
/// became due. One alarm per destination: should a name have both (a pull
/// destination never parks, so only a stale row could), the older holds.
fn parked_oldest_all(f: &Figures, cfg: &AlarmConfig, now: UnixMillis) -> Vec<Condition> {
    let mut out: Vec<Condition> = f
        .parked
        .iter()
        .filter_map(|p| parked_oldest(p, cfg, now))
        .collect();
    for c in f
        .pull_due
        .iter()
        .filter_map(|p| pull_due_oldest(p, cfg, now))
    {
        let age = |c: &Condition| c.detail["oldest_age_ms"].as_i64().unwrap_or(0);
        match out.iter_mut().find(|o| o.id == c.id) {
            Some(o) if age(o) < age(&c) => *o = c,
            Some(_) => {}
            None => out.push(c),
        }
    }
    out
}

fn pull_due_oldest(p: &PullDueFigure, cfg: &AlarmConfig, now: UnixMillis) -> Option<Condition> {
    let (event_id, due_at) = &p.oldest;
    let age_ms = now - due_at;
    (age_ms > cfg.parked_oldest_ms).then(|| Condition {
        id: AlarmId::new(AlarmKind::ParkedOldest, &p.destination),
        detail: json!({"destination": p.destination, "pull": true, "due_unpulled": p.due,
            "oldest_event_id": event_id, "oldest_due_at": due_at, "oldest_age_ms": age_ms,
            "threshold_ms": cfg.parked_oldest_ms}),
    })
}

fn source_silent(s: &SourceFigure, now: UnixMillis) -> Option<Condition> {
    let silent_ms = now - s.last_received_at.unwrap_or(s.watched_since);
    (silent_ms > s.expect_every_ms).then(|| Condition {
        id: AlarmId::new(AlarmKind::SourceSilent, &s.source),
        detail: json!({"source": s.source, "last_received_at": s.last_received_at,
            "silent_ms": silent_ms, "expect_every_ms": s.expect_every_ms}),
    })
}

fn signature_failures(s: &SignatureFailureFigure, cfg: &AlarmConfig) -> Option<Condition> {
    (s.last_hour > cfg.signature_failures_per_hour).then(|| Condition {
        id: AlarmId::new(AlarmKind::SignatureFailures, &s.source),
        detail: json!({"source": s.source, "last_hour": s.last_hour,
            "threshold_per_hour": cfg.signature_failures_per_hour}),
    })
}

fn storage(s: &StorageFigure) -> Option<Condition> {
    let near = s.cap_bytes > 0 && s.size_bytes * 100 >= s.cap_bytes * NEAR_LIMIT_PERCENT;
    let shortened = s.effective_window_ms < s.event_retention_ms;
    (near || shortened).then(|| Condition {
        id: AlarmId::new(AlarmKind::Storage, "d1"),
        detail: json!({"size_bytes": s.size_bytes, "cap_bytes": s.cap_bytes,
            "threshold_percent": NEAR_LIMIT_PERCENT, "effective_dedupe_window_ms": s.effective_window_ms,
            "event_retention_ms": s.event_retention_ms}),
    })
}

#[cfg(test)]
mod tests;
