// Runs the built CLI (`target/debug/hookrelay`, built by `npm test` before
// the integration tests) as an operator would: its own process, with an
// environment cleared of any HOOKRELAY_*, SOURCES or secret the developer
// has set, and a configuration directory of its own. Every run's output is
// kept, so a test can check that no token was ever printed.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = path.join(ROOT, "target/debug/hookrelay");

/** Every run: `{args, stdout, stderr}`, for the no-token-printed checks. */
export const RUNS = [];

/** A fresh temporary directory. */
export const tempDir = (tag = "cli") => mkdtempSync(path.join(os.tmpdir(), `hookrelay-${tag}-`));

const CLEARED = /^(HOOKRELAY_|SOURCES$|DESTINATIONS$|WEBHOOK_SECRET_|DESTINATION_SECRET_|DESTINATION_SIGNING_SECRET_|DOWNSTREAM_SIGNING_SECRET$|ADMIN_JWT_SECRET$|XDG_CONFIG_HOME$)/;

/** The environment a run starts from: this one, cleared, with `HOOKRELAY_CONFIG` in a directory of its own. */
export function baseEnv(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !CLEARED.test(k)));
  return { ...env, HOOKRELAY_CONFIG: tempDir("config"), ...extra };
}

/** Runs `hookrelay …args`: `{code, stdout, stderr}`. `input` is written to its stdin (else it is closed). */
export function hookrelay(args, { env = baseEnv(), input, cwd = ROOT, timeoutMs = 60_000 } = {}) {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build it with \`cargo build -p hookrelay-cli\` (npm test does)`);
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const run = { args, code: code ?? signal, stdout, stderr };
      RUNS.push(run);
      resolve(run);
    });
    // A command that never reads its input (--help, a usage error) may
    // exit before it is written: that broken pipe is no failure.
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
  });
}

/** Starts a long-running `hookrelay …args` (tail): the child, and its output so far. */
export function start(args, { env = baseEnv(), cwd = ROOT } = {}) {
  const child = spawn(BIN, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (c) => (out.stdout += c));
  child.stderr.on("data", (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.on("close", (code, signal) => {
    RUNS.push({ args, code: code ?? signal, ...out });
    resolve(code ?? signal);
  }));
  return { child, out, exited };
}

/** A project folder the CLI finds from its working directory: a wrangler.toml and a .dev.vars. */
export function projectDir(devVars) {
  const dir = tempDir("project");
  writeFileSync(path.join(dir, "wrangler.toml"), 'name = "project"\n');
  writeFileSync(path.join(dir, ".dev.vars"), Object.entries(devVars).map(([k, v]) => `${k}="${v}"`).join("\n") + "\n");
  return dir;
}

/** A captured request as raw HTTP/1.1 text, lines ending in `eol`, body byte-exact. */
export function capture({ method = "POST", target, host = "relay.example.com", headers = {}, body }, eol = "\r\n") {
  const lines = [`${method} ${target} HTTP/1.1`, `Host: ${host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return Buffer.concat([Buffer.from(lines.join(eol) + eol + eol), Buffer.from(body)]);
}
