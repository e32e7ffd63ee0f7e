// The two workers' configurations as wrangler itself resolves them (its
// own reader, environments included), for the provision and deploy scripts.
import { existsSync } from "node:fs";
import path from "node:path";
import { experimental_readRawConfig, unstable_readConfig } from "wrangler";
import { ScriptError } from "./fail.mjs";

/** The relay's and the DLQ worker's config files, relative to the checkout. */
export const CONFIG_FILES = { relay: "wrangler.toml", dlq: "dlq/wrangler.toml" };

/**
 * `{relay, dlq}`, each wrangler's resolved config for `env` (top level when
 * none) plus `file`, the path relative to `root`. An `--env` that a config
 * does not declare is refused: wrangler would quietly fall back to the top
 * level and deploy production's bindings under another name.
 */
export function readWorkerConfigs(root, env) {
  const out = {};
  for (const [worker, file] of Object.entries(CONFIG_FILES)) {
    const full = path.join(root, file);
    if (!existsSync(full)) throw new ScriptError(`${file} is missing; run this from a hookrelay checkout`);
    let config;
    try {
      if (env) {
        const { rawConfig } = experimental_readRawConfig({ config: full });
        if (!rawConfig.env?.[env]) throw new ScriptError(`${file} has no [env.${env}]; declare it there, or drop --env ${env}`);
      }
      config = unstable_readConfig({ config: full, env }, { hideWarnings: true });
    } catch (e) {
      if (e instanceof ScriptError) throw e;
      throw new ScriptError(`${file} cannot be read: ${e.message}; fix it and run again`);
    }
    out[worker] = { ...config, file };
  }
  return out;
}
