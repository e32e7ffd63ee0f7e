// An upgrade from the previous release (DESIGN §7, expand-then-contract): a
// database made by the previous release's migrations and holding the rows
// its workers wrote (tests/fixtures/previous-release, frozen at release by
// tests/support/upgrade-fixture.mjs) is migrated with today's migrations,
// then today's workers serve it: its events are listed, its dead letter
// replayed. Then the previous release's view of the schema is checked
// against the migrated one: every table and column it had is still there
// with its type, a column added to one of its tables is nullable or has a
// default (its INSERTs do not name it), and its own INSERTs of those rows
// still run on the migrated schema.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import wrangler from "wrangler";
import { startRelay, rows, waitFor } from "./support/harness.mjs";
import { adminClient } from "./support/admin.mjs";
import { startDownstream } from "./support/downstream.mjs";
import { applyMigrations, migrationFiles } from "../scripts/local-d1.mjs";
import { FIXTURE, UPGRADE_SECRETS, dataTables, upgradeSources } from "./support/upgrade-fixture.mjs";

const previous = migrationFiles(path.join(FIXTURE, "migrations"));
const today = migrationFiles();
const pending = today.filter((f) => !previous.some((p) => path.basename(p) === path.basename(f)));
const ROWS = readFileSync(path.join(FIXTURE, "rows.sql"), "utf8");

let relay, downstream, admin, before_;

/** Each table's columns as {name: {type, notnull, dflt}}. */
async function schema(db) {
  const out = {};
  for (const table of await dataTables(db, rows)) {
    const columns = await rows(db, `PRAGMA table_info("${table}")`);
    out[table] = Object.fromEntries(columns.map((c) => [c.name, { type: c.type, notnull: c.notnull, dflt: c.dflt_value }]));
  }
  return out;
}

async function runSql(db, sql) {
  for (const statement of wrangler.unstable_splitSqlQuery(sql)) if (statement.trim()) await db.prepare(statement).run();
}

before(async () => {
  downstream = await startDownstream({ "/fixed": () => 200 });
  relay = await startRelay({
    relayVars: { SOURCES: JSON.stringify(upgradeSources(downstream.url("/fixed"))), ...UPGRADE_SECRETS, DOWNSTREAM_SIGNING_SECRET: "up-down-secret" },
    // The previous release's database: its migrations and its rows.
    migrate: async (db) => {
      await applyMigrations(db, previous);
      await runSql(db, ROWS);
    },
  });
  before_ = await schema(relay.db);
  // The upgrade: today's pending migrations, then today's workers restarted on it.
  await applyMigrations(relay.db, pending);
  await relay.reconfigure({});
  admin = adminClient(relay, Object.values(UPGRADE_SECRETS));
});
after(async () => {
  await relay?.dispose();
  await downstream?.close();
});

test("the previous release's migrations were never edited since (D1 has applied them)", () => {
  assert.ok(previous.length > 0, "the fixture holds migrations");
  for (const file of previous) {
    const now = path.join(path.dirname(today[0]), path.basename(file));
    assert.ok(existsSync(now), `${path.basename(file)} was removed from migrations/`);
    assert.equal(readFileSync(now, "utf8"), readFileSync(file, "utf8"), `${path.basename(file)} was edited after its release`);
  }
});

test("today's workers serve the migrated database: its events are listed and its dead letter replays", async () => {
  const listed = await admin.get("events?source=up-store");
  assert.equal(listed.status, 200, JSON.stringify(listed.json));
  assert.equal(listed.data.items.length, 2);
  const dead = await admin.get("webhook-dlq?status=pending");
  assert.equal(dead.status, 200, JSON.stringify(dead.json));
  assert.equal(dead.data.items.length, 1);
  const [entry] = dead.data.items;
  assert.equal(entry.identity?.source ?? entry.source, "up-forward");

  const replay = await admin.post(`webhook-dlq/${entry.id}/replay`, { reason: "upgrade test: the downstream is fixed" });
  assert.equal(replay.status, 200, JSON.stringify(replay.json));
  assert.equal(replay.data.outcome, "succeeded");
  await waitFor(() => downstream.hits("/fixed").length === 1, { what: "the replayed event at the downstream" });
  assert.equal(JSON.parse(downstream.hits("/fixed")[0].body).n, 3);
  assert.equal((await admin.get(`webhook-dlq/${entry.id}`)).data.status, "replayed");
});

test("the previous release's schema survives the migrations (expand, then contract)", async () => {
  const after_ = await schema(relay.db);
  for (const [table, columns] of Object.entries(before_)) {
    assert.ok(after_[table], `table ${table} was dropped; the previous release still reads it`);
    for (const [name, col] of Object.entries(columns)) {
      const now = after_[table][name];
      assert.ok(now, `${table}.${name} was dropped; the previous release still reads it`);
      assert.equal(now.type, col.type, `${table}.${name} changed type`);
      assert.ok(!(now.notnull && !col.notnull && now.dflt === null), `${table}.${name} became NOT NULL without a default`);
    }
    for (const [name, col] of Object.entries(after_[table])) {
      if (columns[name]) continue;
      assert.ok(!col.notnull || col.dflt !== null, `${table}.${name} is new, NOT NULL and without a default: the previous release's INSERTs into ${table} would fail`);
    }
  }
  // Its writes, as it made them, still run: the fixture's INSERTs again, on the migrated tables.
  const counts = async () => Object.fromEntries(await Promise.all(Object.keys(before_).map(async (t) => [t, (await rows(relay.db, `SELECT count(*) AS n FROM "${t}"`))[0].n])));
  const tables = [...new Set([...ROWS.matchAll(/^INSERT OR REPLACE INTO "([^"]+)"/gm)].map((m) => m[1]))];
  const written = await counts();
  for (const t of tables) await relay.db.prepare(`DELETE FROM "${t}"`).run();
  await runSql(relay.db, ROWS);
  const rewritten = await counts();
  for (const t of tables) assert.ok(rewritten[t] >= 1, `${t}: the previous release's rows were not written again`);
  assert.ok(Object.keys(written).length > 0);
});
