// `npm run provision`: its plan from canned wrangler outputs (the parsers
// and the decisions of scripts/lib/provision-plan.mjs), the database id
// written into a config with its comments kept, and a real --dry-run with
// no credentials, which must print the whole plan and never hang.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  DLQ_RETENTION_S,
  describePlan,
  neededResources,
  parseD1List,
  parseQueuesList,
  parseR2List,
  parseSecretList,
  parseWhoami,
  provisionPlan,
  setDatabaseId,
} from "../scripts/lib/provision-plan.mjs";
import { readWorkerConfigs } from "../scripts/lib/worker-configs.mjs";
import { runOffline } from "./support/offline-env.mjs";
import { checkout } from "./support/checkout-copy.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ID = "4f5e6d7c-1111-4222-8333-944455556666";

// What wrangler 4.86 prints (its formats: JSON, cli-table3, labelled values).
const D1_LIST = `[
  {
    "uuid": "${ID}",
    "name": "hookrelay",
    "created_at": "2026-12-01T10:00:00.000Z",
    "version": "production",
    "num_tables": 20,
    "file_size": 1228800
  },
  { "uuid": "0a0a0a0a-2222-4333-8444-955566667777", "name": "other", "created_at": "2026-11-01T10:00:00.000Z", "version": "production", "num_tables": 1, "file_size": 8192 }
]`;
const queuesTable = (...names) =>
  [
    "┌──────────────────────────────────┬───────────────────┬─────────────────────────────┬─────────────────────────────┬───────────┬───────────┐",
    "│ id                               │ name              │ created_on                  │ modified_on                 │ producers │ consumers │",
    ...names.flatMap((n, i) => [
      "├──────────────────────────────────┼───────────────────┼─────────────────────────────┼─────────────────────────────┼───────────┼───────────┤",
      `│ 0000000000000000000000000000000${i} │ ${n.padEnd(17)} │ 2026-12-01T10:00:00.000000Z │ 2026-12-01T10:00:00.000000Z │ 1         │ 1         │`,
    ]),
    "└──────────────────────────────────┴───────────────────┴─────────────────────────────┴─────────────────────────────┴───────────┴───────────┘",
  ].join("\n");
const R2_LIST = "Listing buckets...\nname:           hookrelay-archive\ncreation_date:  2026-12-01T10:00:00.000Z\n\nname:           photos\ncreation_date:  2026-10-01T10:00:00.000Z\n";
const NOT_FOUND = {
  code: 1,
  stdout: "",
  stderr: '\n✘ [ERROR] Worker "hookrelay-dlq" not found.\n\n  If this is a new Worker, run `wrangler deploy` first to create it.\n  Otherwise, check that the Worker name is correct and you\'re logged into the right account.\n\n',
};
const secrets = (...names) => ({ code: 0, stdout: JSON.stringify(names.map((name) => ({ name, type: "secret_text" })), null, "  "), stderr: "" });

const configs = () => readWorkerConfigs(ROOT);
const kinds = (plan) => plan.steps.map((s) => `${s.kind} ${s.name}`);

test("wrangler's outputs are parsed: d1 list --json, the queues table, the R2 list, secret list, whoami", () => {
  assert.deepEqual(parseD1List(`⛅️ wrangler 4.86.0\n${D1_LIST}`).map((d) => d.name), ["hookrelay", "other"]);
  assert.deepEqual(parseD1List(`${D1_LIST}\n\nUpdate available: wrangler 4.90.0 [run npm i wrangler]\n`).map((d) => d.name), ["hookrelay", "other"], "a notice after the JSON");
  assert.deepEqual(parseQueuesList(queuesTable("webhooks", "webhooks-dlq")), ["webhooks", "webhooks-dlq"]);
  assert.deepEqual(parseQueuesList(""), [], "an account with no queues prints no table");
  assert.deepEqual(parseR2List(R2_LIST), ["hookrelay-archive", "photos"]);
  assert.deepEqual(parseR2List("Listing buckets...\n"), []);
  assert.deepEqual(parseSecretList(secrets("ADMIN_JWT_SECRET"), "hookrelay-dlq"), { exists: true, names: ["ADMIN_JWT_SECRET"] });
  assert.deepEqual(parseSecretList(NOT_FOUND, "hookrelay-dlq"), { exists: false, names: [] });
  assert.deepEqual(parseWhoami({ code: 1, stdout: '{"loggedIn":false}' }), { loggedIn: false, email: undefined, accounts: [] });
  assert.equal(parseWhoami({ code: 0, stdout: '{"loggedIn":true,"email":"a@b.c","accounts":[{"name":"A","id":"1"}]}' }).loggedIn, true);
  assert.equal(parseWhoami({ code: 0, stdout: "something else" }).loggedIn, false, "unreadable is not logged in");
});

