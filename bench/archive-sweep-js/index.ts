// The archive-sweep anchor (issue 24, bench/archive-sweep.mjs): the retention
// sweep as one would write it by hand in JS, moving the same rows as the
// relay's sweep with the same chunk size. Per chunk:
//   1. one read: the oldest sweepable events before the cutoff, whole rows,
//      at most CHUNK_ROWS (450, core's EVENT_CHUNK_ROWS);
//   2. one R2 put of the rows as NDJSON under the relay's key layout,
//      `events/{UTC day}/{first}~{last}.ndjson`, its row count in metadata;
//   3. one D1 batch deleting them by id.
// It leaves out what the relay adds for safety and for the other tables: the
// journal (a crash between put and delete redone under the same keys), the
// reads and deletes of the linked tables (attempts, payloads, event_steps),
// the byte and UTC-day bounds of a chunk, the lease, the size rule and the
// recorded result. So it is a ceiling, not a twin.
//
// POST /sweep {"before": <unix ms>, "max_chunks": n} moves at most n chunks
// and answers {"archived", "objects", "more"}. The bench calls it with the
// relay's chunks per step (12: a 40-subrequest budget, one read, then 3 a chunk), so both
// make about the same number of invocations.
//
// Built by bench/archive-sweep.mjs (and bench/run.mjs) with esbuild to
// bench/.build/archive-sweep-js.js.

interface D1Result<T> {
  results: T[];
}
interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
  all<T>(): Promise<D1Result<T>>;
}
interface D1Database {
  prepare(sql: string): D1PreparedStatement;
  batch(statements: D1PreparedStatement[]): Promise<unknown[]>;
}
interface R2Bucket {
  put(key: string, value: string, options?: unknown): Promise<unknown>;
}
interface Env {
  DB: D1Database;
  ARCHIVE: R2Bucket;
}
interface EventRow {
  event_id: string;
  ingested_at: number;
  [column: string]: unknown;
}

const CHUNK_ROWS = 450;
// The sweepable delivery states (core::retention::tables::SWEEPABLE_DELIVERY).
const SELECT = `SELECT * FROM events WHERE ingested_at < ?1 AND delivery_status IN ('none', 'delivered', 'failed')
ORDER BY ingested_at, event_id LIMIT ?2`;
const DELETE = "DELETE FROM events WHERE event_id IN (SELECT value FROM json_each(?1))";

async function chunk(env: Env, before: number): Promise<number> {
  const { results: rows } = await env.DB.prepare(SELECT).bind(before, CHUNK_ROWS).all<EventRow>();
  if (rows.length === 0) return 0;
  const first = rows[0];
  const last = rows[rows.length - 1];
  const day = new Date(first.ingested_at).toISOString().slice(0, 10);
  const text = rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
  await env.ARCHIVE.put(`events/${day}/${first.event_id}~${last.event_id}.ndjson`, text, {
    httpMetadata: { contentType: "application/x-ndjson" },
    customMetadata: { rows: String(rows.length) },
  });
  await env.DB.batch([env.DB.prepare(DELETE).bind(JSON.stringify(rows.map((r) => r.event_id)))]);
  return rows.length;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method !== "POST" || new URL(request.url).pathname !== "/sweep") return new Response("not found", { status: 404 });
    const { before, max_chunks } = (await request.json()) as { before: number; max_chunks: number };
    let archived = 0;
    let objects = 0;
    for (let i = 0; i < max_chunks; i++) {
      const n = await chunk(env, before);
      archived += n;
      objects += n > 0 ? 1 : 0;
      if (n < CHUNK_ROWS) return Response.json({ archived, objects, more: false });
    }
    return Response.json({ archived, objects, more: true });
  },
};
