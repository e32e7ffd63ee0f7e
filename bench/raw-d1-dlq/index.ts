// The DLQ triage ceiling for bench/triage.mjs: no read, no history, no
// dedupe, no capacity, no per-message outcome. One env.DB.batch of plain
// inserts of dead_letters rows (the same columns the Rust DLQ worker
// writes, filled from the message alone) per message batch, then ackAll.
//
// Built by bench/triage.mjs with esbuild to bench/.build/raw-d1-dlq.js.

interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
}
interface D1Database {
  prepare(sql: string): D1PreparedStatement;
  batch(statements: D1PreparedStatement[]): Promise<unknown[]>;
}
interface Message {
  readonly id: string;
  readonly timestamp: Date;
  readonly body: Record<string, any>;
}
interface MessageBatch {
  readonly messages: readonly Message[];
  ackAll(): void;
}
interface Env {
  DB: D1Database;
}

const INSERT = `INSERT OR IGNORE INTO dead_letters (id, kind, status, event_id, idempotency_key, source, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope)
VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13)`;

function insert(db: D1Database, m: Message, now: number): D1PreparedStatement {
  const handoff = m.body.kind === "poison_handoff";
  const original = handoff ? m.body.original : m.body;
  const queueMessageId = handoff ? m.body.queue_message_id : m.id;
  const code = handoff ? m.body.failure.code : "UNKNOWN";
  const id = `dlq_${queueMessageId}`;
  const kind = handoff ? "poison_handoff" : "retries_exhausted";
  const envelope = JSON.stringify({ id, kind, queue_message_id: queueMessageId, enqueued_at_ms: m.timestamp.getTime(), dead_lettered_at_ms: now, failure: handoff ? m.body.failure : null, original, excerpt: String(original.body ?? "").slice(0, 4096) });
  return db
    .prepare(INSERT)
    .bind(id, kind, original.event_id ?? null, original.idempotency_key ?? null, original.source ?? null, queueMessageId, code, handoff ? m.body.class : "unknown", `sig_${code}`, handoff ? m.body.attempts : 0, queueMessageId, now, envelope);
}

export default {
  async queue(batch: MessageBatch, env: Env): Promise<void> {
    const now = Date.now();
    await env.DB.batch(batch.messages.map((m) => insert(env.DB, m, now)));
    batch.ackAll();
  },
};
