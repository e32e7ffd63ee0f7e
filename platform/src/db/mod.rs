//! D1, one module per table. Every SQL statement hookrelay runs lives in
//! the module named for the table it reads or writes; this file holds the
//! binding helpers they share.

pub mod activity;
pub mod alarms;
pub mod archived_rows;
pub mod attempts;
pub mod breakers;
pub mod counters;
pub mod dead_letters;
pub mod deliveries;
pub mod delivery_rows;
pub mod destination_bodies;
pub mod drains;
pub mod event_steps;
pub mod events;
pub mod eviction;
pub mod job_entries;
pub mod jobs;
pub mod payloads;
pub mod rates;
pub mod replay_audit;
pub mod retention;
mod rows;
pub mod signature_failures;
pub mod sweep_state;
pub mod swept_events;
pub mod tombstones;
mod where_clause;

pub use rows::{batch, Query, Row, Rows};
pub use where_clause::Where;

use wasm_bindgen::JsValue;

/// A text parameter.
pub fn text(s: &str) -> JsValue {
    JsValue::from_str(s)
}

/// An optional text parameter (NULL when absent).
pub fn opt_text(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// An integer parameter. D1 numbers are doubles; every integer hookrelay
/// stores (unix ms, counts, sizes) is far below 2^53.
pub fn int(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

/// The message of a D1 (or any worker) error, for classification and logs.
///
/// Worded here rather than through `worker::Error`'s `Display`, which would
/// link a formatter for every variant (I/O, router, KV, …) into the wasm;
/// the variants a worker meets in practice keep their own text, the rest
/// are named. A rejected D1 call arrives already worded, message and cause,
/// by `rows::d1_error`.
pub fn error_message(err: &worker::Error) -> String {
    use worker::Error as E;
    match err {
        E::JsError(s) | E::RustError(s) => s.clone(),
        // As worker's Display words it (`Name [code]: message`), which the
        // D1 error classifier matches against.
        E::UnknownJsError {
            name,
            message,
            code,
            ..
        } => {
            let name = name.as_deref().unwrap_or("Error");
            match code {
                Some(c) => format!("{name} [{c}]: {message}"),
                None => format!("{name}: {message}"),
            }
        }
        E::Internal(v) => v
            .as_string()
            .or_else(|| {
                js_sys::Reflect::get(v, &JsValue::from_str("message"))
                    .ok()
                    .and_then(|m| m.as_string())
            })
            .unwrap_or_else(|| format!("{v:?}")),
        E::BindingError(name) => format!("no binding named `{name}`; declare it in wrangler.toml"),
        E::Json((message, status)) => format!("{message} (status {status})"),
        E::SerdeJsonError(e) => format!("JSON: {e}"),
        E::BodyUsed => "the body was already read".into(),
        E::BadEncoding => "the content type does not match the body".into(),
        E::EmailRecipientSuppressed(m)
        | E::EmailRecipientNotAllowed(m)
        | E::RateLimitExceeded(m)
        | E::DailyLimitExceeded(m)
        | E::InternalError(m) => m.clone(),
        other => {
            let variant: &'static str = other.into();
            format!("worker error {variant}")
        }
    }
}

/// Rows a write statement changed (for `map_or(0, changes)` chains).
pub fn changes(result: &Rows) -> usize {
    result.changes()
}
