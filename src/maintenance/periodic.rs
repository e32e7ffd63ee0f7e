//! The periodic check (DESIGN §1, §3): the `*/1` cron runs it, and so does
//! every isolate at most every 30 s on traffic (locally, where crons do not
//! fire and queued messages live in memory, it is what resumes unfinished
//! work). It revives drains whose chain of messages was lost, settles
//! delivery leases that ran out unrecorded and pull leases that ended with
//! no ack (counted `pull_lease_expired`), sends to the DLQ pull deliveries
//! unpulled past `PARK_MAX_AGE`, and sends again the `deliveries` messages
//! that are overdue; then it flushes what it counted.

use crate::config_cache::relay_config;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_platform::now_ms;
use hookrelay_platform::parking::drain_resume;
use hookrelay_platform::pipeline::{overdue, pull};
use hookrelay_platform::{log, metrics};
use worker::Env;

/// Pull leases settled, and unpulled deliveries sent to the DLQ, per
/// check; the next check takes the rest.
const PULL_LEASES_PER_CHECK: u32 = 100;

/// Runs the check now.
pub async fn check(env: &Env) {
    drain_resume::resume(env).await;
    let config = relay_config(env);
    // A bad config was logged naming its key when it was loaded.
    if let Ok(c) = &*config {
        overdue::check(env, (&c.delivery, &c.retry), now_ms()).await;
        // A pull lease that ended with no ack is a failed attempt (DESIGN §3).
        let pulls = c.delivery.pull_names();
        if let Ok(db) = env.d1("DB") {
            let settled = pull::settle_ended(
                (env, &db),
                &pulls,
                (&c.retry, PULL_LEASES_PER_CHECK),
                now_ms(),
            )
            .await;
            match settled {
                Ok(n) => metrics::count(
                    Metric::new(MetricName::PullLeaseExpired, Component::Deliveries),
                    n as u64,
                ),
                Err(e) => log::error(
                    Component::Relay,
                    "pull_lease_expiry_failed",
                    log::fields! {"err": hookrelay_platform::db::error_message(&e)},
                ),
            }
            // A delivery due and unpulled past PARK_MAX_AGE goes to the DLQ.
            let max_age = c.delivery.parking.max_age_ms;
            let expired = pull::expire_unpulled(
                (env, &db),
                &pulls,
                (max_age, PULL_LEASES_PER_CHECK),
                now_ms(),
            )
            .await;
            if let Err(e) = expired {
                log::error(
                    Component::Relay,
                    "pull_unpulled_expiry_failed",
                    log::fields! {"err": hookrelay_platform::db::error_message(&e)},
                );
            }
        }
    }
    // What this check counted (`lease_expired`, `message_resent`,
    // `pull_lease_expired`, an unpulled delivery's `dead_letter_handoff`) is
    // written now: a cron invocation ends here, with no later flush of its
    // own to carry it.
    metrics::flush(env).await;
}

/// Runs the check if this isolate has not in the last 30 s. Cheap to call
/// from every queue batch.
pub async fn check_if_due(env: &Env) {
    if drain_resume::claim_due() {
        check(env).await;
    }
}
