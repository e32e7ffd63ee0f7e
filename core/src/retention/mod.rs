//! Retention and the archive (DESIGN §5), as decisions: what leaves D1,
//! under which keys it lands in R2, and how an entry comes back.
//!
//! - [`tables`]: what may be swept: each table's age, and the one SQL
//!   condition the candidate read and every delete guard apply.
//! - [`plan`]: one bounded sweep run, chunk by chunk, with its journal.
//! - [`archive_key`]: the deterministic key layout, and parsing it back.
//! - [`ndjson`]: an archive object's rows, one JSON object per line.
//! - [`restore`]: bringing an evicted or swept dead letter back.
//! - [`entry_archive`]: the objects a capacity eviction writes before it
//!   deletes, and the columns a restore may write back.
//! - [`continuation`]: the control-queue message that continues a sweep.
//! - [`lease`]: one sweep step (and watchdog) at a time.
//!
//! Out of scope: the D1 reads and writes and the R2 calls; the relay's glue
//! makes them and applies what these functions return.

pub mod archive_key;
pub mod continuation;
pub mod entry_archive;
pub mod ndjson;
pub mod plan;
pub mod restore;
pub mod settings;
pub mod tables;

pub use settings::{RetentionConfig, D1_HARD_LIMIT_BYTES};
