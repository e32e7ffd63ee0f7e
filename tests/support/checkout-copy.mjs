// A throwaway copy of what provision and deploy read (both configs, the
// scripts, the demo's .dev.vars.example; node_modules linked), for running
// the real scripts on edited configurations without touching the checkout.
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A copy of what deploy reads (configs, scripts, the demo's .dev.vars.example), edited by `edit(relayText, dlqText)`. */
export function checkout(edit = (r, d) => [r, d], devVarsExtra = "") {
  const dir = mkdtempSync(path.join(os.tmpdir(), "hookrelay-deploy-"));
  cpSync(path.join(ROOT, "scripts"), path.join(dir, "scripts"), { recursive: true, filter: (src) => !src.includes("node_modules") });
  cpSync(path.join(ROOT, "dlq/wrangler.toml"), path.join(dir, "dlq/wrangler.toml"));
  writeFileSync(path.join(dir, ".dev.vars.example"), readFileSync(path.join(ROOT, ".dev.vars.example"), "utf8") + devVarsExtra);
  symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  const [relay, dlq] = edit(readFileSync(path.join(ROOT, "wrangler.toml"), "utf8"), readFileSync(path.join(ROOT, "dlq/wrangler.toml"), "utf8"));
  writeFileSync(path.join(dir, "wrangler.toml"), relay);
  writeFileSync(path.join(dir, "dlq/wrangler.toml"), dlq);
  return dir;
}