test("an output that is not what wrangler prints is an error naming the command, never an empty list", () => {
  for (const [parse, text, command] of [
    [parseD1List, "✘ [ERROR] Authentication error [code: 10000]", "d1 list"],
    [parseD1List, '[{"name": "hookrelay"}]', "d1 list"],
    [parseQueuesList, "✘ [ERROR] A request to the Cloudflare API failed.", "queues list"],
    [parseQueuesList, "│ a │ b │\n│ 1 │ 2 │", "queues list"],
    [parseR2List, "name:  only-a-name\n", "r2 bucket list"],
  ]) {
    assert.throws(() => parse(text), (e) => e.message.includes(command) && /run again/.test(e.message), `${command}: ${text}`);
  }
  assert.throws(() => parseSecretList({ code: 1, stdout: "", stderr: "✘ [ERROR] Authentication error [code: 10000]" }, "hookrelay"), /secret list \(hookrelay\)/);
});

test("the resources are every queue of both configs (the dead-letter queue at 14 days), the database and the bucket, once each", () => {
  const need = neededResources(configs().relay, configs().dlq);
  assert.deepEqual(need.databases.map((d) => [d.name, [...d.ids.keys()]]), [["hookrelay", ["wrangler.toml", "dlq/wrangler.toml"]]]);
  assert.deepEqual(need.queues.map((q) => [q.name, q.retentionS]).sort(), [["deliveries", undefined], ["hookrelay-control", undefined], ["hookrelay-jobs", undefined], ["webhooks", undefined], ["webhooks-dlq", DLQ_RETENTION_S]]);
  assert.equal(DLQ_RETENTION_S, 1_209_600, "the Queues maximum, which wrangler accepts");
  assert.deepEqual(need.buckets.map((b) => b.name), ["hookrelay-archive"]);
});

test("an empty account: everything is created, the id written, secrets generated, migrations applied, provider secrets listed", () => {
  const { relay, dlq } = configs();
  const account = { databases: [], queues: [], buckets: [], secrets: { relay: { exists: false, names: [] }, dlq: { exists: false, names: [] } } };
  const plan = provisionPlan({ relay, dlq, account });
  assert.deepEqual(kinds(plan), [
    "create-database hookrelay",
    "write-database-id hookrelay",
    "create-queue webhooks",
    "create-queue webhooks-dlq",
    "create-queue deliveries",
    "create-queue hookrelay-control",
    "create-queue hookrelay-jobs",
    "create-bucket hookrelay-archive",
    "put-secret ADMIN_JWT_SECRET",
    "put-secret RELAY_INTERNAL_SECRET",
    "put-secret DOWNSTREAM_SIGNING_SECRET",
    "migrate DB",
  ]);
  assert.deepEqual(plan.steps.find((s) => s.name === "webhooks-dlq").args, ["queues", "create", "webhooks-dlq", "--message-retention-period-secs", "1209600"]);
  assert.deepEqual(plan.steps.find((s) => s.name === "webhooks").args, ["queues", "create", "webhooks"]);
  assert.deepEqual(plan.steps.find((s) => s.name === "RELAY_INTERNAL_SECRET").workers.map((w) => w.config), ["wrangler.toml", "dlq/wrangler.toml"]);
  assert.deepEqual(plan.steps.find((s) => s.name === "ADMIN_JWT_SECRET").workers.map((w) => w.script), ["hookrelay", "hookrelay-dlq"]);
  assert.match(plan.steps.find((s) => s.name === "ADMIN_JWT_SECRET").say, /wrangler first creates an empty hookrelay and hookrelay-dlq to hold it; npm run deploy replaces it/);
  assert.deepEqual(plan.steps.at(-1).args, ["d1", "migrations", "apply", "DB", "--remote", "-c", "wrangler.toml"]);
  // wrangler.toml declares no source (the demo's are in .dev.vars.example): only the optional alert URL is listed.
  assert.deepEqual(plan.toSet.map((s) => s.command), ["npx wrangler secret put ALERT_WEBHOOK_URL -c wrangler.toml"]);
  // Only the top level's resources: [env.staging]'s are planned with --env staging alone.
  assert.ok(!plan.steps.some((s) => /staging/.test(s.say)), plan.steps.map((s) => s.say).join("\n"));
});

