//! The `dlq_cannot_store` alarm's state, one R2 object
//! (`core::alarms::cannot_store::OBJECT_KEY`), written only by conditional
//! put: read it, ask `cannot_store::plan`, put it `onlyIf` its etag (or
//! absent), and on a lost race read again. Only the writer whose put won
//! holds the send lease, so one condition sends one alert however many
//! isolates and queue retries report it, and nothing here touches D1.

use super::alert_post;
use hookrelay_core::alarms::cannot_store::{
    plan, CannotStoreState, Report, OBJECT_KEY, WRITE_TRIES as TRIES,
};
use hookrelay_core::config::RelayConfig;
use hookrelay_core::state::AlarmState;
use hookrelay_core::support::subrequests::Budget;
use hookrelay_platform::archive_bucket::{self, PutIf};
use worker::{Env, Error, Result};

/// What applying a report changed.
#[derive(Debug, Default)]
pub struct Applied {
    /// The state now stored, if any.
    pub state: Option<CannotStoreState>,
    /// This report opened a firing episode.
    pub fired: bool,
    /// This report resolved the episode.
    pub resolved: bool,
}

/// Reads the state, if the object exists: its content and etag.
pub async fn read(env: &Env) -> Result<Option<(CannotStoreState, String)>> {
    let Some(object) = archive_bucket::get(env, OBJECT_KEY).await? else {
        return Ok(None);
    };
    let state = serde_json::from_str(&object.text).map_err(|e| {
        Error::RustError(format!(
            "the R2 object {OBJECT_KEY} is not a cannot-store state ({e}); delete it to start over"
        ))
    })?;
    Ok(Some((state, object.etag)))
}

/// Applies `report` at `now`: plans, puts conditionally, and, when the put
/// won the send lease, POSTs the alert and records how it went; each call
/// counted in `budget`.
pub async fn apply(
    env: &Env,
    cfg: &RelayConfig,
    report: &Report,
    now: i64,
    budget: &mut Budget,
) -> Result<Applied> {
    let mut spend = |n: u32| budget.spend(n).map_err(|e| Error::RustError(e.to_string()));
    for _ in 0..TRIES {
        spend(1)?;
        let prev = read(env).await?;
        let p = plan(prev.as_ref().map(|(s, _)| s), report, now);
        let Some(next) = p.next else {
            return Ok(Applied {
                state: prev.map(|(s, _)| s),
                ..Applied::default()
            });
        };
        let cond = prev
            .as_ref()
            .map_or(PutIf::Absent, |(_, etag)| PutIf::EtagIs(etag.clone()));
        spend(1)?;
        let Some(etag) = put(env, &next, cond).await? else {
            continue; // another writer won; read its state and plan again
        };
        let was_firing = prev.as_ref().map(|(s, _)| s.state) == Some(AlarmState::Firing);
        let applied = Applied {
            fired: next.state == AlarmState::Firing && !was_firing,
            resolved: next.state == AlarmState::Resolved && was_firing,
            state: Some(next.clone()),
        };
        if p.send && cfg.alarms.webhook_url.is_some() {
            // The POST and the put that records it.
            spend(2)?;
            let posted = alert_post::send(cfg, &next.alert(), now).await;
            let after = next.after_post(now, posted.result);
            // A lost race here only leaves the POST unrecorded: the lease
            // lapses and the alert is sent again, with the same operation id.
            put(env, &after, PutIf::EtagIs(etag)).await?;
            return Ok(Applied {
                state: Some(after),
                ..applied
            });
        }
        return Ok(applied);
    }
    Err(Error::RustError(format!(
        "the R2 object {OBJECT_KEY} changed under {TRIES} tries; the next report or watchdog run applies it"
    )))
}

async fn put(env: &Env, state: &CannotStoreState, cond: PutIf) -> Result<Option<String>> {
    let text = serde_json::to_string(state)?;
    archive_bucket::put(env, OBJECT_KEY, &text, 1, cond).await
}
