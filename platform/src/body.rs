//! Reading a request body that will not be used, with the one body reader
//! (`read_body.js`, which the relay's module entry also reads webhooks with).
//!
//! Answering before the client finished sending its body makes workerd
//! reset the connection (seen locally through `wrangler dev` and Miniflare:
//! the client gets ECONNRESET instead of the 4xx). So an early refusal first
//! reads the body to the end and drops it, up to a bound past which the
//! sender is plainly abusive and a reset is acceptable.
//!
//! The bytes never enter wasm: reading them chunk by chunk from wasm copied
//! every chunk in and woke a future per chunk, which made a refused 1 MB
//! body cost about as much CPU as hashing it (bench target 4, "unknown
//! source, 1 MB body").

use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;
use worker::Request;

/// Bytes read and dropped at most.
pub const DRAIN_LIMIT_BYTES: usize = 32 * 1024 * 1024;

/// A body declared at most this long is read in one native call rather
/// than chunk by chunk in JS (a 1 MB body: about twice as cheap); a longer
/// one is streamed, so an abusive sender never makes the isolate hold
/// more than a chunk.
const WHOLE_READ_BYTES: usize = 2 * 1024 * 1024;

// The reader is shared with the relay's module entry (`src/entry.js`).
#[wasm_bindgen(module = "/src/read_body.js")]
extern "C" {
    #[wasm_bindgen(js_name = readBody)]
    fn read_body(
        req: &worker::web_sys::Request,
        keep: f64,
        whole: f64,
        stop: f64,
    ) -> js_sys::Promise;
}

/// Reads and drops the rest of the body. A read that fails (the client went
/// away) ends the drain quietly: there is no one left to answer.
pub async fn drain(req: &Request) {
    let _ = JsFuture::from(read_body(
        req.inner(),
        0.0,
        WHOLE_READ_BYTES as f64,
        DRAIN_LIMIT_BYTES as f64,
    ))
    .await;
}
