// The ceiling: no validation, no per-message outcome, just the same rows
// batch-inserted in one D1 call per message batch, then ackAll.
//
// Also serves POST /probe for bench/run.mjs's breakdown: it times one D1
// call pattern (the Rust consumer's statements, the TS consumer's, this
// consumer's) on fresh rows, inside the worker.
//
// Built by bench/run.mjs with esbuild to bench/.build/raw-d1.js.

interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
  run(): Promise<unknown>;
}
interface D1Database {
  prepare(sql: string): D1PreparedStatement;
  batch(statements: D1PreparedStatement[]): Promise<unknown[]>;
}
interface Message<T = unknown> {
  readonly id: string;
  readonly body: T;
}
interface MessageBatch<T = unknown> {
  readonly messages: readonly Message<T>[];
  ackAll(): void;
}
interface Env {
  DB: D1Database;
}
interface Row {
  event_id: string;
  idempotency_key: string;
  source: string;
  delivery_id?: string | null;
  received_at_ms: number;
  headers: Record<string, string>;
  body: string;
}

const INSERT = `INSERT OR IGNORE INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, NULL, ?10, 'none')`;

function insert(db: D1Database, r: Row, messageId: string, now: number): D1PreparedStatement {
  return db.prepare(INSERT).bind(r.idempotency_key, r.event_id, r.source, r.delivery_id ?? null, r.received_at_ms, now, messageId, JSON.stringify(r.headers), r.body, r.body.length);
}

// ---- /probe: statement patterns, copied from platform/src/event_store.rs and src/consumer.rs

const RUST_INSERT = `INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT(idempotency_key) DO NOTHING`;
const RUST_DUPLICATE = `UPDATE events SET duplicate_count = duplicate_count + 1, last_message_id = ?2, last_seen_at = ?3 WHERE idempotency_key = ?1 AND last_message_id IS NOT ?2`;
const RUST_STATUS = `SELECT delivery_status FROM events WHERE idempotency_key = ?1`;
const UPSERT_RETURNING = `INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT(idempotency_key) DO UPDATE SET duplicate_count = duplicate_count + (last_message_id IS NOT excluded.last_message_id), last_message_id = excluded.last_message_id, last_seen_at = excluded.last_seen_at RETURNING ingested_at = ?6 AS fresh, duplicate_count, delivery_status`;
const COUNTER = `INSERT INTO counters (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value`;
const TS_UPSERT = `INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, 'none')
ON CONFLICT(idempotency_key) DO UPDATE SET duplicate_count = duplicate_count + 1`;

interface Probe {
  kind: string;
  rows: Row[];
  reps?: number;
}

/** Runs the pattern `reps` times on fresh keys; returns ms per repetition. */
async function probe(env: Env, { kind, rows, reps = 1 }: Probe): Promise<number> {
  // Date.now() has millisecond resolution (and moves only across I/O in
  // workerd), so several repetitions are timed together.
  const keyed = Array.from({ length: reps }, (_, rep) => rows.map((r) => ({ ...r, idempotency_key: `${r.idempotency_key}#${rep}`, event_id: `${r.event_id}#${rep}` })));
  const started = Date.now();
  for (const set of keyed) await once(env, kind, set);
  return (Date.now() - started) / reps;
}

async function once(env: Env, kind: string, rows: Row[]): Promise<void> {
  const db = env.DB;
  const now = Date.now();
  const headers = (r: Row) => JSON.stringify(r.headers);
  switch (kind) {
    case "noop":
      break;
    case "raw_batch": // this consumer: N plain inserts, one batch
      await db.batch(rows.map((r, i) => insert(db, r, `m${i}`, now)));
      break;
    case "rust_insert_batch": // the Rust consumer's insert only, one batch
      await db.batch(rows.map((r, i) => db.prepare(RUST_INSERT).bind(r.idempotency_key, r.event_id, r.source, null, r.received_at_ms, now, `m${i}`, headers(r), r.body, null, r.body.length, "none")));
      break;
    case "rust_ingest_batch": // the Rust consumer's ingest: 3 statements per event, one batch
      await db.batch(
        rows.flatMap((r, i) => [
          db.prepare(RUST_INSERT).bind(r.idempotency_key, r.event_id, r.source, null, r.received_at_ms, now, `m${i}`, headers(r), r.body, null, r.body.length, "none"),
          db.prepare(RUST_DUPLICATE).bind(r.idempotency_key, `m${i}`, now),
          db.prepare(RUST_STATUS).bind(r.idempotency_key),
        ]),
      );
      break;
    case "upsert_returning_batch": // what-if: one upsert per event that reports fresh/duplicate and status itself
      await db.batch(rows.map((r, i) => db.prepare(UPSERT_RETURNING).bind(r.idempotency_key, r.event_id, r.source, null, r.received_at_ms, now, `m${i}`, headers(r), r.body, null, r.body.length, "none")));
      break;
    case "counter_batch": // the Rust consumer's metrics flush: one counter upsert, one batch
      await db.batch([db.prepare(COUNTER).bind("bench_ingest", rows.length)]);
      break;
    case "ts_sequential": // the TS consumer: one upsert per event, awaited in turn
      for (const [i, r] of rows.entries()) {
        await db.prepare(TS_UPSERT).bind(r.idempotency_key, r.event_id, r.source, null, r.received_at_ms, now, `m${i}`, headers(r), r.body, null, r.body.length).run();
      }
      break;
    default:
      throw new Error(`unknown probe ${kind}`);
  }
}

export default {
  async queue(batch: MessageBatch<Row>, env: Env): Promise<void> {
    const now = Date.now();
    await env.DB.batch(batch.messages.map((m) => insert(env.DB, m.body, m.id, now)));
    batch.ackAll();
  },
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method !== "POST" || new URL(request.url).pathname !== "/probe") {
      // Read first, as the relay and the JS anchors do: an unread body makes
      // workerd close the connection, and target 4's ceiling (this 404)
      // would then pay for a new one per request.
      await request.arrayBuffer();
      return new Response("not found", { status: 404 });
    }
    const ms = await probe(env, (await request.json()) as Probe);
    return Response.json({ ms });
  },
};
