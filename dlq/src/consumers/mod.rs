//! The `queue` trigger's consumers, one per queue, named for it:
//! `webhooks_dlq` (the triage of `webhooks-dlq` into envelopes in D1) and
//! `jobs` (`hookrelay-jobs`: one step of one job per message). The dispatch
//! by queue name is `queue_entry.rs`.

pub(crate) mod jobs;
pub(crate) mod webhooks_dlq;
