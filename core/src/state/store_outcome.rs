//! What storing one dead letter did.

use super::named_states;

named_states! {
    /// The result of writing one envelope.
    pub enum StoreOutcome ("store outcome") {
        /// A new entry.
        Stored = "stored",
        /// An identical pending entry was marked seen again instead.
        Deduped = "deduped",
        /// This DLQ message was stored before; nothing changed.
        Redelivered = "redelivered",
    }
}
