//! Stage 9, replay: who may be replayed and in which order (replay-all's
//! plan, its canary and its bounded slice), the hand-over between the DLQ
//! worker and the relay that makes the call, and what one replay came to.
//! Bulk decisions that survive a restart are the next folder, `jobs/`.

pub mod call;
pub mod plan;
pub mod verdict;
