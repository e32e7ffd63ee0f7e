//! Why a change to one dead-letter entry (a replay, an archive, an
//! unarchive or a discard) changed nothing: the leaf both `replay` and
//! `apply_entry_action` return.

/// Why a change to one entry changed nothing.
#[derive(Debug)]
pub enum EntryChangeError {
    /// Refused before anything changed: the rule refuses it from the
    /// entry's status, a concurrent change won, or the relay refused the
    /// replay (the 409 message).
    Refused(String),
    /// The relay refused the replay for a reason the API answers with its
    /// own code (a `delivery` entry whose destination is gone).
    RefusedAs(hookrelay_core::replay::call::RefusalCode, String),
    /// D1 could not apply or record it.
    Storage(worker::Error),
}

impl From<worker::Error> for EntryChangeError {
    fn from(e: worker::Error) -> Self {
        EntryChangeError::Storage(e)
    }
}
