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

/**
 * The body; when it is over `limit` bytes, its first `limit` + 1 (which
 * the relay refuses as too large). A declared length passed the precheck,
 * so such a body is read whole, in one native call. One of undeclared
 * length (sent chunked) is streamed: past the limit its bytes are dropped,
 * and past `drain` the read stops (the sender is abusive; a reset is fine).
 * Draining lets the client read the 413: workerd resets a connection
 * answered before its body was read.
 */
async function readBody(request, limit, drain) {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (request.body === null || (declared >= 0 && declared <= limit)) return new Uint8Array(await request.arrayBuffer());
  const kept = new Uint8Array(limit + 1);
  const reader = request.body.getReader();
  let seen = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (seen <= limit) kept.set(value.subarray(0, limit + 1 - seen), seen);
    seen += value.byteLength;
    if (seen > drain) {
      reader.cancel().catch(() => {});
      break;
    }
  }
  return kept.subarray(0, Math.min(seen, limit + 1));
}

/** Read the body, verify, send, answer: the webhook passed the precheck. */
async function ingest(request, env, ctx, goAhead) {
  // "{limit} {drain} {source}", from ingest_route::begin.
  const [limit, drain] = goAhead.split(" ", 2).map(Number);
  const source = goAhead.slice(goAhead.indexOf(" ", goAhead.indexOf(" ") + 1) + 1);
  let body;
  let failure;
  try {
    body = await readBody(request, limit, drain);
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
    // The answer, or a string: the go-ahead to read a webhook's body.
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
