//! The names counters are kept under, and the components that count them.

use crate::state::named_states;

named_states! {
    /// What is counted. The stored name is the Analytics Engine `index1` and
    /// `blob1`, and the start of the D1 `counters` key.
    pub enum MetricName ("metric name") {
        /// A webhook accepted and put on the queue.
        Enqueue = "enqueue",
        /// A provider's handshake, verified and answered (never enqueued).
        Handshake = "handshake",
        /// A request refused because it failed its signature check (401).
        SignatureFailures = "signature_failures",
        /// An event written to D1 for the first time.
        Ingest = "ingest",
        /// A provider's second delivery of an event already ingested.
        Duplicate = "duplicate",
        /// An event ingested that no route matched (DESIGN §3).
        Filtered = "filtered",
        /// A downstream answered 2xx.
        Delivered = "delivered",
        /// A downstream call failed.
        DeliveryFailed = "delivery_failed",
        /// A queue message asked for redelivery.
        Retry = "retry",
        /// A poison message handed to `webhooks-dlq`.
        DeadLetterHandoff = "dead_letter_handoff",
        /// A dead letter stored as a new entry.
        DeadLettered = "dead_lettered",
        /// A dead letter merged into an identical pending entry.
        DlqDeduped = "dlq_deduped",
        /// A pending entry evicted for capacity.
        DropOverflow = "drop_overflow",
        /// An entry that became `poisoned` after too many failed replays.
        DropPoison = "drop_poison",
        /// A replay that succeeded.
        ReplaySucceeded = "replay_succeeded",
        /// A replay that failed.
        ReplayFailed = "replay_failed",
        /// A replay skipped as identical to one already replayed in its run.
        ReplayDeduped = "replay_deduped",
        /// A circuit breaker changed state (detail: the new state).
        BreakerTransition = "breaker_transition",
        /// A dead letter that could not be stored, and was retried.
        DlqStoreFailed = "dlq_store_failed",
        /// An event parked while its destination's breaker was open.
        Parked = "parked",
        /// A parked event delivered by a drain.
        Drained = "drained",
        /// An entry archived by an operator.
        Archived = "archived",
        /// An archived entry brought back to pending.
        Unarchived = "unarchived",
        /// An entry discarded (its payload erased).
        Discarded = "discarded",
        /// An evicted or swept entry brought back from the archive.
        Restored = "restored",
        /// An alarm started firing (detail: its kind).
        AlarmFired = "alarm_fired",
        /// An alarm resolved (detail: its kind).
        AlarmResolved = "alarm_resolved",
        /// An alert POST to `ALERT_WEBHOOK_URL` failed (retried next run).
        AlertFailed = "alert_failed",
        /// A delivery's lease ran out with its outcome unrecorded: counted
        /// as a `TIMEOUT` attempt and retried (the destination may already
        /// have it).
        LeaseExpired = "lease_expired",
        /// A delivery's `deliveries` message was overdue (lost) and the
        /// periodic check sent it again.
        MessageResent = "message_resent",
        /// A pull that leased at least one delivery (detail: the pull
        /// destination); an empty pull is not counted.
        Pull = "pull",
        /// Deliveries a pull leased (detail: the pull destination).
        PullLeased = "pull_leased",
        /// A pull consumer's ack result (detail: its state, `delivered`,
        /// `pending`, `dead_lettered`, `lease_expired` or `unknown`).
        PullAck = "pull_ack",
        /// A pull lease that ended with no ack, settled by the periodic
        /// check as a failed `TIMEOUT` attempt.
        PullLeaseExpired = "pull_lease_expired",
    }
}

impl MetricName {
    /// Whether the buffered flush adds this metric to D1's `counters`.
    /// `ingest` and `duplicate` are kept there by triggers on `events`
    /// (migration 0007), in the ingest's own transaction, and `delivered`
    /// by one on the delivery's own write (0008), `dead_lettered` and
    /// `dlq_deduped` by ones on the DLQ's batch write (0009); `enqueue` is
    /// counted by Analytics Engine only, because counting must never cost
    /// the ingest request a D1 round trip (DESIGN §5; the consumer's
    /// `ingest` counter is the D1 view of accepted events);
    /// `signature_failures` reaches D1 through the relay's own tally
    /// (`signature_tally.rs`), written once per spell.
    pub fn flushed_to_d1(self) -> bool {
        !matches!(
            self,
            MetricName::Ingest
                | MetricName::Duplicate
                | MetricName::Delivered
                | MetricName::DeadLettered
                | MetricName::DlqDeduped
                | MetricName::Enqueue
                | MetricName::SignatureFailures
        )
    }
}

named_states! {
    /// Which part of hookrelay counted or logged something.
    pub enum Component ("component") {
        /// The relay's fetch handler (ingest).
        Relay = "relay",
        /// The `webhooks` queue consumer.
        Consumer = "consumer",
        /// The `deliveries` queue consumer (a delivery's retries).
        Deliveries = "deliveries",
        /// The DLQ worker's triage of `webhooks-dlq`.
        Dlq = "dlq",
        /// The admin API.
        Admin = "admin",
        /// A replay carried out for the admin API.
        Replay = "replay",
        /// Counting itself.
        Metrics = "metrics",
        /// A drain of parked events (`hookrelay-control`).
        Drain = "drain",
        /// The retention sweep (`maintenance`, the cron, its continuations).
        Sweep = "sweep",
        /// The relay's alarm watchdog and alert sender.
        Watchdog = "watchdog",
    }
}
