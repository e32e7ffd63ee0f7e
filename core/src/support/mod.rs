//! What every stage leans on and no stage owns: encodings (base64, forms),
//! time and calendar maths, durations and sizes with a unit, redaction,
//! small collections, the platform's limits (queue batches, subrequests),
//! D1 error classification, the queue names, and where configuration values
//! come from (and how a bad one is named).
//! Nothing here imports a stage.

pub mod base64;
pub mod bindings;
pub mod calendar;
pub mod d1_error;
pub mod duration;
pub mod env;
pub mod form;
pub mod queue_batch;
pub mod queue_names;
pub mod redact;
pub mod size;
pub mod small_sort;
pub(crate) mod strict_json;
pub mod subrequests;
pub mod utc;
pub mod vec_map;
