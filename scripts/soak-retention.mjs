#!/usr/bin/env node
// Bounded-storage soak (issue 24, DESIGN §5): N signed events through the
// relay at a steady rate with a short EVENT_RETENTION, while the retention
// sweep is driven through POST /api/v1/admin/maintenance/run every few
// seconds (a run that answers `"more": true` is followed at once by the
// next). The `events` row count is sampled throughout. It fails unless
//   - the maximum row count stays ≤ 1.5 × rate × (retention + sweep
//     interval), rate being the measured events/s ingested (from the
//     archived rows' own `ingested_at`) over the busiest window of that
//     length (the mean rate's bound is reported beside it: a consumer that
//     falls behind catches up in a burst, and rows younger than the
//     retention are not the sweep's to take);
//   - the archive, listed through GET /api/v1/admin/archive and read back
//     object by object from R2, holds every accepted event exactly once by
//     key: none missing, none in two objects or twice in one, nothing else;
//   - every request was accepted and no sweep run failed.
// The events' source has no downstream (delivery status `none`, which the
// sweep may take once it is old enough).
//
//   npm run soak:retention                      # 20,000 events over about a minute
//   SOAK_N=5000 SOAK_SECONDS=15 npm run soak:retention
//   SOAK_RETENTION_S=10 SOAK_SWEEP_EVERY_S=3 SOAK_CONCURRENCY=16
//
// If the machine cannot ingest at N / SOAK_SECONDS, the sends run at the
// rate it sustains, and the bound uses that measured rate. Exits non-zero
// when a check fails.
import { fail, run } from "./lib/fail.mjs";
import http from "node:http";
import { pathToFileURL } from "node:url";
import { startRelay, rows } from "../tests/support/harness.mjs";
import { adminClient } from "../tests/support/admin.mjs";
import { hmacSha256Headers } from "./webhook-signatures.mjs";

