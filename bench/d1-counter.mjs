// Counts D1 round trips from outside the product code.
//
// A Miniflare wrapped binding replaces a worker's `env.DB`: workerd loads
// the single-module worker `d1-counter` into that worker's own isolate and
// calls its default export with the counter worker's bindings (Miniflare
// copies them in as the wrapped binding's inner bindings, see
// `wrappedBindingsToPopulate` in miniflare's dist/src/index.js). The object
// it returns forwards every call to the real D1 and prints one stdout line
// per round trip: each `batch`, each `exec`, each (deprecated) `dump`, each
// statement's `run`/`all`/`first`/`raw`. `prepare` and `bind` make none.
//
// worker-rs only accepts a D1 binding whose JS constructor is named
// `D1Database` (`EnvBinding::TYPE_NAME` in worker-0.8.7/src/d1/mod.rs, or
// "BetaDatabase"), hence the class names below. Its other D1 calls are
// `structural` wasm-bindgen methods, so a look-alike object is enough; only
// `batch` must hand the real statements back to D1.

/** The counter's stdout line: `D1RT <worker> <kind> <statements>`. */
const LINE = /^D1RT (\S+) (\S+) (\d+)/;
export const COUNTER_WORKER = "d1-counter";

const SCRIPT = `
const REAL = Symbol("real");
class D1PreparedStatement {
  constructor(real, label) { this[REAL] = real; this.label = label; }
  bind(...values) { return new D1PreparedStatement(this[REAL].bind(...values), this.label); }
  first(...a) { trip(this.label, "first", 1); return this[REAL].first(...a); }
  run() { trip(this.label, "run", 1); return this[REAL].run(); }
  all() { trip(this.label, "all", 1); return this[REAL].all(); }
  raw(...a) { trip(this.label, "raw", 1); return this[REAL].raw(...a); }
}
const unwrap = (statements) => statements.map((s) => s?.[REAL] ?? s);
// One line per round trip, written before the call so a call that throws
// still counts.
function trip(label, kind, statements) { console.log("D1RT " + label + " " + kind + " " + statements); }
class D1DatabaseSession {
  constructor(real, label) { this[REAL] = real; this.label = label; }
  prepare(sql) { return new D1PreparedStatement(this[REAL].prepare(sql), this.label); }
  batch(statements) { trip(this.label, "batch", statements.length); return this[REAL].batch(unwrap(statements)); }
  getBookmark() { return this[REAL].getBookmark(); }
}
class D1Database {
  constructor(real, label) { this[REAL] = real; this.label = label; }
  prepare(sql) { return new D1PreparedStatement(this[REAL].prepare(sql), this.label); }
  batch(statements) { trip(this.label, "batch", statements.length); return this[REAL].batch(unwrap(statements)); }
  exec(sql) { trip(this.label, "exec", 1); return this[REAL].exec(sql); }
  dump() { trip(this.label, "dump", 0); return this[REAL].dump(); }
  withSession(c) { return new D1DatabaseSession(this[REAL].withSession(c), this.label); }
}
export default function (env) { return new D1Database(env.DB, env.D1_COUNTER_LABEL ?? "?"); }
`;

/** The database id behind a worker's binding `DB`, in any of Miniflare's three spellings. */
function databaseIdOf(d1Databases) {
  if (Array.isArray(d1Databases)) return d1Databases.includes("DB") ? "DB" : undefined;
  const b = d1Databases?.DB;
  return typeof b === "string" ? b : b?.id;
}

function withoutDb(d1Databases) {
  if (Array.isArray(d1Databases)) return d1Databases.filter((n) => n !== "DB");
  const { DB: _drop, ...rest } = d1Databases;
  return rest;
}

/**
 * `workers` with every worker's `DB` routed through the counter, plus the
 * counter worker itself (last: a wrapped worker may not be the entry). The
 * counter worker holds the real binding as `DB`, so it is also the worker
 * to name as `dbWorker` for migrations and the bench's own polling, which
 * go straight to D1 and are not counted. All `DB`s must be one database.
 *
 * Use: `started(workers, name, { countD1: true })` in bench/lib.mjs does
 * all of it. By hand: start Miniflare with `wrapWorkers(workers)`,
 * `dbWorker: COUNTER_WORKER`, and `handleRuntimeStdio: lineStdio((l) =>
 * tally.onLine(l))` with a `new D1Tally()`; then `tally.of(name).trips`.
 */
export function wrapWorkers(workers) {
  const ids = new Set(workers.map((w) => databaseIdOf(w.d1Databases)).filter(Boolean));
  if (ids.size !== 1) throw new Error(`d1-counter: expected one D1 database behind DB, found ${ids.size}`);
  const [id] = ids;
  const wrapped = workers.map((w) =>
    databaseIdOf(w.d1Databases)
      ? {
          ...w,
          d1Databases: withoutDb(w.d1Databases),
          wrappedBindings: { ...w.wrappedBindings, DB: { scriptName: COUNTER_WORKER, bindings: { D1_COUNTER_LABEL: w.name } } },
        }
      : w,
  );
  // No compatibilityDate: a wrapped module runs with that of the worker it is bound to.
  return [...wrapped, { name: COUNTER_WORKER, modules: true, script: SCRIPT, d1Databases: { DB: id } }];
}

/** Tallies the counter's lines by worker: `onLine` returns true for a counter line. */
export class D1Tally {
  constructor() {
    this.byWorker = {};
  }
  onLine(line) {
    const m = LINE.exec(line);
    if (!m) return false;
    const w = (this.byWorker[m[1]] ??= { trips: 0, statements: 0, kinds: {} });
    w.trips += 1;
    w.statements += Number(m[3]);
    w.kinds[m[2]] = (w.kinds[m[2]] ?? 0) + 1;
    return true;
  }
  /** Round trips (and statements) of `worker` so far. */
  of(worker) {
    return this.byWorker[worker] ?? { trips: 0, statements: 0, kinds: {} };
  }
  /** `kind:count` list, e.g. `batch:100 first:3`. */
  kinds(worker) {
    return Object.entries(this.of(worker).kinds)
      .map(([k, v]) => `${k}:${v}`)
      .join(" ");
  }
}
