//! The deletion of queue destinations' large bodies whose hold has passed:
//! each maintenance run deletes up to `BODIES_PER_RUN` objects last sent
//! before `sent_before` (both `hookrelay_core::deliver::queue_destination`,
//! which says why the hold counts from the last send), then their
//! records. The objects go first: a crash in between leaves records whose
//! next run deletes absent objects, never an object without a record.

use hookrelay_core::deliver::queue_destination::{expired_bodies, sent_before, BODIES_PER_RUN};
use hookrelay_core::metrics::Component;
use hookrelay_platform::archive_bucket;
use hookrelay_platform::db::destination_bodies;
use hookrelay_platform::log;
use worker::{D1Database, Env, Result};

/// One step at `now`; how many objects it deleted (0 when none was due).
pub async fn step(env: &Env, db: &D1Database, now: i64) -> Result<u32> {
    let before = sent_before(now);
    let sent = destination_bodies::expired(db, before, BODIES_PER_RUN).await?;
    let keys = expired_bodies(&sent, now);
    if keys.is_empty() {
        return Ok(0);
    }
    archive_bucket::delete(env, &keys).await?;
    let ids: Vec<&str> = sent.iter().map(|(id, _)| id.as_str()).collect();
    destination_bodies::forget(db, &ids, before).await?;
    log::info(
        Component::Sweep,
        "destination_bodies_deleted",
        log::fields! {"count": keys.len()},
    );
    Ok(keys.len() as u32)
}
