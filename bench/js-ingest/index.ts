// The ingest anchor: the relay's `POST /webhooks/{source}` as a user would
// write it by hand in TypeScript for the generic `hmac-sha256` scheme, with
// WebCrypto. The same steps in the same order as src/ingest_route.rs +
// core/src/ingest.rs: method, known source, Content-Length against
// MAX_BODY_BYTES, read the body, size again, X-Timestamp within the
// tolerance (300 s), X-Signature (hex HMAC-SHA256 of `{timestamp}.{raw
// body}`, up to 8 comma/space separated) checked by `crypto.subtle.verify`
// (constant time), JSON body, idempotency key and event id, headers
// redacted, one `env.WEBHOOKS.send(event)`, then 202.
//
// Left out on purpose: the claim check for bodies over a queue message's
// 128 KB (the bench's bodies are small), and the relay's log lines.
//
// Built by bench/run.mjs with esbuild to bench/.build/js-ingest.js.

import { anyMacMatches, fromHex, type IngestEnv } from "../js-shared/ingest";

interface Source {
  scheme: string;
  tolerance_s?: number;
}

const utf8 = new TextEncoder();
const DEFAULT_MAX_BODY_BYTES = 1_048_576;
const DEFAULT_TOLERANCE_S = 300;
const SENSITIVE = ["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "webhook-signature", "stripe-signature", "x-hub-signature", "x-hub-signature-256", "x-signature", "x-webhook-secret"];
const FRAGMENTS = ["secret", "token", "signature", "password", "auth"];

// Parsed once per isolate, as the relay caches its config.
let sources: Record<string, Source> | undefined;

const reject = (status: number, code: string, message: string) => Response.json({ error: code, message }, { status });

const hex = (buf: ArrayBuffer) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");

async function sha256Hex(data: Uint8Array): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", data));
}

function captureHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  for (const [name, value] of headers) {
    if (n++ >= 64) break;
    out[name] = SENSITIVE.includes(name) || FRAGMENTS.some((f) => name.includes(f)) ? "[REDACTED]" : value.slice(0, 1024);
  }
  return out;
}

async function ingest(request: Request, env: IngestEnv, name: string): Promise<Response> {
  sources ??= JSON.parse(env.SOURCES) as Record<string, Source>;
  const maxBytes = Number(env.MAX_BODY_BYTES ?? DEFAULT_MAX_BODY_BYTES);
  if (request.method !== "POST") return reject(405, "method_not_allowed", "use POST");
  const source = sources[name];
  if (!source || source.scheme !== "hmac-sha256") return reject(404, "unknown_source", `no source ${name}`);
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) return reject(413, "too_large", `the body is over ${maxBytes} bytes`);
  const raw = new Uint8Array(await request.arrayBuffer());
  if (raw.length > maxBytes) return reject(413, "too_large", `the body is over ${maxBytes} bytes`);

  const ts = request.headers.get("x-timestamp");
  const sigs = request.headers.get("x-signature");
  if (!ts || !sigs) return reject(401, "signature_missing", `missing ${!ts ? "X-Timestamp" : "X-Signature"}`);
  if (!/^\+?\d{1,15}$/.test(ts.trim())) return reject(401, "timestamp_invalid", "X-Timestamp is not unix seconds");
  const timestamp = Number(ts.trim());
  const presented = sigs.split(/[,\s]+/).filter(Boolean).map(fromHex).filter((m): m is Uint8Array => m !== null);
  if (presented.length === 0 || presented.length > 8) return reject(401, "signature_invalid", "no usable signature of 64 hex digits");
  if (Math.abs(Date.now() / 1000 - timestamp) > (source.tolerance_s ?? DEFAULT_TOLERANCE_S)) return reject(401, "timestamp_stale", "X-Timestamp is outside the tolerance");
  if (!(await anyMacMatches(env, name, timestamp, raw, presented))) return reject(401, "signature_invalid", "X-Signature does not match");

  let body: string;
  try {
    body = new TextDecoder("utf-8", { fatal: true }).decode(raw);
    JSON.parse(body);
  } catch {
    return reject(400, "bad_body", "the body is not UTF-8 JSON");
  }
  const deliveryId = request.headers.get("x-operation-id")?.trim() || null;
  const idempotency_key = deliveryId ? `${name}:${deliveryId}` : `${name}:sha256:${await sha256Hex(new Uint8Array([...utf8.encode(name), 0, ...raw]))}`;
  const event_id = `evt_${(await sha256Hex(utf8.encode(idempotency_key))).slice(0, 32)}`;
  const event = { v: 1, event_id, idempotency_key, source: name, ...(deliveryId ? { delivery_id: deliveryId } : {}), received_at_ms: Date.now(), headers: captureHeaders(request.headers), body };
  try {
    await env.WEBHOOKS.send(event, { contentType: "json" });
  } catch {
    return new Response(JSON.stringify({ error: "unavailable" }), { status: 503, headers: { "retry-after": "30" } });
  }
  return Response.json({ event_id, status: "queued" }, { status: 202 });
}

export default {
  async fetch(request: Request, env: IngestEnv): Promise<Response> {
    const m = /^\/webhooks\/([^/]+)$/.exec(new URL(request.url).pathname);
    if (!m) return reject(404, "not_found", "no such route");
    return ingest(request, env, m[1]);
  },
};
