//! What a dead-letter entry is the failure of (DESIGN §4): an event that
//! never reached its deliveries, or one destination's delivery.

use super::named_states;

named_states! {
    /// `ingest` or `delivery` (`dead_letters.entry_kind`, the envelope's
    /// `identity.kind`).
    pub enum EntryKind ("entry kind") {
        /// The event failed before its deliveries existed (a `webhooks`
        /// message); its replay ingests again.
        Ingest = "ingest",
        /// One destination's delivery failed (a `deliveries` message); its
        /// replay goes to that destination alone.
        Delivery = "delivery",
    }
}

impl Default for EntryKind {
    /// An envelope stored before entries had a kind was an ingest's.
    fn default() -> EntryKind {
        EntryKind::Ingest
    }
}
