//! Stage 12, the admin API's core (served by the DLQ worker): bearer tokens
//! (HS256) and the internal token between the workers, the listings' query
//! parameters and cursors, and the stats' per-destination and hourly lines.

pub mod internal_token;
pub mod jwt;
pub mod query;
pub mod stats_destinations;
pub mod stats_hourly;
pub mod token_identity;
