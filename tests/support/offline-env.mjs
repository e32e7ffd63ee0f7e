// The environment a script under test runs in: no Cloudflare credentials
// and no wrangler login (a fresh HOME), telemetry off, so nothing can reach
// the Cloudflare API and wrangler fails fast where it would need it.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** process.env without credentials, with HOME and XDG_CONFIG_HOME in a new empty folder. */
export function offlineEnv(extra = {}) {
  const home = mkdtempSync(path.join(os.tmpdir(), "hookrelay-nologin-"));
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", ...extra };
  for (const k of ["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_API_KEY", "CLOUDFLARE_EMAIL", "CLOUDFLARE_ACCOUNT_ID", "CF_API_TOKEN", "CF_ACCOUNT_ID"]) delete env[k];
  return env;
}

/** Runs a script with no credentials; resolves {code, stdout, stderr, ms}, killing it past `timeoutMs`. */
export function runOffline(script, args, { timeoutMs = 60_000, cwd = ROOT, input, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, [script, ...args], { cwd, env: offlineEnv(env), stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    if (input !== undefined) child.stdin.end(input);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} ${args.join(" ")} did not finish within ${timeoutMs} ms: it hangs. stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}
