//! What flows between the phases: an event to ingest ([`Item`]), a
//! delivery to make ([`DeliveryItem`]), and what each came to
//! ([`Processed`]); shared by every phase and by parking
//! (`crate::parking::park`), so it sits in its own leaf.

use hookrelay_core::receive::queued_event::QueuedEvent;
use hookrelay_core::retry::delivery_attempts::AfterCall;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::{DeliverySummary, DownstreamResult, IngestKind};

/// One event to process, with the queue message that carries it.
#[derive(Clone, Copy)]
pub struct Item<'a> {
    /// The event.
    pub event: &'a QueuedEvent,
    /// The message id (for a replay, the original message's id).
    pub queue_message_id: &'a str,
}

/// One leased delivery: its event, rebuilt from its D1 row, and its
/// destination.
#[derive(Debug, Clone)]
pub struct DeliveryItem {
    /// The event.
    pub event: QueuedEvent,
    /// The destination's name (its breaker, drain and alarms key; its
    /// target and keys are the configuration's, `DeliveryConfig::destination`).
    pub destination: String,
    /// The call's timeout (the destination's, else `DELIVERY_TIMEOUT_MS`).
    pub timeout_ms: u64,
    /// The attempts its row counted before this call (this one is the
    /// next): they pick its retry delay and end its budget
    /// (`hookrelay_core::retry::delivery_attempts`).
    pub attempts_before: u32,
}

/// The result for one item.
#[derive(Debug, Clone)]
pub struct Processed {
    /// How ingest went, if it succeeded (`None` for a delivery).
    pub ingest: Option<IngestKind>,
    /// The row's delivery status as ingest read it.
    pub delivery_status: Option<DeliverySummary>,
    /// What happened about the downstream call.
    pub downstream: DownstreamResult,
    /// The outcome for the disposition.
    pub outcome: Outcome,
    /// For a delivery whose call was made and recorded: what the core
    /// decided of it by its row's count (the consumer applies it).
    pub after: Option<AfterCall>,
    /// For a delivery another holder leases: when that lease ends.
    pub lease_end: Option<i64>,
    /// Leased, then handed on without a call (the call budget or the
    /// invocation's limits ran out): its message goes at once.
    pub handed_on: bool,
    /// The attempt number of the call made (as counted on its row).
    pub attempt: Option<u32>,
}

impl Processed {
    /// A delivery's result without a decided call.
    pub fn delivery(downstream: DownstreamResult, outcome: Outcome) -> Processed {
        Processed {
            ingest: None,
            delivery_status: None,
            downstream,
            outcome,
            after: None,
            lease_end: None,
            handed_on: false,
            attempt: None,
        }
    }

    /// An event not ingested because of `failure` (its message is retried
    /// or dead-lettered as the failure's class says).
    pub fn failed(failure: Failure) -> Processed {
        Processed::delivery(DownstreamResult::NotForwarded, Outcome::Failed(failure))
    }

    /// An event the ingest gave no result for: retried.
    pub fn unanswered() -> Processed {
        Processed::failed(Failure::new(
            ErrorCode::D1Unavailable,
            "the ingest answered no result for this event; retrying",
        ))
    }
}
