// The forwarding anchor: the consumer a user would write by hand for a
// source with a downstream. Per message batch: validate each message, sign
// and POST each event to the downstream, all calls at once (Promise.all),
// then one D1 batch that writes every `events` row with its delivery
// outcome, then ack the delivered messages and retry the others.
//
// The same work as the relay's forwarding path minus what makes the relay
// safe to repeat (the per-event delivery lease, the shared breaker), so it
// is the ceiling a forwarding consumer of this shape can reach. The request
// is signed as the relay signs it (core/src/downstream_request.rs).
//
// Built by bench/run.mjs with esbuild to bench/.build/js-forwarder.js.

import { validate, type D1Database, type MessageBatch, type QueuedEvent } from "../js-shared/queued-event";

interface Env {
  DB: D1Database;
  DOWNSTREAM_URL: string;
  /** Comma-separated: each event goes to every one (target 10's fan-out), instead of DOWNSTREAM_URL. */
  DOWNSTREAM_URLS?: string;
  DOWNSTREAM_SIGNING_SECRET: string;
  DELIVERY_TIMEOUT_MS?: string;
}

const INSERT = `INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status, delivered_at, last_delivery_error)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
ON CONFLICT(idempotency_key) DO UPDATE SET duplicate_count = duplicate_count + 1, delivery_status = excluded.delivery_status, delivered_at = excluded.delivered_at, last_delivery_error = excluded.last_delivery_error`;

const utf8 = new TextEncoder();
let signingKey: Promise<CryptoKey> | undefined;

/** Hex HMAC-SHA256 of `{timestamp}.{body}`, the relay's downstream signature. */
async function sign(secret: string, timestamp: string, body: string): Promise<string> {
  signingKey ??= crypto.subtle.importKey("raw", utf8.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await signingKey, utf8.encode(`${timestamp}.${body}`)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

type Delivery = { event: QueuedEvent; ok: true } | { event: QueuedEvent; ok: false; error: string } | { event: null; ok: false; error: string };

async function deliver(env: Env, raw: unknown): Promise<Delivery> {
  let event: QueuedEvent;
  try {
    event = validate(raw);
  } catch (err) {
    return { event: null, ok: false, error: (err as Error).message };
  }
  const urls = env.DOWNSTREAM_URLS ? env.DOWNSTREAM_URLS.split(",") : [env.DOWNSTREAM_URL];
  const each = await Promise.all(urls.map((url) => call(env, url, event)));
  return each.find((d) => !d.ok) ?? each[0];
}

async function call(env: Env, url: string, event: QueuedEvent): Promise<Delivery> {
  try {
    const body = event.body ?? "";
    const timestamp = String(Math.floor(Date.now() / 1000));
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-operation-id": event.event_id,
        "x-timestamp": timestamp,
        "x-signature": await sign(env.DOWNSTREAM_SIGNING_SECRET, timestamp, body),
        "x-hookrelay-source": event.source,
        "x-idempotency-key": event.idempotency_key,
      },
      body,
      signal: AbortSignal.timeout(Number(env.DELIVERY_TIMEOUT_MS ?? 10000)),
    });
    await res.arrayBuffer();
    return res.ok ? { event, ok: true } : { event, ok: false, error: `http_${res.status}` };
  } catch (err) {
    return { event, ok: false, error: (err as Error).name === "TimeoutError" ? "timeout" : "network" };
  }
}

export default {
  async queue(batch: MessageBatch, env: Env): Promise<void> {
    const results = await Promise.all(batch.messages.map((m) => deliver(env, m.body)));
    const now = Date.now();
    const rows = results.flatMap((r, i) =>
      r.event === null
        ? []
        : [
            env.DB.prepare(INSERT).bind(
              r.event.idempotency_key, r.event.event_id, r.event.source, r.event.delivery_id, r.event.received_at_ms, now, batch.messages[i].id,
              JSON.stringify(r.event.headers), r.event.body, r.event.body_ref, r.event.body_bytes,
              r.ok ? "delivered" : "failed", r.ok ? now : null, r.ok ? null : r.error,
            ),
          ],
    );
    try {
      if (rows.length > 0) await env.DB.batch(rows);
    } catch (err) {
      console.warn(`[js-forwarder] D1 batch failed: ${(err as Error).message}`);
      for (const m of batch.messages) m.retry();
      return;
    }
    results.forEach((r, i) => {
      if (r.ok) batch.messages[i].ack();
      else {
        console.warn(`[js-forwarder] ${batch.messages[i].id}: ${r.error}`);
        batch.messages[i].retry();
      }
    });
  },
};
