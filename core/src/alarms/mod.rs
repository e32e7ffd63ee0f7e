//! The watchdog's decisions (DESIGN §5, Alarms), as values.
//!
//! - [`conditions`]: from a snapshot of figures the glue read, the set of
//!   alarm conditions that hold now, each with the `detail` to act on.
//! - [`machine`]: from the stored alarms and those conditions, which alarms
//!   fire, which resolve, and which alerts still have to be sent.
//! - [`alert_payload`]: the JSON an alert receiver gets, and its signed headers.
//! - [`cannot_store`]: the `dlq_cannot_store` alarm, whose state lives in
//!   one R2 object (written with a conditional put) because D1 is what fails.
//! - [`watchdog_budget`]: how many alerts a run may send within the
//!   invocation's subrequest budget.
//!
//! Out of scope: reading the figures, storing the alarms, and the POST; the
//! relay's glue does those and applies what these functions return.

pub mod alert_listing;
pub mod alert_payload;
pub mod cannot_store;
pub mod conditions;
mod id;
pub mod machine;
pub mod settings;
pub mod watchdog_budget;

pub use id::AlarmId;
pub use settings::{AlarmConfig, AlertUrl, MAX_ALERT_TIMEOUT_MS};

/// The relay route the DLQ consumer reports a dead letter it cannot store
/// to (body: [`cannot_store::StoreFailure`]).
pub const CANNOT_STORE_PATH: &str = "/internal/v1/dlq-cannot-store";
/// The relay route that sends a test alert for `POST /api/v1/admin/alerts/test`.
pub const ALERT_TEST_PATH: &str = "/internal/v1/alerts/test";
/// The relay route that answers whether `ALERT_WEBHOOK_URL` is set
/// (`{"receiver_configured": bool}`), never the URL itself.
pub const ALERT_RECEIVER_PATH: &str = "/internal/v1/alerts/receiver";
