// Target 4's anchor read literally: a hand-written JS worker that verifies
// the same HMAC with WebCrypto, applies the same size check and sends the
// event to the queue, and does nothing else. Unlike bench/js-ingest it
// does not check that the body is JSON, derive the idempotency key and
// event id, nor keep the redacted headers: the work DESIGN §2 asks of the
// relay and the envelope later relies on. An outside harness may well
// write this one, so target 4 reports the relay against both.
//
// Built by bench/run.mjs with esbuild to bench/.build/js-ingest-bare.js.

import { anyMacMatches, fromHex, type IngestEnv } from "../js-shared/ingest";

let sources: Record<string, { tolerance_s?: number }> | undefined;

export default {
  async fetch(request: Request, env: IngestEnv): Promise<Response> {
    const m = /^\/webhooks\/([^/]+)$/.exec(new URL(request.url).pathname);
    if (!m || request.method !== "POST") return new Response("not found", { status: 404 });
    const name = m[1];
    sources ??= JSON.parse(env.SOURCES) as Record<string, { tolerance_s?: number }>;
    const source = sources[name];
    if (!source) return new Response("unknown source", { status: 404 });
    const maxBytes = Number(env.MAX_BODY_BYTES ?? 1_048_576);
    if (Number(request.headers.get("content-length") ?? 0) > maxBytes) return new Response("too large", { status: 413 });
    const raw = new Uint8Array(await request.arrayBuffer());
    if (raw.length > maxBytes) return new Response("too large", { status: 413 });
    const ts = (request.headers.get("x-timestamp") ?? "").trim();
    const macs = (request.headers.get("x-signature") ?? "").split(/[,\s]+/).map(fromHex).filter((m): m is Uint8Array => m !== null);
    if (!/^\d{1,15}$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > (source.tolerance_s ?? 300)) return new Response("bad timestamp", { status: 401 });
    if (!(await anyMacMatches(env, name, ts, raw, macs))) return new Response("bad signature", { status: 401 });
    await env.WEBHOOKS.send({ source: name, received_at_ms: Date.now(), body: new TextDecoder().decode(raw) }, { contentType: "json" });
    return Response.json({ status: "queued" }, { status: 202 });
  },
};
