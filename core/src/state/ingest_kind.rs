//! How an ingest went for one event.

use super::named_states;

named_states! {
    /// Fresh, duplicate or redelivered.
    pub enum IngestKind ("ingest kind") {
        /// First time this idempotency key was seen.
        Fresh = "fresh",
        /// A different delivery of an event already ingested: counted.
        Duplicate = "duplicate",
        /// The same queue message again (a retry after a later step failed).
        Redelivered = "redelivered",
    }
}
