// Local D1 helpers shared by the test harness, the soak and the benchmarks:
// migrations/*.sql applied to a Miniflare D1 binding, in order, split the
// way wrangler splits them, and a query's rows.
import wrangler from "wrangler";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

/** Runs every migration against `db`. */
export async function applyMigrations(db) {
  // *.sql only, as wrangler reads them: the folder also holds its README.
  for (const file of readdirSync(MIGRATIONS).filter((f) => f.endsWith(".sql")).sort()) {
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
