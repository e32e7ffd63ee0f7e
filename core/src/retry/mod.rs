//! Stage 6, retry: what happens to a queue message after one attempt, as a
//! value (ack, retry after a delay, dead-letter); the retry schedule as
//! data; the failed attempt as `attempts` records it; and the message a
//! poison failure hands to `webhooks-dlq`. Parking, the other answer to an
//! unwell destination, is the next folder, `parking/`.

pub mod attempt;
pub mod delivery_attempts;
pub mod disposition;
pub mod poison_handoff;
pub mod policy;
pub mod waits;
