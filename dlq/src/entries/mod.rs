//! What an operator does to one dead-letter entry, from a route or a job's
//! step alike: replay it (handed to the relay, which holds the delivery
//! configuration), archive, unarchive or discard it, or restore it from the
//! R2 archive; and why such a change failed.

pub(crate) mod apply_action;
pub(crate) mod change_error;
pub(crate) mod relay_client;
pub(crate) mod replay;
pub(crate) mod restore;
