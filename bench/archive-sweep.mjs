// Target 7: the retention sweep's archive throughput (issue 24) against a
// hand-written JS anchor that moves the same rows (bench/archive-sweep-js:
// one R2 put of NDJSON per chunk, then one D1 delete batch, 450 rows a
// chunk as core's EVENT_CHUNK_ROWS). Not target 6 (bench/sweep.mjs, the
// queue batch-size sweep).
//
// Each run seeds the same N delivered events (~300-byte bodies, one UTC day,
// two days old) into a fresh Miniflare and D1, then drives the sweep until
// it answers `more: false`:
//   - ours: POST /api/v1/admin/maintenance/run (the DLQ worker hands it to
//     the relay), with EVENT_RETENTION 1d, so every seeded row is due. The
//     continuation consumer is detached, so no queued step runs beside the
//     driven ones; each run is one bounded step plus the alarm check, as in
//     production;
//   - the anchor: POST /sweep with the same chunks per call as the relay's
//     step (12: a 40-subrequest budget, one candidate read, then 3 a chunk
//     with the next chunk's candidates read ahead, core::retention::plan).
// rows/s = N / (first call to last answer). Both end with D1 empty of
// events and R2 holding N rows, checked. With BENCH_ARCHIVE_COUNT=1, D1
// round trips are counted per chunk.
// Runs interleave and the ratio is paired per run.
//
//   node bench/archive-sweep.mjs     # BENCH_ARCHIVE_N (20000), BENCH_ARCHIVE_RUNS (3), BENCH_ARCHIVE_COUNT=1; needs `bash scripts/build.sh`
import path from "node:path";
import { mkdirSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { BENCH, BUILD, ROOT, SECRETS, settleStdio, started, startRelay } from "./lib.mjs";
import { fmt, median, say, targetTable } from "./report.mjs";
import { mintToken } from "../scripts/admin-jwt.mjs";

export const ANCHOR = "archive-sweep-js";
const CHUNKS_PER_CALL = 12;
const DAY_MS = 86_400_000;
const TIMEOUT_MS = 300_000;
// D1 round trips are counted only with BENCH_ARCHIVE_COUNT=1: through the
// counter's wrapped binding (bench/d1-counter.mjs) the relay's sweep stalled
// workerd in about 1 run of 6 (the main thread turning its event loop with
// no progress, for minutes; 5 stalls in about 30 runs, against 0 in 26
// runs without the wrapper and 0 in 40 with a .then() on the wrapped
// batch's promise). Measured with it on
// 2026-12-03: Rust 4.98 round trips and 13.2 statements per chunk, the
// anchor 2.00 and 2.0.
const COUNT_D1 = process.env.BENCH_ARCHIVE_COUNT === "1";

/** Compiles the named hand-written workers (bench/<name>/index.ts) to bench/.build, as bench/run.mjs does. */
export async function buildAnchors(...names) {
  const esbuild = (await import("esbuild")).default;
  mkdirSync(BUILD, { recursive: true });
  for (const name of names) {
    await esbuild.build({ entryPoints: [path.join(BENCH, name, "index.ts")], outfile: path.join(BUILD, `${name}.js`), bundle: true, format: "esm", target: "es2022", platform: "neutral", logLevel: "warning" });
  }
}

/** For a bench module run on its own: quiet wrangler, build `anchors`, and answer the relay's compatibility date. */
export async function standalone(...anchors) {
  process.env.WRANGLER_SEND_METRICS = "false";
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_LOG ??= "error";
  await buildAnchors(...anchors);
  return /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(path.join(ROOT, "wrangler.toml"), "utf8"))[1];
}

/** The first ingest time of the seeded rows: 01:00 UTC two days ago, so all N (1 ms apart) share one UTC day. */
const seedStart = () => Math.floor((Date.now() - 2 * DAY_MS) / DAY_MS) * DAY_MS + 3_600_000;

