//! What the pipeline works on and answers, one per event: shared by every
//! phase and by parking (`crate::parking::park`), so it sits in its own leaf.

use hookrelay_core::disposition::Outcome;
use hookrelay_core::queued_event::QueuedEvent;
use hookrelay_core::state::{DeliveryStatus, DownstreamResult, IngestKind};

/// One event to process, with the queue message that carries it.
pub struct Item<'a> {
    /// The event.
    pub event: &'a QueuedEvent,
    /// The message id (for a replay, the original message's id).
    pub queue_message_id: &'a str,
}

/// The result for one item.
#[derive(Debug, Clone)]
pub struct Processed {
    /// How ingest went, if it succeeded.
    pub ingest: Option<IngestKind>,
    /// The row's delivery status as ingest read it.
    pub delivery_status: Option<DeliveryStatus>,
    /// What happened about the downstream call.
    pub downstream: DownstreamResult,
    /// The outcome for the disposition.
    pub outcome: Outcome,
}
