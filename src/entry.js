// The relay's module entry (copied to build/index.js by scripts/build.sh;
// worker-build's own output becomes build/glue.mjs beside it).
//
// Why not worker-build's entry: it is a WorkerEntrypoint class behind
// Proxies, constructed per request, and the ingest's two waits were `then`
// callbacks into wasm that carried strings across and back. Reading the
// body and the headers, and sending the message, here, with one call into
// wasm after each wait, costs an accepted webhook about 2% less CPU
// (bench/ab-relay.mjs; bench/README.md, "Latest").
//
// What stays in Rust: routing, every check and decision, every answer and
// the message itself (src/ingest_route.rs). This file only reads, sends
// and hands each outcome back. Every `#[wasm_bindgen]` export is a method
// of worker-build's entry class, which is how they are reached here. A
// panic is recovered as under worker-build's entry: wasm-bindgen's glue
// reinitializes the instance on the next call (tests/panic-recovery).
import Relay from "./glue.mjs";

const relay = Relay.prototype;

const TEXT = { contentType: "text" };

/** A rejection's reason, never `undefined` (which Rust reads as success). */
const reason = (e) => e ?? new Error("rejected without a reason");

/**
 * The method and headers as one string, in the form `raw_http::head`
 * reads: the method, a line feed, then each name and value followed by a
 * line feed (a header value never holds a line feed).
 */
function head(request) {
  let text = request.method + "\n";
  for (const [name, value] of request.headers) text += name + "\n" + value + "\n";
  return text;
}

/** Read the body, verify, send, answer: `source` passed the precheck. */
async function ingest(request, env, ctx, source) {
  let body;
  let failure;
  try {
    body = new Uint8Array(await request.arrayBuffer());
  } catch (e) {
    failure = reason(e);
  }
  const next = relay.ingestBody(env, ctx, source, head(request), body, failure);
  // Anything but "{event id}\n{message}" is the answer itself.
  if (typeof next !== "string") return next;
  const cut = next.indexOf("\n");
  try {
    if (env.WEBHOOKS === undefined) throw new Error("Binding `WEBHOOKS` is undefined: the relay's wrangler.toml must produce to the queue `webhooks`");
    // As platform/src/queue_send.rs sends every message: JSON text.
    await env.WEBHOOKS.send(next.slice(cut + 1), TEXT);
  } catch (e) {
    failure = reason(e);
  }
  return relay.ingestSent(env, ctx, source, next.slice(0, cut), failure);
}

export default {
  fetch(request, env, ctx) {
    // The answer, or a string: the source of a webhook to read and verify.
    const next = relay.fetch.call({ env, ctx }, request);
    return typeof next === "string" ? ingest(request, env, ctx, next) : next;
  },
  queue(batch, env, ctx) {
    return relay.queue.call({ env, ctx }, batch);
  },
  scheduled(event, env, ctx) {
    return relay.scheduled.call({ env, ctx }, event);
  },
};
