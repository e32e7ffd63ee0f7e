// Reads wrangler's .dev.vars format (KEY="value" or KEY='value' lines, #
// comments), the one parser every local script and test harness shares.
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
        return [l.slice(0, i).trim(), unquote(l.slice(i + 1).trim())];
      }),
  );
}

/** A dotenv value without its quotes: a matched pair of ", ' or ` (dotenv keeps what is inside). */
function unquote(value) {
  const m = /^(["'`])([\s\S]*)\1$/.exec(value);
  return m ? m[2] : value;
}

/** The local development secrets: `.dev.vars` in `dir` if present, else `.dev.vars.example`. */
export function localDevVars(dir = ".") {
  const file = path.join(dir, existsSync(path.join(dir, ".dev.vars")) ? ".dev.vars" : ".dev.vars.example");
  return { file, vars: readDevVars(file) };
}

/** The demo's configuration in .dev.vars.example (not secrets: what it declares). */
export const DEMO_CONFIG_KEYS = ["SOURCES"];

const EXAMPLE = readDevVars(path.join(ROOT, ".dev.vars.example"));

/** The demo's sources (.dev.vars.example's SOURCES), parsed. */
export const DEMO_SOURCES = JSON.parse(EXAMPLE.SOURCES);

/**
 * The committed development secrets (.dev.vars.example): what tests and benchmarks sign with.
 * A blank line (ALERT_WEBHOOK_URL=, blank meaning unset) is no secret, so it is left out,
 * and so is the demo's configuration (SOURCES).
 */
export const EXAMPLE_SECRETS = Object.fromEntries(
  Object.entries(EXAMPLE).filter(([key, value]) => value !== "" && !DEMO_CONFIG_KEYS.includes(key)),
);
