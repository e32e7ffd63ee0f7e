//! The `queue` trigger's consumers, one per queue, named for it:
//! `webhooks` (ingest, route, hand each delivery on), `deliveries` (one
//! delivery's attempt) and `control` (`hookrelay-control`: drain steps and
//! the sweep's continuation). The dispatch by queue name is `queue_entry.rs`.

pub(crate) mod control;
pub(crate) mod deliveries;
pub(crate) mod webhooks;