const SOURCE = "soak-retention";
const SECRET = "soak-retention-secret";
const BOUND_FACTOR = 1.5;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** POSTs `body` over a keep-alive agent; resolves with the status and the answer's text. */
function post(url, headers, body, agent) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { ...headers, "content-length": Buffer.byteLength(body) }, agent }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode, text }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Sends `n` signed events paced at `rate`/s with `concurrency` in flight; returns the accepted event ids by index. */
async function send(relay, { n, rate, concurrency, log }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL(`/webhooks/${SOURCE}`, relay.url);
  const ids = new Array(n);
  let next = 0;
  let refused = 0;
  const t0 = Date.now();
  const worker = async () => {
    while (next < n) {
      const i = next++;
      // Starts spaced 1/rate apart; a late sender catches up without a burst past the schedule.
      const due = t0 + (i * 1000) / rate;
      if (due > Date.now()) await sleep(due - Date.now());
      const body = JSON.stringify({ i, type: "soak.retention", pad: "x".repeat(200) });
      const res = await post(url, hmacSha256Headers(body, { secret: SECRET, operationId: `soak-retention-${i}` }), body, agent);
      if (res.status === 202) ids[i] = JSON.parse(res.text).event_id;
      else if (++refused === 1) log(`first refusal: ${res.status} ${res.text}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  return { ids, refused, sendS: (Date.now() - t0) / 1000 };
}

/**
 * Drives maintenance/run every `everyS` seconds until `stop()` says so,
 * following `more: true` at once. Returns the runs.
 */
function sweeper(admin, { everyS, log }) {
  const runs = [];
  let stopping = false;
  const done = (async () => {
    while (!stopping) {
      const cycle = Date.now();
      for (;;) {
        const at = Date.now();
        const res = await admin.post("maintenance/run", {});
        const wallMs = Date.now() - at;
        if (res.status !== 200) {
          runs.push({ at, wallMs, error: `${res.status} ${res.error?.code}: ${res.error?.message}` });
          if (runs.filter((r) => r.error).length === 1) log(`first failed sweep run: ${runs.at(-1).error}`);
          break;
        }
        const busy = res.data.busy_until !== undefined;
        runs.push({ at, wallMs, events: res.data.archived.events ?? 0, objects: res.data.objects_written, more: res.data.more, busy, tookMs: res.data.took_ms });
        // A busy answer: another step (a continuation message) holds the lease; wait for the next cycle.
        if (!res.data.more || busy || stopping) break;
      }
      const wait = cycle + everyS * 1000 - Date.now();
      if (wait > 0 && !stopping) await sleep(wait);
    }
  })();
  return { runs, stop: () => ((stopping = true), done) };
}

/** Every object the archive lists for `events` (GET /archive, page by page), with its rows read back from R2. */
async function archivedEvents(admin, bucket) {
  const objects = [];
  let cursor;
  do {
    const q = `archive?table=events${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const res = await admin.get(q);
    if (res.status !== 200) throw new Error(`GET /api/v1/admin/${q} answered ${res.status}: ${JSON.stringify(res.json)}`);
    for (const item of res.data.items) {
      const object = await bucket.get(item.key);
      if (object === null) throw new Error(`the archive lists ${item.key}, but R2 has no such object`);
      const lines = (await object.text()).split("\n").filter((l) => l.trim());
      objects.push({ key: item.key, listedRows: item.rows, rows: lines.map((l) => JSON.parse(l)) });
    }
    cursor = res.data.cursor;
  } while (cursor);
  return objects;
}

/** The archive check: by event id, the keys that hold it. */
function archiveCheck(objects, accepted) {
  const where = new Map();
  let rowsTotal = 0;
  let listedMismatch = 0;
  for (const o of objects) {
    if (o.listedRows !== o.rows.length) listedMismatch++;
    for (const r of o.rows) {
      rowsTotal++;
      where.set(r.event_id, [...(where.get(r.event_id) ?? []), o.key]);
    }
  }
  const acceptedSet = new Set(accepted);
  const missing = accepted.filter((id) => !where.has(id));
  const twice = [...where].filter(([, keys]) => keys.length > 1);
  const unknown = [...where.keys()].filter((id) => !acceptedSet.has(id));
  return { objects: objects.length, rows: rowsTotal, missing, twice, unknown, listedMismatch };
}

/**
 * The ingest rate from the archived rows' own `ingested_at`: the mean over
 * the run, and the highest over any `windowS`-second window.
 */
function ingestRate(objects, windowS) {
  const at = objects.flatMap((o) => o.rows.map((r) => r.ingested_at)).sort((a, b) => a - b);
  if (at.length < 2) return { rate: 0, peak: 0, spanS: 0 };
  const spanS = (at.at(-1) - at[0]) / 1000;
  let most = 0;
  for (let a = 0, b = 0; b < at.length; b++) {
    while (at[b] - at[a] >= windowS * 1000) a++;
    most = Math.max(most, b - a + 1);
  }
  return { rate: (at.length - 1) / spanS, peak: most / Math.min(windowS, spanS), spanS };
}

/** Runs the soak; returns the figures and the problems found. */
export async function soakRetention({ n = 20_000, seconds = 60, retentionS = 10, sweepEveryS = 3, concurrency = 16, log = () => {} } = {}) {
  const relay = await startRelay({
    relayVars: { SOURCES: JSON.stringify({ [SOURCE]: { scheme: "hmac-sha256" } }), WEBHOOK_SECRET_SOAK_RETENTION: SECRET },
    vars: { EVENT_RETENTION: `${retentionS}s` },
  });
  const admin = adminClient(relay);
  const bucket = await relay.mf.getR2Bucket("ARCHIVE", "hookrelay");
  const started = Date.now();
  const count = async () => (await rows(relay.db, "SELECT count(*) AS n FROM events"))[0].n;
  // The row count, sampled every 250 ms from the start to the end.
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      try {
        samples.push({ at: Date.now() - started, n: await count() });
      } catch {
        /* the relay is going away */
      }
      await sleep(250);
    }
  })();
  const sweep = sweeper(admin, { everyS: sweepEveryS, log });
  try {
    const sent = await send(relay, { n, rate: n / seconds, concurrency, log });
    const accepted = sent.ids.filter(Boolean);
    log(`sent ${n} (${sent.refused} refused) in ${sent.sendS.toFixed(1)} s: ${(n / sent.sendS).toFixed(0)}/s asked ${(n / seconds).toFixed(0)}/s`);
    // Then until every accepted event was ingested, aged past the retention and swept.
    const deadline = Date.now() + Math.max(120_000, retentionS * 6000);
    for (;;) {
      const [left, stats] = [await count(), (await admin.get("webhook-dlq/stats")).data];
      if (left === 0 && stats.rows.events === 0 && stats.archive.rows >= accepted.length) break;
      if (Date.now() > deadline) throw new Error(`the sweep did not finish: ${left} events left in D1, ${stats.archive.rows} archived rows of ${accepted.length}`);
      await sleep(500);
    }
    await sweep.stop();
    sampling = false;
    await sampler;
    const objects = await archivedEvents(admin, bucket);
    const check = archiveCheck(objects, accepted);
    // The rows a sweep that keeps up leaves are those of the last
    // retention + interval. The bound's rate is the busiest such window's:
    // when the consumer falls behind (here: other processes' load on the
    // machine), it catches up in a burst, and rows younger than the
    // retention may not be swept, whatever the mean rate was.
    const windowS = retentionS + sweepEveryS;
    const { rate, peak, spanS } = ingestRate(objects, windowS);
    const maxRows = Math.max(...samples.map((s) => s.n));
    const bound = BOUND_FACTOR * peak * windowS;
    const ok = sweep.runs.filter((r) => !r.error);
    const cycles = ok.filter((r, i) => i === 0 || !ok[i - 1].more || ok[i - 1].busy).map((r) => r.at);
    const gaps = cycles.slice(1).map((t, i) => (t - cycles[i]) / 1000);
    const problems = [
      ...check.missing.slice(0, 10).map((id) => `event ${id} is not in the archive`),
      ...check.twice.slice(0, 10).map(([id, keys]) => `event ${id} is archived ${keys.length} times: ${keys.join(", ")}`),
      ...check.unknown.slice(0, 10).map((id) => `the archive holds ${id}, which was never accepted`),
      ...sweep.runs.filter((r) => r.error).slice(0, 5).map((r) => `sweep run failed: ${r.error}`),
    ];
    return {
      n,
      accepted: accepted.length,
      refused: sent.refused,
      send_s: Number(sent.sendS.toFixed(1)),
      ingest_rate: Number(rate.toFixed(1)),
      ingest_rate_busiest_window: Number(peak.toFixed(1)),
      ingest_span_s: Number(spanS.toFixed(1)),
      retention_s: retentionS,
      sweep_every_s: sweepEveryS,
      sweep_runs: sweep.runs.length,
      sweep_failed: sweep.runs.length - ok.length,
      sweep_more_answers: ok.filter((r) => r.more && !r.busy).length,
      sweep_busy_answers: ok.filter((r) => r.busy).length,
      sweep_run_ms_median: median(ok.map((r) => r.wallMs)),
      sweep_run_ms_max: Math.max(0, ...ok.map((r) => r.wallMs)),
      sweep_cycle_gap_s_max: Number(Math.max(0, ...gaps).toFixed(1)),
      sweep_events_per_run_max: Math.max(0, ...ok.map((r) => r.events)),
      max_rows: maxRows,
      bound: Math.floor(bound),
      max_over_bound: Number((maxRows / bound).toFixed(2)),
      bound_at_mean_rate: Math.floor(BOUND_FACTOR * rate * windowS),
      samples: samples.length,
      archive_objects: check.objects,
      archive_rows: check.rows,
      missing: check.missing.length,
      twice: check.twice.length,
      unknown: check.unknown.length,
      listed_rows_mismatch: check.listedMismatch,
      elapsed_s: Number(((Date.now() - started) / 1000).toFixed(1)),
      problems,
    };
  } finally {
    sampling = false;
    await sampler;
    await sweep.stop();
    if (process.env.SOAK_LOG_FILE) (await import("node:fs")).writeFileSync(process.env.SOAK_LOG_FILE, relay.logs.join("\n") + "\n");
    await relay.dispose();
  }
}

