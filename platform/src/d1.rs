//! Small helpers for binding values and reading D1 errors.

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
