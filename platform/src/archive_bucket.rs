//! The R2 archive bucket (binding `ARCHIVE`): plain text objects written,
//! read, listed and deleted through a small JS snippet.
//!
//! Why a snippet and not workers-rs's `Bucket`: its `put` has been reported
//! to hang under `wrangler dev` (workers-rs#377), and the conditional put
//! the cannot-store alarm needs (`If-None-Match: *`, `etagMatches`) is
//! plainest in the binding's own terms. Answers cross as JSON text, read
//! with serde_json, so no JS object is walked from wasm.

use js_sys::Promise;
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;
use worker::Env;

/// The binding's name in both wrangler configs.
pub const BINDING: &str = "ARCHIVE";

#[wasm_bindgen(inline_js = r#"
function bucket(env, name) {
  const b = env[name];
  if (b === undefined) throw new Error(`the R2 binding ${name} is missing: add [[r2_buckets]] binding = "${name}" to this worker's wrangler.toml`);
  return b;
}
export async function r2_put(env, name, key, text, rows, cond) {
  const opts = { httpMetadata: { contentType: "application/x-ndjson" }, customMetadata: { rows: String(rows) } };
  if (cond === "absent") opts.onlyIf = new Headers({ "If-None-Match": "*" });
  else if (cond !== undefined) opts.onlyIf = { etagMatches: cond };
  const put = await bucket(env, name).put(key, text, opts);
  return put === null ? null : put.etag;
}
export async function r2_put_rows(env, name, key, rows) {
  const text = rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
  const opts = { httpMetadata: { contentType: "application/x-ndjson" }, customMetadata: { rows: String(rows.length) } };
  await bucket(env, name).put(key, text, opts);
  return rows.length;
}
export async function r2_get(env, name, key) {
  const o = await bucket(env, name).get(key);
  if (o === null) return null;
  return JSON.stringify({ etag: o.etag, text: await o.text() });
}
export async function r2_list(env, name, prefix, cursor, limit) {
  const page = await bucket(env, name).list({ prefix, cursor, limit, include: ["customMetadata"] });
  return JSON.stringify({
    objects: page.objects.map((o) => ({ key: o.key, size: o.size, uploaded_ms: o.uploaded.getTime(), rows: Number(o.customMetadata?.rows ?? NaN) })),
    cursor: page.truncated ? page.cursor : null,
  });
}
export async function r2_put_body(env, name, key, text, contentType) {
  await bucket(env, name).put(key, text, { httpMetadata: { contentType } });
}
export async function r2_delete(env, name, keys) {
  await bucket(env, name).delete(keys);
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn r2_put(
        env: &Env,
        name: &str,
        key: &str,
        text: &str,
        rows: u32,
        cond: Option<String>,
    ) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn r2_put_rows(
        env: &Env,
        name: &str,
        key: &str,
        rows: &js_sys::Array,
    ) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn r2_get(env: &Env, name: &str, key: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn r2_list(
        env: &Env,
        name: &str,
        prefix: &str,
        cursor: Option<String>,
        limit: u32,
    ) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn r2_put_body(
        env: &Env,
        name: &str,
        key: &str,
        text: &str,
        content_type: &str,
    ) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn r2_delete(env: &Env, name: &str, keys: Vec<String>) -> Result<Promise, JsValue>;
}

/// When a put may happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutIf {
    /// Always: a repeated write of the same key overwrites (the archive's
    /// deterministic keys rely on it).
    Always,
    /// Only if no object has the key.
    Absent,
    /// Only if the object still has this etag (compare-and-set).
    EtagIs(String),
}

/// An object as read: its text and its etag (for a later compare-and-set).
#[derive(Debug, Clone, Deserialize)]
pub struct Object {
    /// The object's etag.
    pub etag: String,
    /// The object's content.
    pub text: String,
}

/// One object of a listing.
#[derive(Debug, Clone, Deserialize)]
pub struct Listed {
    /// Its key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was written, unix ms.
    pub uploaded_ms: i64,
    /// The rows it holds, as written in its metadata (`None` if absent).
    pub rows: Option<u64>,
}

/// One page of a listing.
#[derive(Debug, Clone, Deserialize)]
pub struct ListPage {
    /// The objects, in key order.
    pub objects: Vec<Listed>,
    /// Where the next page starts, if there is one.
    pub cursor: Option<String>,
}

async fn settle(p: Result<Promise, JsValue>) -> worker::Result<JsValue> {
    Ok(JsFuture::from(p?).await?)
}

/// Writes `text` (holding `rows` rows) at `key` if `cond` allows: the new
/// etag, or `None` when the condition failed and nothing was written.
pub async fn put(
    env: &Env,
    key: &str,
    text: &str,
    rows: u32,
    cond: PutIf,
) -> worker::Result<Option<String>> {
    let cond = match cond {
        PutIf::Always => None,
        PutIf::Absent => Some("absent".to_string()),
        PutIf::EtagIs(etag) => Some(etag),
    };
    let etag = settle(r2_put(env, BINDING, key, text, rows, cond)).await?;
    Ok(etag.as_string())
}

/// Writes D1 result rows (`rows`, as D1 returned them) at `key` as NDJSON,
/// overwriting: each row one `JSON.stringify` line, columns in D1's order,
/// the same values `hookrelay_core::retention::ndjson::encode_rows` writes
/// and `decode_rows` reads. The rows never cross into wasm. Answers how
/// many rows it wrote.
pub async fn put_rows(env: &Env, key: &str, rows: &js_sys::Array) -> worker::Result<u32> {
    let n = settle(r2_put_rows(env, BINDING, key, rows)).await?;
    n.as_f64()
        .map(|n| n as u32)
        .ok_or_else(|| worker::Error::RustError("R2 put_rows answered no row count".into()))
}

/// Reads the object at `key`, if there is one.
pub async fn get(env: &Env, key: &str) -> worker::Result<Option<Object>> {
    let json = settle(r2_get(env, BINDING, key)).await?;
    match json.as_string() {
        None => Ok(None),
        Some(text) => Ok(Some(serde_json::from_str(&text)?)),
    }
}

/// Lists up to `limit` objects under `prefix`, from `cursor`.
pub async fn list(
    env: &Env,
    prefix: &str,
    cursor: Option<String>,
    limit: u32,
) -> worker::Result<ListPage> {
    let json = settle(r2_list(env, BINDING, prefix, cursor, limit)).await?;
    let text = json
        .as_string()
        .ok_or_else(|| worker::Error::RustError("R2 list answered no text".into()))?;
    Ok(serde_json::from_str(&text)?)
}

/// Puts an event's body under `key` with its content type (a queue
/// destination's large body, `hookrelay_core::deliver::queue_destination`).
pub async fn put_body(env: &Env, key: &str, body: &str, content_type: &str) -> worker::Result<()> {
    settle(r2_put_body(env, BINDING, key, body, content_type)).await?;
    Ok(())
}

/// Deletes the objects at `keys` (absent ones are no error).
pub async fn delete(env: &Env, keys: &[String]) -> worker::Result<()> {
    settle(r2_delete(env, BINDING, keys.to_vec())).await?;
    Ok(())
}