test("run twice: a provisioned account needs nothing but the migrations check and the retention, which are no-ops", () => {
  const { relay, dlq } = configs();
  const own = ["ADMIN_JWT_SECRET", "RELAY_INTERNAL_SECRET"];
  const relayNames = ["ADMIN_JWT_SECRET", "RELAY_INTERNAL_SECRET", "DOWNSTREAM_SIGNING_SECRET", ...plan0(relay).map((s) => s.name)];
  const account = {
    databases: parseD1List(D1_LIST),
    queues: parseQueuesList(queuesTable("webhooks", "webhooks-dlq", "deliveries", "hookrelay-control", "hookrelay-jobs")),
    buckets: parseR2List(R2_LIST),
    secrets: { relay: { exists: true, names: relayNames }, dlq: { exists: true, names: own } },
  };
  const withId = (cfg) => ({ ...cfg, d1_databases: cfg.d1_databases.map((d) => ({ ...d, database_id: ID })) });
  const plan = provisionPlan({ relay: withId(relay), dlq: withId(dlq), account });
  assert.deepEqual(kinds(plan), ["set-retention webhooks-dlq", "migrate DB"]);
  assert.deepEqual(plan.toSet.map((s) => [s.name, s.optional]), [["ALERT_WEBHOOK_URL", true]], "only the optional alert URL is left");
  // The same account, configs still holding the placeholder: only the id is written.
  assert.deepEqual(kinds(provisionPlan({ relay, dlq, account })), ["write-database-id hookrelay", "set-retention webhooks-dlq", "migrate DB"]);
});

// The providers' secrets the committed relay config needs.
const plan0 = (relay) => provisionPlan({ relay, dlq: configs().dlq, account: null }).toSet.filter((s) => !s.optional);

test("RELAY_INTERNAL_SECRET set on one worker only: both get one new value (a secret cannot be read back)", () => {
  const { relay, dlq } = configs();
  const account = { databases: parseD1List(D1_LIST), queues: [], buckets: [], secrets: { relay: { exists: true, names: ["RELAY_INTERNAL_SECRET", "DOWNSTREAM_SIGNING_SECRET"] }, dlq: { exists: true, names: ["ADMIN_JWT_SECRET"] } } };
  const step = provisionPlan({ relay, dlq, account }).steps.find((s) => s.name === "RELAY_INTERNAL_SECRET");
  assert.deepEqual(step.workers.map((w) => w.worker), ["relay", "dlq"]);
  assert.match(step.say, /both get a new value/);
  assert.equal(provisionPlan({ relay, dlq, account }).steps.find((s) => s.name === "DOWNSTREAM_SIGNING_SECRET"), undefined);
});

test("provider secrets: one per source, none for a public-key source, one per destination with auth", () => {
  const { relay, dlq } = configs();
  const vars = { SOURCES: JSON.stringify({ billing: { scheme: "stripe" }, chat: { scheme: "discord", public_key: "ab".repeat(32) } }), DESTINATIONS: { crm: { url: "https://crm.example/h", auth: "bearer" }, plain: { url: "https://x.example" } } };
  const plan = provisionPlan({ relay: { ...relay, vars }, dlq, account: null });
  assert.deepEqual(plan.toSet.map((s) => s.name), ["WEBHOOK_SECRET_BILLING", "DESTINATION_SECRET_CRM", "ALERT_WEBHOOK_URL"]);
  assert.throws(() => provisionPlan({ relay: { ...relay, vars: { SOURCES: "{not json" } }, dlq, account: null }), /wrangler.toml \[vars\] SOURCES is neither/);
});

test("the database id is written into the right table, comments and other tables kept; --env writes the env's", () => {
  const text = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  const { text: out, changed } = setDatabaseId(text, { databaseName: "hookrelay", id: ID, file: "wrangler.toml" });
  assert.equal(changed, true);
  assert.equal(out.split("\n").length, text.split("\n").length);
  assert.match(out, new RegExp(`database_name = "hookrelay"\\n# Replace with[^\\n]*\\ndatabase_id = "${ID}"`));
  assert.equal(out.replace(ID, "00000000-0000-4000-8000-000000000001"), text, "only the id changed");
  assert.equal(setDatabaseId(out, { databaseName: "hookrelay", id: ID, file: "wrangler.toml" }).changed, false, "a second run changes nothing");

  assert.ok(!out.includes("00000000-0000-4000-8000-000000000001") && out.includes("00000000-0000-4000-8000-000000000002"), "[env.staging]'s id is untouched");

  // --env staging writes [env.staging]'s table of the committed config only.
  const { text: envOut, changed: envChanged } = setDatabaseId(text, { databaseName: "hookrelay-staging", id: ID, env: "staging", file: "wrangler.toml" });
  assert.equal(envChanged, true);
  assert.match(envOut, new RegExp(`database_name = "hookrelay-staging"\\n# Replace with[^\\n]*\\ndatabase_id = "${ID}"\\nmigrations_dir`));
  const at = text.indexOf("[env.staging]");
  assert.ok(at > 0 && envOut.slice(0, at) === text.slice(0, at), "the top level is untouched");
  assert.equal(envOut.replace(ID, "00000000-0000-4000-8000-000000000002"), text, "only the env's id changed");
  // A missing database_id is added.
  const noId = text.replace('database_id = "00000000-0000-4000-8000-000000000002"\n', "");
  assert.match(setDatabaseId(noId, { databaseName: "hookrelay-staging", id: ID, env: "staging", file: "wrangler.toml" }).text, new RegExp(`database_name = "hookrelay-staging"\\ndatabase_id = "${ID}"\\n# Replace with[^\\n]*\\nmigrations_dir`), "a missing database_id is added");
  const noEnv = text.slice(0, at);
  assert.throws(() => setDatabaseId(noEnv, { databaseName: "hookrelay-staging", id: ID, env: "staging", file: "wrangler.toml" }), /no \[\[env.staging.d1_databases\]\] table .* set its database_id to 4f5e/);
});

