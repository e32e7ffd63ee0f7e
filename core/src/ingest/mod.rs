//! Stage 3, ingest (the `webhooks` consumer): how one batch's events are
//! written to `events` exactly once per idempotency key, and what the
//! downstream side of an event is right after its ingest. Routing the event
//! is the next folder, `route/`.

pub mod batch;
pub mod claimed_bodies;
pub mod delivery_plan;
