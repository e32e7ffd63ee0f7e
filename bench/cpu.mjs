// CPU time of a Miniflare's workerd process, from the kernel
// (/proc/<pid>/stat utime + stime, all threads). workerd does not report
// CPU time itself when run locally: its tail events carry cpuTime = 0 and
// wallTime = 0 (relay-ingest.mjs checks that on every run), so this is the
// one CPU number available. It is process-wide: the worker's isolate plus
// Miniflare's entry worker, the queue broker and D1 in the same process.
import { readFileSync, readdirSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

function stat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = s.lastIndexOf(")");
    const comm = s.slice(s.indexOf("(") + 1, close);
    const f = s.slice(close + 2).split(" "); // f[0] is field 3 (state)
    return { comm, ppid: Number(f[1]), cpuMs: (Number(f[11]) + Number(f[12])) * TICK_MS };
  } catch {
    return null;
  }
}

/** Pids of the workerd processes this node process started. */
export function workerdPids() {
  if (process.platform !== "linux") return [];
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      const s = stat(d);
      return s && s.ppid === process.pid && s.comm.startsWith("workerd");
    })
    .map(Number);
}

/** CPU ms used so far by process `pid` (NaN if unknown). */
export function cpuMs(pid) {
  return pid ? (stat(pid)?.cpuMs ?? NaN) : NaN;
}

/**
 * CPU ns used so far by process `pid`, all threads: the first field of each
 * `/proc/<pid>/task/<tid>/schedstat` (the scheduler's own run time, in ns).
 * No 10 ms tick, so a short case is measured as exactly as a long one;
 * `NaN` where schedstat is missing.
 */
export function cpuNs(pid) {
  if (!pid) return NaN;
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    }
    return ns;
  } catch {
    return NaN;
  }
}

/**
 * What workerd itself reports as CPU and wall time per request: a worker
 * with a tail worker, a few requests, the tail events' `cpuTime` and
 * `wallTime`. Locally (workerd without the production limit enforcer)
 * both are 0; this re-checks it each run rather than assuming it.
 */
export async function tailTimes(compatibilityDate, requests = 5) {
  const { Miniflare } = await import("miniflare");
  const seen = [];
  let carry = "";
  const mf = new Miniflare({
    cf: false,
    host: "127.0.0.1",
    port: 0,
    handleRuntimeStdio: (stdout) => {
      stdout.setEncoding("utf8");
      stdout.on("data", (chunk) => {
        const lines = (carry + chunk).split("\n");
        carry = lines.pop();
        for (const l of lines) if (l.startsWith("TAILTIME ")) seen.push(JSON.parse(l.slice(9)));
      });
    },
    workers: [
      {
        name: "busy",
        modules: true,
        compatibilityDate,
        tails: ["tail"],
        // About 10 ms of CPU per request, so a real cpuTime could not be 0.
        script: "export default { fetch() { let x = 0; for (let i = 0; i < 3e6; i++) x += Math.sqrt(i); return new Response(String(x)); } };",
      },
      { name: "tail", modules: true, compatibilityDate, script: "export default { tail(events) { for (const e of events) console.log('TAILTIME ' + JSON.stringify({ cpuTime: e.cpuTime, wallTime: e.wallTime })); } };" },
    ],
  });
  try {
    const url = await mf.ready;
    for (let i = 0; i < requests; i++) await (await fetch(url)).arrayBuffer();
    for (let i = 0; i < 40 && seen.length < requests; i++) await new Promise((r) => setTimeout(r, 50));
  } finally {
    await mf.dispose();
  }
  return { events: seen.length, cpuTimes: seen.map((e) => e.cpuTime), wallTimes: seen.map((e) => e.wallTime) };
}
