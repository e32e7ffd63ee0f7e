// Runs the project's own wrangler (node_modules/wrangler) as a child
// process, every call bounded by a timeout, with telemetry and colours off,
// so the scripts parse plain text and never hang on a network that is not there.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const WRANGLER_JS = path.join(ROOT, "node_modules/wrangler/bin/wrangler.js");

/** An account read: 60 s; a deploy or a migration: 10 minutes. */
export const READ_TIMEOUT_MS = 60_000;
export const WRITE_TIMEOUT_MS = 600_000;

/** `wrangler args…` as the user would type it, for messages and plans. */
export const shown = (args) => ["npx wrangler", ...args].join(" ");

/**
 * Runs `wrangler args…` in `cwd`. `input` is written to its stdin (a
 * secret: never echoed), else stdin is closed so wrangler never prompts.
 * `inherit` streams its output to the user's terminal (a deploy's progress
 * and errors) instead of capturing it. Resolves `{code, stdout, stderr,
 * timedOut}`; never rejects on a non-zero exit. `baseEnv` replaces
 * process.env (a test's environment without credentials).
 */
export function wrangler(args, { cwd = ROOT, input, inherit = false, timeoutMs = READ_TIMEOUT_MS, baseEnv = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRANGLER_JS, ...args], {
      cwd,
      env: { ...baseEnv, WRANGLER_SEND_METRICS: "false", FORCE_COLOR: "0", NO_COLOR: "1" },
      stdio: [input === undefined ? "ignore" : "pipe", inherit ? "inherit" : "pipe", inherit ? "inherit" : "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d) => (stdout += d));
    child.stderr?.on("data", (d) => (stderr += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      // Its whole process group: wrangler may have started workerd or esbuild.
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: timedOut ? null : code, stdout, stderr, timedOut });
    });
    if (input !== undefined) child.stdin.end(input);
  });
}
