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
// the message itself (src/routes/ingest.rs). This file only reads, sends
// and hands each outcome back. Every `#[wasm_bindgen]` export is a method
// of worker-build's entry class, which is how they are reached here. A
// panic is recovered as under worker-build's entry: wasm-bindgen's glue
// reinitializes the instance on the next call (tests/panic-recovery).
import Relay from "./glue.mjs";
// The one body reader (platform/src/read_body.js; build.sh copies it here).
import { readBody } from "./read_body.mjs";

const relay = Relay.prototype;

const TEXT = { contentType: "text" };

/** A rejection's reason, never `undefined` (which Rust reads as success). */
const reason = (e) => e ?? new Error("rejected without a reason");

/**
 * The method, URL and headers as one string, in the form `raw_http::head`
 * reads: the method, a line feed, the URL, a line feed, then each name and
 * value followed by a line feed (neither a URL nor a header value holds a
 * line feed).
 */
function head(request) {
  let text = request.method + "\n" + request.url + "\n";
  for (const [name, value] of request.headers) text += name + "\n" + value + "\n";
  return text;
}

/**
 * Whether a step's value is the answer itself (a response, or a promise of
 * one) rather than what the entry is to do next.
 */
const isAnswer = (next) => next instanceof Response || next instanceof Promise;

/**
 * Read the body, verify, send, answer: the webhook passed the precheck.
 * The go-ahead is `{ limit, drain, source }`, from ingest_route::begin. A body
 * of undeclared length is kept up to `limit` + 1 bytes (the relay refuses
 * more as too large) and drained, unkept, up to `drain`.
 */
async function ingest(request, env, ctx, { limit, drain, source }) {
  let body;
  let failure;
  try {
    body = await readBody(request, limit + 1, limit, drain);
  } catch (e) {
    failure = reason(e);
  }
  const next = relay.ingestBody(env, ctx, source, head(request), body, failure);
  // The answer, or `{ eventId, message }`: the message to send.
  if (isAnswer(next)) return next;
  try {
    if (env.WEBHOOKS === undefined) throw new Error("Binding `WEBHOOKS` is undefined: the relay's wrangler.toml must produce to the queue `webhooks`");
    // As platform/src/queue_send.rs sends every message: JSON text.
    await env.WEBHOOKS.send(next.message, TEXT);
  } catch (e) {
    failure = reason(e);
  }
  return relay.ingestSent(env, ctx, source, next.eventId, failure);
}

export default {
  fetch(request, env, ctx) {
    // The answer, or the go-ahead to read a webhook's body.
    const next = relay.fetch.call({ env, ctx }, request);
    return isAnswer(next) ? next : ingest(request, env, ctx, next);
  },
  queue(batch, env, ctx) {
    return relay.queue.call({ env, ctx }, batch);
  },
  scheduled(event, env, ctx) {
    return relay.scheduled.call({ env, ctx }, event);
  },
};
