// Local D1 helpers shared by the test harness, the soak and the benchmarks:
// migrations/*.sql applied to a Miniflare D1 binding, in order, split the
// way wrangler splits them, and a query's rows.
import wrangler from "wrangler";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

/**
 * Runs the migrations against `db`, in order: every one, or those whose
 * number is in `after` < n <= `upTo` (a database migrated part of the way,
 * as an older deployment left it).
 */
export async function applyMigrations(db, { after = 0, upTo = Infinity } = {}) {
  for (const file of readdirSync(MIGRATIONS).sort()) {
    const n = Number.parseInt(file, 10);
    if (!(n > after && n <= upTo)) continue;
    const sql = readFileSync(path.join(MIGRATIONS, file), "utf8");
    for (const statement of wrangler.unstable_splitSqlQuery(sql)) {
      if (statement.trim()) await db.prepare(statement).run();
    }
  }
}

/** Rows of a query. */
export async function rows(db, sql, ...params) {
  const { results } = await db.prepare(sql).bind(...params).all();
  return results;
}
