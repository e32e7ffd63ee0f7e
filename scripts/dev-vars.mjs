// Reads wrangler's .dev.vars format (KEY="value" lines, # comments), the one
// parser every local script and test harness shares.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The variables in `file`. */
export function readDevVars(file) {
  return Object.fromEntries(
    readFileSync(file, "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#") && l.includes("="))
      .map((l) => {
        const i = l.indexOf("=");
        return [l.slice(0, i).trim(), l.slice(i + 1).trim().replace(/^"|"$/g, "")];
      }),
  );
}

/** The local development secrets: `.dev.vars` in `dir` if present, else `.dev.vars.example`. */
export function localDevVars(dir = ".") {
  const file = path.join(dir, existsSync(path.join(dir, ".dev.vars")) ? ".dev.vars" : ".dev.vars.example");
  return { file, vars: readDevVars(file) };
}

/**
 * The committed development secrets (.dev.vars.example): what tests and benchmarks sign with.
 * A blank line (ALERT_WEBHOOK_URL=, blank meaning unset) is no secret, so it is left out.
 */
export const EXAMPLE_SECRETS = Object.fromEntries(
  Object.entries(readDevVars(path.join(ROOT, ".dev.vars.example"))).filter(([, value]) => value !== ""),
);
