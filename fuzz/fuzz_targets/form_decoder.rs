//! The form decoder on any bytes: it answers the fields or an error, never
//! panics, and what it decodes is seen as an object of string fields.
#![no_main]

use hookrelay_core::support::form::{decode, to_object};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    if let Ok(fields) = decode(data) {
        let n = fields.len();
        let Value::Object(map) = to_object(fields) else {
            panic!("a form is an object");
        };
        assert!(map.len() <= n);
        for v in map.values() {
            match v {
                Value::String(_) => {}
                Value::Array(list) => assert!(list.len() >= 2 && list.iter().all(Value::is_string)),
                other => panic!("a field is a string or a list of them: {other}"),
            }
        }
    }
});
