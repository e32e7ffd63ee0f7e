//! Stage 1, receive (`POST /webhooks/{source}`): from a raw request to an
//! event on the `webhooks` queue. The front door's checks in their order,
//! the event's identity, the claim check for large bodies, the queue
//! message's format, and the limit on failing signature checks. The
//! signature schemes themselves are the next folder, `signature/`.

pub mod claim_check;
pub mod front_door;
pub mod idempotency;
pub mod queued_event;
pub mod signature_limit;
pub mod signature_tally;
pub mod sources;

pub use sources::{
    decode_public_key, load_sources, parse_sources, secret_name, Source, SourceSpec, Sources,
    DEFAULT_TOLERANCE_S, PREVIOUS_SUFFIX,
};
