// What `npm run deploy` decides, as pure functions: what it refuses to
// deploy (before anything is built or uploaded), the order of the workers'
// deploys given whether the relay exists, and the DLQ worker's bootstrap
// config for the very first deploy.
import { jsonVar } from "./provision-plan.mjs";
import { demoSourcesIn } from "./demo-sources.mjs";

/** The placeholder the committed configs carry until `npm run provision` writes the real id. */
export const isPlaceholderId = (id) => !id || /^0{8}-0{4}-/.test(id);

/**
 * Why the configuration must not be deployed, one reason per problem
 * (empty: it may be). `demoNames`: the demo configuration's source names.
 */
export function deployRefusals({ relay, dlq }, demoNames, env) {
  const where = (cfg, table) => `${cfg.file} ${env ? `[env.${env}] ` : ""}${table}`;
  const out = [];
  for (const cfg of [relay, dlq]) {
    for (const d of cfg.d1_databases ?? []) {
      if (isPlaceholderId(d.database_id)) out.push(`${where(cfg, "[[d1_databases]]")} ${d.binding} has the placeholder database_id ${d.database_id ?? "(none)"}: run npm run provision${env ? ` -- --env ${env}` : ""}, which creates the database and writes its id`);
    }
    if (cfg.vars?.HOOKRELAY_TEST_FAULTS !== undefined) out.push(`${where(cfg, "[vars]")} sets HOOKRELAY_TEST_FAULTS, a test-only fault switch: remove it`);
  }
  const demo = demoSourcesIn(jsonVar(relay.vars, "SOURCES", relay.file), demoNames);
  if (demo.length) out.push(`${where(relay, "[vars] SOURCES")} declares the demo source(s) ${demo.join(", ")}, whose secrets are public: replace them with your own sources`);
  return out;
}

/**
 * The deploys, in an order the two service bindings allow: each worker
 * binds the other, and a binding's target must exist. The DLQ worker goes
 * first (the relay then finds it); when the relay does not exist yet (the
 * very first deploy) the DLQ worker first goes out without its RELAY
 * binding, then the relay, then the DLQ worker again with it.
 */
export function deploySequence({ relayExists, relay, dlq, bootstrapFile }) {
  const steps = [];
  if (!relayExists) steps.push({ config: bootstrapFile, worker: dlq.name, say: `${dlq.name} without its RELAY binding (first deploy: ${relay.name} does not exist yet)` });
  if (relayExists) steps.push({ config: dlq.file, worker: dlq.name, say: dlq.name });
  steps.push({ config: relay.file, worker: relay.name, say: relay.name });
  if (!relayExists) steps.push({ config: dlq.file, worker: dlq.name, say: `${dlq.name} again, now with its RELAY binding` });
  return steps;
}

/**
 * `text` (dlq/wrangler.toml) without its `[[services]]` tables (those of
 * `[env.<env>]` when `env` is given): the bootstrap config of a first
 * deploy. Every other line is kept, so paths resolve as in the original.
 */
export function withoutServiceBindings(text, env) {
  const header = env ? `[[env.${env}.services]]` : "[[services]]";
  let skipping = false;
  return text
    .split("\n")
    .filter((line) => {
      const t = line.trim();
      if (t.startsWith("[")) skipping = t === header;
      return !skipping;
    })
    .join("\n");
}