test("npm run provision -- --dry-run with no credentials prints the whole plan, says it could not read the account, and changes nothing", async () => {
  const before = ["wrangler.toml", "dlq/wrangler.toml"].map((f) => readFileSync(path.join(ROOT, f), "utf8"));
  const { code, stdout, stderr } = await runOffline("scripts/provision.mjs", ["--dry-run"]);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /could not read the account/);
  for (const step of ["create the D1 database hookrelay", "write hookrelay's database_id into wrangler.toml and dlq/wrangler.toml", "create the queue webhooks-dlq with a 14-day retention", "create the queue hookrelay-jobs", "create the R2 bucket hookrelay-archive", "generate RELAY_INTERNAL_SECRET", "apply the D1 migrations remotely", "npx wrangler secret put ALERT_WEBHOOK_URL -c wrangler.toml"]) {
    assert.ok(stdout.includes(step), `the plan names: ${step}\n${stdout}`);
  }
  assert.doesNotMatch(stdout, /staging|--env|WEBHOOK_SECRET_/, "only the top level's resources, and no source secret (wrangler.toml declares none)");
  assert.deepEqual(["wrangler.toml", "dlq/wrangler.toml"].map((f) => readFileSync(path.join(ROOT, f), "utf8")), before);
  // The plan as printed is describePlan's.
  assert.ok(stdout.includes(describePlan(provisionPlan({ ...configs(), account: null }), { dryRun: true })[1]));
});

test("npm run provision without credentials and without --dry-run stops in one line saying how to log in", async () => {
  const { code, stderr } = await runOffline("scripts/provision.mjs", []);
  assert.equal(code, 1);
  assert.deepEqual(stderr.trim().split("\n"), ["provision: not logged in to Cloudflare; run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN), or see the plan with: npm run provision -- --dry-run"]);
});

test("--env staging plans staging's own database, queues, bucket and workers, and writes the id into [env.staging]", async () => {
  const dir = checkout();
  try {
    const { code, stdout, stderr } = await runOffline(path.join(dir, "scripts/provision.mjs"), ["--dry-run", "--env", "staging"], { cwd: dir });
    assert.equal(code, 0, stderr);
    const { relay, dlq } = readWorkerConfigs(dir, "staging");
    const need = neededResources(relay, dlq);
    const top = neededResources(configs().relay, configs().dlq);
    for (const db of need.databases) assert.ok(stdout.includes(`create the D1 database ${db.name} (if missing)`) && stdout.includes(`database_id into wrangler.toml and dlq/wrangler.toml ([env.staging])`), stdout);
    for (const q of need.queues) assert.ok(stdout.includes(`create the queue ${q.name}${q.retentionS ? " with a 14-day retention" : ""} (if missing)`), `${q.name}\n${stdout}`);
    for (const b of need.buckets) assert.ok(stdout.includes(`create the R2 bucket ${b.name}`), stdout);
    assert.ok(stdout.includes(`set it on ${relay.name} and ${dlq.name}`), stdout);
    assert.ok(stdout.includes("--env staging"), stdout);
    // None of production's names: staging runs beside it in the same account.
    const prodNames = [...top.queues, ...top.buckets, ...top.databases].map((x) => x.name);
    for (const x of [...need.queues, ...need.buckets, ...need.databases]) assert.ok(!prodNames.includes(x.name), `${x.name} is production's`);
    for (const name of prodNames) assert.ok(!new RegExp(`(create|write) (the (D1 database|queue|R2 bucket) )?${name}[ ']`).test(stdout), `production's ${name} is planned with --env staging:\n${stdout}`);
    assert.deepEqual(need.queues.map((q) => q.name).sort(), ["deliveries-staging", "hookrelay-control-staging", "hookrelay-jobs-staging", "webhooks-dlq-staging", "webhooks-staging"]);
    assert.ok(stdout.includes("npx wrangler d1 migrations apply") || stdout.includes("apply the D1 migrations remotely"), stdout);
    assert.deepEqual(readFileSync(path.join(dir, "wrangler.toml"), "utf8"), readFileSync(path.join(ROOT, "wrangler.toml"), "utf8"), "a dry run changes nothing");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
