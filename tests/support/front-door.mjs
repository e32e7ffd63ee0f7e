// The real `npm start`, run as a user runs it: setup, build (both skip when
// current), migrations, then one `wrangler dev` for both workers. Each run
// gets free ports and a fresh --persist-to directory, so it never meets a
// developer's `npm start` or an earlier run's D1.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "./wait-for.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A TCP port nobody listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Sends `signal` to process group `pid`; false when the group is gone. */
const signalGroup = (pid, signal) => {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
};
const groupAlive = (pid) => signalGroup(pid, 0);

// npm start writes dlq/.dev.vars (one per checkout) and wrangler reads it
// once, at start. Runs in one process therefore take turns until /healthz
// answers; after that they may overlap.
let turn = Promise.resolve();

/**
 * Runs `npm start -- --port … --inspector-port … --persist-to <tmp> --var …`
 * and resolves once `GET /healthz` answers 200. `vars` become one `--var
 * NAME:value` each (or `--var=NAME:value` with `varSpelling: "equals"`);
 * `args` are appended. Dispose kills the whole process group and removes
 * the persist directory.
 */
export function startFrontDoor(options = {}) {
  const started = turn.then(() => start(options));
  turn = started.catch(() => {});
  return started;
}

async function start({ vars = {}, args = [], varSpelling = "separate", readyTimeoutMs = 90_000 }) {
  const port = await freePort();
  let inspectorPort;
  while ((inspectorPort = await freePort()) === port);
  const persistTo = mkdtempSync(path.join(tmpdir(), "hookrelay-front-door-"));
  const varArgs = Object.entries(vars).flatMap(([name, value]) =>
    varSpelling === "equals" ? [`--var=${name}:${value}`] : ["--var", `${name}:${value}`],
  );
  const startArgs = ["--port", String(port), "--inspector-port", String(inspectorPort), "--persist-to", persistTo, ...varArgs, ...args];
  const output = [];
  // Detached: its own process group, so dispose reaches npm, bash,
  // wrangler and workerd alike, and nothing outlives the test.
  const child = spawn("npm", ["start", "--", ...startArgs], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", FORCE_COLOR: "0", NO_COLOR: "1" },
  });
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding("utf8");
    let carry = "";
    stream.on("data", (chunk) => {
      const lines = (carry + chunk).split("\n");
      carry = lines.pop();
      output.push(...lines);
    });
  }
  let exit = null;
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve((exit = { code, signal }))));
  const url = `http://127.0.0.1:${port}`;
  const tail = () => output.slice(-40).join("\n");

  let disposed = false;
  async function dispose() {
    if (disposed) return;
    disposed = true;
    if (signalGroup(child.pid, "SIGTERM")) {
      try {
        await waitFor(() => !groupAlive(child.pid), { timeoutMs: 10_000, what: "npm start's process group to exit after SIGTERM" });
      } catch {
        signalGroup(child.pid, "SIGKILL");
        await waitFor(() => !groupAlive(child.pid), { timeoutMs: 5_000, what: "npm start's process group to exit after SIGKILL" });
      }
    }
    await exited;
    rmSync(persistTo, { recursive: true, force: true });
  }

  try {
    await waitFor(
      async () => {
        if (exit) throw new Error(`npm start exited (${exit.signal ?? `code ${exit.code}`}) before /healthz answered; its output:\n${tail()}`);
        const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
        if (res) await res.body?.cancel();
        return res?.status === 200;
      },
      { timeoutMs: readyTimeoutMs, intervalMs: 250, what: `GET ${url}/healthz to answer 200 (is the wasm build current? run bash scripts/build.sh)` },
    );
  } catch (e) {
    await dispose();
    if (e.message.startsWith("npm start exited")) throw e;
    throw new Error(`${e.message}\nnpm start's output:\n${tail()}`);
  }
  return {
    url,
    port,
    persistTo,
    output,
    fetch: (p, init) => fetch(new URL(p, url), init),
    dispose,
  };
}
