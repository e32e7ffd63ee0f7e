// The local D1 as the harness reads and writes it: a tiny JS worker bound to
// the same database, reached over plain async HTTP (`mf.dispatchFetch`).
//
// Why not `mf.getD1Database()`: its proxy makes a *synchronous* round trip
// (a worker thread, Atomics.wait) for every `prepare`, `bind` and property
// read. On a loaded two-core CI machine that channel once fell out of step
// (miniflare's `assert(message?.id === id)`), and every later query in the
// file failed with it. An ordinary request has no such channel.

/** The route the probe answers on; no hookrelay worker has routes. */
const PROBE_HOST = "d1-probe.hookrelay.test";

const PROBE_SCRIPT = `
export default {
  async fetch(request, env) {
    const { sql, params, mode, column } = await request.json();
    try {
      const statement = env.DB.prepare(sql).bind(...params);
      let out;
      if (mode === "all") out = (await statement.all()).results;
      else if (mode === "first") out = await statement.first(column ?? undefined);
      else out = (await statement.run()).meta;
      return Response.json({ ok: true, out: out ?? null });
    } catch (e) {
      return Response.json({ ok: false, error: String(e?.message ?? e) });
    }
  },
};`;

/** Miniflare options of the probe worker, bound to the D1 database `databaseId`. */
export function d1ProbeWorker(databaseId) {
  return {
    name: "hookrelay-test-d1-probe",
    modules: true,
    script: PROBE_SCRIPT,
    compatibilityDate: "2024-09-23",
    d1Databases: { DB: databaseId },
    routes: [`${PROBE_HOST}/*`],
  };
}

/**
 * A D1Database-shaped client for the subset the harness uses:
 * `prepare(sql).bind(...params)` then `.all()` (`{ results }`), `.first(column?)`
 * or `.run()` (the statement's `meta`). A failing statement rejects with
 * D1's own message.
 */
export function d1ProbeClient(mf) {
  const call = async (body) => {
    const res = await mf.dispatchFetch(`http://${PROBE_HOST}/`, { method: "POST", body: JSON.stringify(body) });
    const answer = await res.json();
    if (!answer.ok) throw new Error(answer.error);
    return answer.out;
  };
  const statement = (sql, params) => ({
    bind: (...bound) => statement(sql, bound),
    all: async () => ({ results: await call({ sql, params, mode: "all" }) }),
    first: (column) => call({ sql, params, mode: "first", column: column ?? null }),
    run: async () => ({ success: true, meta: await call({ sql, params, mode: "run" }) }),
  });
  return { prepare: (sql) => statement(sql, []) };
}
