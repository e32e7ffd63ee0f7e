// The upgrade test's fixture (tests/fixtures/previous-release/): a release's
// migrations, frozen, and the rows its workers wrote, as SQL. Made once per
// release, from that release's checkout (built), with
//
//   node tests/support/upgrade-fixture.mjs
//
// which copies migrations/ and drives the release's own workers in
// Miniflare: two stored events, one forwarded event dead-lettered by a
// downstream answering 400. tests/upgrade.test.mjs then migrates those
// rows with today's migrations and serves them with today's workers.
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const FIXTURE = path.join(ROOT, "tests/fixtures/previous-release");

/** The sources the fixture's rows belong to; `forward` is the downstream's URL. */
export function upgradeSources(forward) {
  return { "up-store": { scheme: "hmac-sha256" }, "up-forward": { scheme: "hmac-sha256", downstream: forward } };
}
export const UPGRADE_SECRETS = { WEBHOOK_SECRET_UP_STORE: "up-store-secret", WEBHOOK_SECRET_UP_FORWARD: "up-forward-secret" };

/** Tables whose rows are the workers' own (not SQLite's, D1's or wrangler's). */
export async function dataTables(db, rows) {
  const all = await rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  return all.map((r) => r.name).filter((n) => !/^(sqlite_|_cf_|d1_migrations$)/.test(n));
}

const literal = (v) => (v === null ? "NULL" : typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`);

async function capture() {
  const { startRelay, rows, waitFor } = await import("./harness.mjs");
  const { startDownstream } = await import("./downstream.mjs");
  const { hmacHeaders } = await import("./signers.mjs");
  const downstream = await startDownstream({ "/refuses": () => ({ status: 400 }) });
  const relay = await startRelay({ relayVars: { SOURCES: JSON.stringify(upgradeSources(downstream.url("/refuses"))), ...UPGRADE_SECRETS, DOWNSTREAM_SIGNING_SECRET: "up-down-secret" } });
  try {
    const send = async (source, payload, operationId) => {
      const body = JSON.stringify(payload);
      const secret = UPGRADE_SECRETS[`WEBHOOK_SECRET_${source.replace("-", "_").toUpperCase()}`];
      const res = await relay.fetch(`/webhooks/${source}`, { method: "POST", body, headers: hmacHeaders(body, { secret, operationId }) });
      if (res.status !== 202) throw new Error(`${source}: ${res.status} ${await res.text()}`);
    };
    await send("up-store", { n: 1 }, "up-1");
    await send("up-store", { n: 2 }, "up-2");
    await send("up-forward", { n: 3 }, "up-3");
    await waitFor(async () => (await rows(relay.db, "SELECT count(*) AS n FROM dead_letters"))[0].n === 1 && (await rows(relay.db, "SELECT count(*) AS n FROM events"))[0].n === 3, { timeoutMs: 30_000, what: "3 events and 1 dead letter" });
    const lines = ["-- Rows written by this release's workers (tests/support/upgrade-fixture.mjs)."];
    // `counters` last: triggers count the rows inserted before it, and its
    // own rows then put back the figures as the release left them (OR
    // REPLACE, as for the singletons the migrations seed).
    const tables = (await dataTables(relay.db, rows)).sort((a, b) => (a === "counters") - (b === "counters"));
    for (const table of tables) {
      for (const row of await rows(relay.db, `SELECT * FROM "${table}"`)) {
        const cols = Object.keys(row);
        lines.push(`INSERT OR REPLACE INTO "${table}" (${cols.map((c) => `"${c}"`).join(", ")}) VALUES (${cols.map((c) => literal(row[c])).join(", ")});`);
      }
    }
    rmSync(path.join(FIXTURE, "migrations"), { recursive: true, force: true });
    mkdirSync(path.join(FIXTURE, "migrations"), { recursive: true });
    for (const f of readdirSync(path.join(ROOT, "migrations"))) copyFileSync(path.join(ROOT, "migrations", f), path.join(FIXTURE, "migrations", f));
    writeFileSync(path.join(FIXTURE, "rows.sql"), `${lines.join("\n")}\n`);
    console.log(`wrote ${FIXTURE}: ${lines.length - 1} rows`);
  } finally {
    await relay.dispose();
    await downstream.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  capture().catch((e) => {
    console.error(`upgrade-fixture: ${e.message}`);
    process.exit(1);
  });
}
