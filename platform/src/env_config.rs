//! Reads wrangler vars and secrets for `hookrelay_core::config`, and
//! answers which bindings the worker declares (for `check_bindings`).

use hookrelay_core::deliver::BindingKind;
use hookrelay_core::support::env::ConfigEnv;
use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::Env;

/// `Env` seen as a configuration source. Strings (vars and secrets) come
/// through as JSON strings; object vars (such as `SOURCES` declared as a
/// TOML table) come through as JSON objects.
pub struct WorkerEnv<'a>(pub &'a Env);

impl ConfigEnv for WorkerEnv<'_> {
    fn get(&self, name: &str) -> Option<Value> {
        let value = js_sys::Reflect::get(self.0, &JsValue::from_str(name)).ok()?;
        if value.is_undefined() || value.is_null() {
            return None;
        }
        if let Some(text) = value.as_string() {
            return Some(Value::String(text));
        }
        let json: String = js_sys::JSON::stringify(&value).ok()?.into();
        serde_json::from_str(&json).ok()
    }
}

/// Whether `env` binds `name` as a binding of `kind`: a service binding by
/// the runtime's own type; a queue by what a producer does (`send`), as
/// the send itself uses it (`crate::queue_destination`): a producer
/// binding, or a Worker's entrypoint that takes `send` over RPC. A var
/// under that name is not one.
pub fn binding_declared(env: &Env, kind: BindingKind, name: &str) -> bool {
    match kind {
        BindingKind::Service => env.service(name).is_ok(),
        BindingKind::Queue => {
            let Ok(binding) = js_sys::Reflect::get(env, &JsValue::from_str(name)) else {
                return false;
            };
            let send = js_sys::Reflect::get(&binding, &JsValue::from_str("send"));
            binding.is_object() && send.is_ok_and(|f| f.is_function())
        }
    }
}