/** N delivered events of `source` as the consumer stores them, 1 ms apart, bodies of about 300 bytes. */
export async function seed(db, n, { source = "demo-hmac", t0 = seedStart() } = {}) {
  await db
    .prepare(
      `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ?1 - 1),
       b(i, body) AS (SELECT i, printf('{"id":"op_%d","type":"invoice.paid","created":%d,"data":{"object":{"id":"in_%010d","amount_due":%d,"currency":"eur"}},"livemode":false,"note":"%s"}', i, 1700000000 + i, i, 4200 + i, 'hookrelay archive-sweep bench event, padded to about three hundred bytes of JSON text, as the consumer benches are') FROM s)
       INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_bytes, delivery_status, delivered_at)
       SELECT ?3 || ':sweep-' || i, printf('evt_%032x', i * 2654435761 % 4294967296), ?3, 'op_' || i, ?2 + i, ?2 + i, ?2 + i, 0, 'msg-' || i, 'msg-' || i,
              '{"content-type":"application/json","x-operation-id":"op_' || i || '"}', body, length(body), 'delivered', ?2 + i + 40 FROM b`,
    )
    .bind(n, t0, source)
    .run();
}

/** The rows R2 holds under events/ (from each object's `rows` metadata) and the objects. */
async function archivedRows(mf, worker) {
  const bucket = await mf.getR2Bucket("ARCHIVE", worker);
  let rows = 0;
  let objects = 0;
  let cursor;
  do {
    const page = await bucket.list({ prefix: "events/", cursor, include: ["customMetadata"] });
    for (const o of page.objects) {
      rows += Number(o.customMetadata.rows);
      objects++;
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return { rows, objects };
}

const adminHeaders = () => ({ authorization: `Bearer ${mintToken(SECRETS.ADMIN_JWT_SECRET, { ttlS: 3600 })}`, "content-type": "application/json" });

export function archiveSweepers(compatDate) {
  return {
    rust: {
      label: "Rust relay: maintenance/run (sweep step + alarm check)",
      short: "Rust",
      worker: "hookrelay",
      start: () => startRelay({ vars: { EVENT_RETENTION: "1d" }, consumers: { "hookrelay-control": null }, countD1: COUNT_D1 }),
      call: async (env) => {
        const res = await env.fetch("/api/v1/admin/maintenance/run", { method: "POST", headers: adminHeaders(), body: "{}" });
        const json = await res.json();
        if (res.status !== 200) throw new Error(`maintenance/run answered ${res.status}: ${JSON.stringify(json)}`);
        return { archived: json.data.archived.events ?? 0, objects: json.data.objects_written, more: json.data.more, busy: json.data.busy_until !== undefined };
      },
    },
    js: {
      label: "JS anchor: read, one R2 put, one delete batch per chunk",
      short: "JS anchor",
      worker: ANCHOR,
      start: () =>
        started(
          [{ name: ANCHOR, modules: true, scriptPath: path.join(BUILD, `${ANCHOR}.js`), compatibilityDate: compatDate, d1Databases: ["DB"], r2Buckets: ["ARCHIVE"] }],
          ANCHOR,
          { countD1: COUNT_D1 },
        ),
      call: async (env) => {
        const res = await env.fetch("/sweep", { method: "POST", body: JSON.stringify({ before: Date.now() - DAY_MS, max_chunks: CHUNKS_PER_CALL }) });
        if (res.status !== 200) throw new Error(`the anchor answered ${res.status}: ${await res.text()}`);
        return res.json();
      },
    },
  };
}

/** One run: a fresh Miniflare, N seeded events, the sweep driven until done. */
export async function archiveRun(sweeper, n) {
  const env = await sweeper.start();
  try {
    await seed(env.db, n);
    if (COUNT_D1) await settleStdio(env);
    const tripsBefore = env.d1.of(sweeper.worker).trips;
    const statementsBefore = env.d1.of(sweeper.worker).statements;
    const t0 = performance.now();
    let calls = 0;
    let archived = 0;
    let objects = 0;
    for (;;) {
      const r = await sweeper.call(env);
      calls++;
      archived += r.archived;
      objects += r.objects;
      if (r.busy) throw new Error("a sweep step was busy: something else runs the sweep");
      if (!r.more) break;
      if (performance.now() - t0 > TIMEOUT_MS) throw new Error(`${sweeper.worker}: ${archived} of ${n} archived after ${TIMEOUT_MS / 1000} s`);
    }
    const ms = performance.now() - t0;
    const left = await env.db.prepare("SELECT count(*) AS n FROM events").first("n");
    const r2 = await archivedRows(env.mf, sweeper.worker);
    if (left !== 0 || archived !== n || r2.rows !== n) throw new Error(`${sweeper.worker}: ${left} events left in D1, ${archived} reported archived, ${r2.rows} rows in R2 (of ${n})`);
    if (COUNT_D1) await settleStdio(env);
    const trips = env.d1.of(sweeper.worker);
    const chunks = r2.objects;
    return {
      rate: (n / ms) * 1000,
      ms,
      calls,
      chunks,
      tripsPerBatch: COUNT_D1 ? (trips.trips - tripsBefore) / chunks : NaN,
      statementsPerBatch: COUNT_D1 ? (trips.statements - statementsBefore) / chunks : NaN,
      errors: [...env.log.errors, ...env.stdio.errors].slice(0, 3),
    };
  } finally {
    await env.dispose();
  }
}

export async function runArchiveSweep({ compatDate, runs = 3, n = 20000 }) {
  const sweepers = archiveSweepers(compatDate);
  say(`## Target 7. Retention sweep, archive throughput vs a JS anchor (bench/archive-sweep.mjs): N = ${n} seeded events, 450 rows a chunk, ${CHUNKS_PER_CALL} chunks a call, ${runs} interleaved runs (fresh Miniflare + D1 + R2 per run)`);
  say(`   clock: first call until the sweep answers more:false; then D1 must hold no events and R2 N rows; ${COUNT_D1 ? "D1 round trips counted per chunk (the relay's include its per-run start, record and alarm check)" : "D1 round trips not counted (BENCH_ARCHIVE_COUNT=1 counts them)"}`);
  const results = { rust: [], js: [] };
  for (let r = 1; r <= runs; r++) {
    for (const [key, s] of Object.entries(sweepers)) {
      const res = await archiveRun(s, n);
      results[key].push(res);
      say(`  run ${r} ${key.padEnd(4)} ${fmt(res.rate).padStart(6)} rows/s  (${fmt(res.ms)} ms; ${res.calls} calls, ${res.chunks} chunks${COUNT_D1 ? `; D1 ${fmt(res.tripsPerBatch, 2)} round trips and ${fmt(res.statementsPerBatch, 1)} statements per chunk` : ""}${res.errors.length ? `; errors: ${res.errors.join(" | ")}` : ""})`);
    }
  }
  const subjects = Object.entries(sweepers).map(([key, s]) => ({ key, label: s.label, short: s.short }));
  const { text, ratios } = targetTable({ subjects, runs: results, ratios: [["rust", "js"]], unit: "rows/s", per: "chunk", extra: [{ header: "ms per chunk (median)", cell: (rs) => fmt(median(rs.map((x) => x.ms / x.chunks)), 1) }] });
  say("");
  say(text);
  say(`  target: Rust / anchor ≥ 0.8x; median ${fmt(ratios["rust/js"].median, 2)}x -> ${ratios["rust/js"].median >= 0.8 ? "met" : "NOT met"}`);
  say("");
  return { runs: results, ratios };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const compatDate = await standalone(ANCHOR);
  await runArchiveSweep({ compatDate, runs: Number(process.env.BENCH_ARCHIVE_RUNS ?? 3), n: Number(process.env.BENCH_ARCHIVE_N ?? 20000) });
}
