//! D1, one module per table. Every SQL statement hookrelay runs lives in
//! the module named for the table it reads or writes; this file holds the
//! binding helpers they share.

pub mod attempts;
pub mod breakers;
pub mod counters;
pub mod dead_letters;
pub mod drains;
pub mod event_steps;
pub mod events;
pub mod job_entries;
pub mod jobs;
pub mod payloads;
pub mod replay_audit;
pub mod tombstones;
mod where_clause;

pub use where_clause::Where;

use crate::outlined::{outlined, Outlined};
use std::future::Future;
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

/// The message of a D1 (or any worker) error, for classification.
pub fn error_message(err: &worker::Error) -> String {
    match err {
        worker::Error::JsError(s) | worker::Error::RustError(s) => s.clone(),
        worker::Error::Internal(v) => v
            .as_string()
            .or_else(|| {
                js_sys::Reflect::get(v, &JsValue::from_str("message"))
                    .ok()
                    .and_then(|m| m.as_string())
            })
            .unwrap_or_else(|| format!("{v:?}")),
        other => other.to_string(),
    }
}

/// Rows a write statement changed, from its result's metadata.
pub fn changes(result: &worker::D1Result) -> usize {
    result
        .meta()
        .ok()
        .flatten()
        .and_then(|m| m.changes)
        .unwrap_or(0)
}

/// `db.batch(statements)`, awaited through [`outlined`]: worker's `batch`
/// is an async fn, so without this its body (the JS promise, the error
/// cast, the array walk) is copied into every caller's state machine.
pub fn batch(
    db: &worker::D1Database,
    statements: Vec<worker::D1PreparedStatement>,
) -> Outlined<impl Future<Output = worker::Result<Vec<worker::D1Result>>> + '_> {
    outlined(db.batch(statements))
}
