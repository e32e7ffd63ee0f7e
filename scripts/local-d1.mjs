// Local D1 helpers shared by the test harness, the soak and the benchmarks:
// migrations/*.sql applied to a Miniflare D1 binding, in order, split the
// way wrangler splits them, and a query's rows.
import wrangler from "wrangler";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

/** The migration files of `dir` (default: migrations/), in the order they apply: *.sql only, as wrangler reads them (the folder also holds its README). */
export function migrationFiles(dir = MIGRATIONS) {
  return readdirSync(dir).filter((f) => f.endsWith(".sql")).sort().map((f) => path.join(dir, f));
}

/** Runs the migrations `files` (default: every one in migrations/) against `db`, in order. */
export async function applyMigrations(db, files = migrationFiles()) {
  for (const file of files) {
    const sql = readFileSync(file, "utf8");
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
