//! What an audit record is about (`replay_audit.action`).

use super::named_states;

named_states! {
    /// A decision about one dead-letter entry.
    pub enum AuditAction ("audit action") {
        /// Sent again through the relay.
        Replay = "replay",
        /// Kept as history, out of the depth.
        Archive = "archive",
        /// Back to pending.
        Unarchive = "unarchive",
        /// Terminal; the payload is erased.
        Discard = "discard",
        /// Brought back from the archive.
        Restore = "restore",
    }
}
