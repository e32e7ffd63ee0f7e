// What the hand-written JS anchors share: the Workers types they use (no
// @cloudflare/workers-types dependency for a few lines) and the
// `webhooks` message validation, the same checks as the Rust decoder
// (core/src/queued_event.rs). Bundled into each anchor by esbuild.

export interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
  run(): Promise<unknown>;
}
export interface D1Database {
  prepare(sql: string): D1PreparedStatement;
  batch(statements: D1PreparedStatement[]): Promise<unknown[]>;
}
export interface Message<T = unknown> {
  readonly id: string;
  readonly body: T;
  readonly attempts: number;
  ack(): void;
  retry(options?: { delaySeconds?: number }): void;
}
export interface MessageBatch<T = unknown> {
  readonly queue: string;
  readonly messages: readonly Message<T>[];
}
export interface Env {
  DB: D1Database;
}

/** The `webhooks` message format (core/src/queued_event.rs). */
export interface QueuedEvent {
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

export class InvalidMessage extends Error {}

function str(m: Record<string, unknown>, field: string): string {
  const v = m[field];
  if (typeof v !== "string") throw new InvalidMessage(`field ${field} is missing or not a string`);
  return v;
}

const utf8 = new TextEncoder();

export function validate(raw: unknown): QueuedEvent {
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

