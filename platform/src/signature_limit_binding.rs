//! The Workers rate-limiting binding (`[[ratelimits]]` in wrangler.toml):
//! one `limit({ key })` call, which counts the key and says whether it is
//! still under the limit. What to count and what follows is the caller's.

use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;
use worker::Env;

#[wasm_bindgen(inline_js = r#"
export function limit_call(env, binding, key) {
  const limiter = env[binding];
  if (limiter === undefined || typeof limiter.limit !== "function") {
    throw new Error("binding `" + binding + "` is not a rate limiter: declare it in wrangler.toml [[ratelimits]]");
  }
  return limiter.limit({ key }).then((r) => r.success === true);
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn limit_call(env: &JsValue, binding: &str, key: &str) -> Result<js_sys::Promise, JsValue>;
}

/// Counts one hit of `key` on the limiter bound as `binding`: `Ok(true)`
/// while under its limit, `Ok(false)` once over. An error (the binding is
/// missing, the call failed) names what failed.
pub async fn under_limit(env: &Env, binding: &str, key: &str) -> Result<bool, String> {
    let promise = limit_call(env, binding, key).map_err(js_text)?;
    let answer = JsFuture::from(promise).await.map_err(js_text)?;
    Ok(answer.as_bool() == Some(true))
}

fn js_text(e: JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "the rate limiter failed".to_string())
}
