// Which sources are the demo's, so that provision warns about them and
// deploy refuses them: a name starting with `demo-`, or one declared by the
// demo's own local-only configuration (its public secrets are in
// .dev.vars.example, so a demo source in production is an open door).
import { existsSync } from "node:fs";
import path from "node:path";
import { readDevVars } from "../dev-vars.mjs";
import { jsonVar } from "./provision-plan.mjs";

/** The committed files that may declare the demo's SOURCES (dotenv, with SOURCES as JSON). */
export const DEMO_CONFIG_FILES = [".dev.vars.example"];

/** The source names the demo configuration in `root` declares. */
export function demoConfigSources(root) {
  const names = new Set();
  for (const file of DEMO_CONFIG_FILES) {
    const full = path.join(root, file);
    if (!existsSync(full)) continue;
    // readDevVars takes off the quotes (SOURCES='{…}', single-quoted JSON); jsonVar parses it.
    for (const name of Object.keys(jsonVar(readDevVars(full), "SOURCES", file))) names.add(name);
  }
  return names;
}

/** The sources of `sources` (a name-keyed object) that are the demo's. */
export function demoSourcesIn(sources, demoNames) {
  return Object.keys(sources).filter((name) => name.startsWith("demo-") || demoNames.has(name));
}
