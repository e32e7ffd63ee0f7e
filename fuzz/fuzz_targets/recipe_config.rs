//! `SOURCES` with hostile recipes: `parse_sources` must answer a value or
//! an error naming a `SOURCES.…` key, never panic. The input is JSON text
//! (anything else is skipped: the JSON parser has its own fuzzing).
#![no_main]

use hookrelay_core::config::parse_sources;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(recipe) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    // As the whole scheme, and as one field of a valid recipe.
    let mut as_field = json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}"});
    if let Value::Object(fields) = &recipe {
        for (k, v) in fields {
            as_field[k] = v.clone();
        }
    }
    for scheme in [recipe.clone(), as_field] {
        match parse_sources(&json!({"acme": {"scheme": scheme}})) {
            Ok(specs) => {
                let _ = specs[0].scheme.secret_headers();
            }
            Err(e) => assert!(e.key.starts_with("SOURCES"), "{}", e.key),
        }
    }
});
