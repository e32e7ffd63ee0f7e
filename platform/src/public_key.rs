//! Public-key signatures through workerd's WebCrypto (`crypto.subtle`):
//! Ed25519 (Discord) and ECDSA P-256 with SHA-256 (SendGrid). The core
//! decides what is signed and converts the signature to the form WebCrypto
//! takes; this only runs the check.

use hookrelay_core::signature::{PublicKeyAlg, PublicKeyCheck};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(inline_js = r#"
export function verify_signature(ed25519, key, signature, message) {
  // Copied before the first await: the arguments are views of wasm memory.
  const [k, s, m] = [key.slice(), signature.slice(), message.slice()];
  const check = async () => {
    if (ed25519) {
      let algo = { name: "Ed25519" };
      let imported;
      try {
        imported = await crypto.subtle.importKey("raw", k, algo, false, ["verify"]);
      } catch {
        // workerd's older spelling of the same algorithm.
        algo = { name: "NODE-ED25519", namedCurve: "NODE-ED25519" };
        imported = await crypto.subtle.importKey("raw", k, algo, false, ["verify"]);
      }
      return crypto.subtle.verify(algo, imported, s, m);
    }
    const imported = await crypto.subtle.importKey("spki", k, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
    return crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, imported, s, m);
  };
  return check();
}
"#)]
extern "C" {
    fn verify_signature(ed25519: bool, key: &[u8], signature: &[u8], message: &[u8]) -> Promise;
}

/// Whether `check`'s signature holds under `public_key`. An error is a key
/// WebCrypto cannot import (the configuration check makes that unlikely).
pub async fn holds(check: &PublicKeyCheck, public_key: &[u8]) -> worker::Result<bool> {
    let ed25519 = matches!(check.alg, PublicKeyAlg::Ed25519);
    let promise = verify_signature(ed25519, public_key, &check.signature, &check.message);
    let verdict = JsFuture::from(promise).await?;
    Ok(verdict.as_bool() == Some(true))
}
