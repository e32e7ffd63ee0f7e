// The comparator a user would write by hand in TypeScript: the same queue
// message, the same validation, the same `events` row, one idempotent
// upsert per message, ack or retry per message.
//
// The validation and types live in bench/js-shared/queued-event.ts, shared
// with the forwarding anchor.
//
// Built by bench/run.mjs with esbuild to bench/.build/ts-consumer.js.

import { validate, type Env, type MessageBatch } from "../js-shared/queued-event";

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
