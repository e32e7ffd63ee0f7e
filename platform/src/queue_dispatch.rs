//! Which consumer a batch goes to, by its queue's name: the names are the
//! worker's queue vars (`hookrelay_core::support::queue_names`). A batch from a
//! queue no var names, or read while a var is invalid, is logged and
//! retried whole: it is never taken for an event.

use crate::env_config::WorkerEnv;
use crate::log;
use crate::queue_message::QueueMessage;
use hookrelay_core::metrics::Component;
use hookrelay_core::retry::waits::UNROUTED_RETRY_S;
use hookrelay_core::support::queue_names::{QueueNames, QueueVar};
use worker::Env;

/// The consumer of the batch from `queue`, or `None` when there is none:
/// then every message was retried and the reason logged.
pub fn consumer_of<C: Copy>(
    env: &Env,
    table: &[QueueVar<C>],
    queue: &str,
    messages: &[QueueMessage],
    component: Component,
) -> Option<C> {
    let routed = QueueNames::load(&WorkerEnv(env), table)
        .map_err(|e| {
            log::error(
                component,
                "queue_config_invalid",
                log::fields! {"queue": queue, "key": e.key, "problem": e.problem},
            )
        })
        .and_then(|names| {
            names.consumer(queue).map_err(|e| {
                log::error(
                    component,
                    "unknown_queue",
                    log::fields! {"queue": e.queue, "configured": e.configured, "messages": messages.len(), "problem": "no queue var of this worker names this queue: set QUEUE_* in its wrangler.toml [vars] to the names its [[queues.consumers]] use; the batch is retried"},
                )
            })
        });
    if routed.is_err() {
        for m in messages {
            m.retry(UNROUTED_RETRY_S);
        }
    }
    routed.ok()
}