function median(xs) {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** The verdict: every failed check, by name (empty when the soak passed). */
export function failures(r) {
  const f = [];
  if (r.refused) f.push("refused");
  if (r.sweep_failed) f.push("a sweep run failed");
  if (r.max_rows > r.bound) f.push(`max events rows ${r.max_rows} > bound ${r.bound}`);
  if (r.missing) f.push("events missing from the archive");
  if (r.twice) f.push("events archived more than once");
  if (r.unknown) f.push("unknown events in the archive");
  if (r.listed_rows_mismatch) f.push("the archive listing's row counts differ from the objects");
  if (r.archive_rows !== r.accepted) f.push("archived rows != accepted events");
  return f;
}

/** The figures in one line. */
export const summary = (r) =>
  Object.entries(r)
    .filter(([k]) => k !== "problems")
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  await run("soak:retention", async () => {
    const env = (name, dflt) => {
      const v = Number(process.env[name] ?? dflt);
      if (!Number.isFinite(v) || v <= 0) fail(`${name}=${process.env[name]} is not a positive number; unset it for ${dflt}`, 2);
      return v;
    };
    const result = await soakRetention({
      n: env("SOAK_N", 20_000),
      seconds: env("SOAK_SECONDS", 60),
      retentionS: env("SOAK_RETENTION_S", 10),
      sweepEveryS: env("SOAK_SWEEP_EVERY_S", 3),
      concurrency: env("SOAK_CONCURRENCY", 16),
      log: (l) => console.log(`[soak:retention] ${l}`),
    });
    for (const p of result.problems) console.log(`[soak:retention] problem: ${p}`);
    console.log(summary(result));
    const failed = failures(result);
    if (failed.length) fail(`FAILED: ${failed.join(", ")} (the counts and problems are above)`);
    console.log("[soak:retention] passed");
  });
  // Miniflare may keep a handle open after dispose; the verdict is in.
  process.exit(process.exitCode ?? 0);
}
