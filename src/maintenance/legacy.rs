//! The bounded backfill of events from before deliveries (migration
//! 0017): each maintenance run copies up to [`PER_RUN`] parked ones into
//! their one delivery, to the destination named after their source
//! (`hookrelay_core::deliver::deliveries::legacy`); the copy itself starts
//! that destination's drain (`deliveries::copy_legacy`, the same for every
//! copy path), so they drain by its name. The others need no
//! step: a pending one is copied by its own redelivered message, and a
//! delivered, failed or unforwarded one is read through the legacy mapping
//! until the sweep retires it (or whatever touches it first copies it).

use hookrelay_core::metrics::Component;
use hookrelay_platform::db::{deliveries, error_message};
use hookrelay_platform::parking::park::start_drains;
use hookrelay_platform::{log, now_ms};
use worker::{D1Database, Env};

/// Legacy parked events copied per run: one bounded statement each way.
pub const PER_RUN: u32 = 100;

/// One backfill step; how many events it copied (0 when none are left).
pub async fn step(env: &Env, db: &D1Database) -> u32 {
    let now = now_ms();
    let found = match deliveries::legacy_parked(db, PER_RUN).await {
        Ok(f) => f,
        Err(e) => {
            log::error(
                Component::Sweep,
                "legacy_read_failed",
                log::fields! {"err": error_message(&e)},
            );
            return 0;
        }
    };
    if found.is_empty() {
        return 0;
    }
    let ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
    let copied = match deliveries::copy_legacy(db, &ids, now) {
        Ok(stmts) => hookrelay_platform::db::batch(db, stmts.into()).await,
        Err(e) => Err(e),
    };
    let started = match copied {
        Ok(results) => deliveries::legacy_drains_started(&results, 0),
        Err(e) => {
            log::error(
                Component::Sweep,
                "legacy_copy_failed",
                log::fields! {"err": error_message(&e)},
            );
            return 0;
        }
    };
    let started = started.unwrap_or_else(|e| {
        log::warn(
            Component::Sweep,
            "legacy_drains_unread",
            log::fields! {"err": error_message(&e)},
        );
        Vec::new()
    });
    start_drains(
        env.queue("CONTROL").ok().as_ref(),
        &started,
        Component::Sweep,
    )
    .await;
    log::info(
        Component::Sweep,
        "legacy_copied",
        log::fields! {"count": found.len()},
    );
    found.len() as u32
}
