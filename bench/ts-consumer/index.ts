// The comparator a user would write by hand in TypeScript: the same queue
// message, the same validation, the same `events` row, one idempotent
// upsert per message, ack or retry per message.
//
// Built by bench/run.mjs with esbuild to bench/.build/ts-consumer.js.

interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
  run(): Promise<unknown>;
}
interface D1Database {
  prepare(sql: string): D1PreparedStatement;
}
interface Message<T = unknown> {
  readonly id: string;
  readonly body: T;
  readonly attempts: number;
  ack(): void;
  retry(options?: { delaySeconds?: number }): void;
}
interface MessageBatch<T = unknown> {
  readonly queue: string;
  readonly messages: readonly Message<T>[];
}
interface Env {
  DB: D1Database;
}

/** The `webhooks` message format (core/src/queued_event.rs). */
interface QueuedEvent {
  v: 1;
  event_id: string;
  idempotency_key: string;
  source: string;
  delivery_id: string | null;
  received_at_ms: number;
  headers: Record<string, string>;
  body: string | null;
  body_ref: string | null;
  body_bytes: number;
}

class InvalidMessage extends Error {}

function str(m: Record<string, unknown>, field: string): string {
  const v = m[field];
  if (typeof v !== "string") throw new InvalidMessage(`field ${field} is missing or not a string`);
  return v;
}

const utf8 = new TextEncoder();

function validate(raw: unknown): QueuedEvent {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new InvalidMessage("message is not an object");
  const m = raw as Record<string, unknown>;
  if (m.v !== 1) throw new InvalidMessage("unsupported message version");
  const event_id = str(m, "event_id");
  const idempotency_key = str(m, "idempotency_key");
  const source = str(m, "source");
  if (!idempotency_key.startsWith(`${source}:`)) throw new InvalidMessage("idempotency_key does not start with the source");
  const delivery_id = m.delivery_id ?? null;
  if (delivery_id !== null && typeof delivery_id !== "string") throw new InvalidMessage("delivery_id is not a string");
  const received_at_ms = m.received_at_ms;
  if (typeof received_at_ms !== "number" || !Number.isSafeInteger(received_at_ms)) throw new InvalidMessage("received_at_ms is not an integer");
  const headers = (m.headers ?? {}) as Record<string, unknown>;
  if (typeof headers !== "object" || Array.isArray(headers)) throw new InvalidMessage("headers is not an object");
  for (const v of Object.values(headers)) if (typeof v !== "string") throw new InvalidMessage("headers is not an object of strings");
  let body: string | null = null;
  let body_ref: string | null = null;
  let body_bytes: number;
  if (typeof m.body === "string" && m.body_ref === undefined) {
    body = m.body;
    try {
      JSON.parse(body);
    } catch {
      throw new InvalidMessage("event body is not valid JSON");
    }
    body_bytes = utf8.encode(body).length;
  } else if (m.body === undefined && typeof m.body_ref === "string" && Number.isSafeInteger(m.body_bytes)) {
    body_ref = m.body_ref;
    body_bytes = m.body_bytes as number;
  } else {
    throw new InvalidMessage("expected exactly one of body and body_ref");
  }
  return { v: 1, event_id, idempotency_key, source, delivery_id, received_at_ms, headers: headers as Record<string, string>, body, body_ref, body_bytes };
}

const UPSERT = `INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, 'none')
ON CONFLICT(idempotency_key) DO UPDATE SET duplicate_count = duplicate_count + 1`;

export default {
  async queue(batch: MessageBatch, env: Env): Promise<void> {
    for (const msg of batch.messages) {
      try {
        const e = validate(msg.body);
        const now = Date.now();
        await env.DB.prepare(UPSERT)
          .bind(e.idempotency_key, e.event_id, e.source, e.delivery_id, e.received_at_ms, now, msg.id, JSON.stringify(e.headers), e.body, e.body_ref, e.body_bytes)
          .run();
        msg.ack();
      } catch (err) {
        console.warn(`[ts-consumer] ${msg.id}: ${(err as Error).message}`);
        msg.retry();
      }
    }
  },
};
