//! Stage 5, deliver: one delivery per (event, matching route), each with its
//! own state and lease; the destinations and their credentials; the signed
//! request a destination receives and what its answer means; a queue
//! destination's message; what a pull destination's consumer pulls and
//! acks, and its figures (waiting, leased, the oldest due); the circuit
//! breaker in front of each destination; and rates (what a rate means
//! everywhere, and the shared reservation).
//! What happens after a failure is the next folder, `retry/`.

pub mod breaker;
pub mod call_scheduler;
pub mod deliveries;
pub mod destination_keys;
pub mod destinations;
pub mod lease;
pub mod overdue;
pub mod pacing;
pub mod pull;
pub mod pull_figures;
pub mod queue_destination;
pub mod rate_slots;
pub mod request;
pub mod response;
pub mod settings;

pub use destination_keys::{auth_header, AuthForm, AuthHeader, DestinationKeys};
pub use destinations::{
    check_bindings, check_not_own_targets, load_destinations, parse_destinations, service_url,
    BindingKind, Destination, OwnTargets, PullSettings, Target, DELIVERY_TIMEOUT_RANGE_MS,
};
pub use settings::{DeliveryConfig, SourceRoutes, DEFAULT_DELIVERY_TIMEOUT_MS};
