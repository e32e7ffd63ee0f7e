// `npm start -- --var …` reaches the DLQ worker through a generated
// dlq/.dev.vars. These check the argument parsing against wrangler's rules
// and the quoting against wrangler's own .dev.vars parser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, lstatSync, mkdirSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import wrangler from "wrangler";
import { varArgs, dotenvQuote, dlqDevVarsText, prepareDevVars } from "../scripts/start-dev-vars.mjs";
import { ROOT, SHARED_KEYS, hookrelayWorkers } from "../scripts/miniflare-workers.mjs";

const SOURCES = JSON.stringify({ "fd-poison": { scheme: "hmac-sha256", downstream: "http://127.0.0.1:9/d", tolerance_s: 300 } });

function tmp(t) {
  const dir = mkdtempSync(path.join(tmpdir(), "hookrelay-devvars-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What wrangler binds for a worker whose config sits beside `devVarsText` as .dev.vars. */
function wranglerReads(dir, devVarsText) {
  writeFileSync(path.join(dir, "wrangler.toml"), 'name = "probe"\nmain = "index.js"\ncompatibility_date = "2026-04-01"\n[vars]\nDLQ_CAPACITY = "10000"\n');
  writeFileSync(path.join(dir, ".dev.vars"), devVarsText);
  const prev = process.env.WRANGLER_LOG;
  process.env.WRANGLER_LOG = "error";
  try {
    return wrangler.unstable_getMiniflareWorkerOptions(path.join(dir, "wrangler.toml")).workerOptions.bindings;
  } finally {
    if (prev === undefined) delete process.env.WRANGLER_LOG;
    else process.env.WRANGLER_LOG = prev;
  }
}

test("--var is parsed as wrangler parses it: both spellings, greedy values, first ':' splits, last wins", () => {
  const vars = varArgs([
    "--port", "8790",
    "--var", "A:1", "B:x:y",
    "--var=C:", "D:{\"k\":\"v\",\"n\":[1,2]}",
    "--inspector-port", "0",
    "--var", "A:2",
    "--var=E",
    "--", "--var", "F:ignored",
  ]);
  assert.deepEqual(Object.fromEntries(vars), { A: "2", B: "x:y", C: "", D: '{"k":"v","n":[1,2]}', E: "" });
  assert.deepEqual(Object.fromEntries(varArgs(["--persist-to", "/tmp/x", "--ip", "127.0.0.1"])), {});
});

test("wrangler's .dev.vars parser reads every quoted value back unchanged", (t) => {
  const dir = tmp(t);
  const values = {
    SOURCES,
    SOURCES_AS_JSON_STRING: JSON.stringify(SOURCES),
    RETRY_DELAYS_S: "1,1,1,1,1",
    HASH_AND_SPACES: "  a # not a comment  ",
    BACKSLASHES: "C:\\new\\raw\\",
    APOSTROPHE: "it's",
    APOSTROPHE_AND_BACKTICK: "it's `x`",
    MULTILINE: "line 1\nline 2",
    EMPTY: "",
  };
  const text = dlqDevVarsText('ROOT_SECRET="from-root"\nDLQ_CAPACITY="7"\n', new Map(Object.entries(values)));
  const bound = wranglerReads(dir, text);
  for (const [name, value] of Object.entries(values)) assert.equal(bound[name], value, name);
  assert.equal(bound.ROOT_SECRET, "from-root", "the root .dev.vars is kept");
  assert.equal(bound.DLQ_CAPACITY, "7", ".dev.vars beats [vars]");
  const overridden = wranglerReads(dir, dlqDevVarsText('DLQ_CAPACITY="7"\n', new Map([["DLQ_CAPACITY", "2"]])));
  assert.equal(overridden.DLQ_CAPACITY, "2", "a --var beats the root .dev.vars");
});

test("a value dotenv cannot quote, or a name it cannot hold, is refused with what to do", () => {
  assert.throws(() => dotenvQuote("X", `'"\``), /--var X: .*Put X in \.dev\.vars by hand/);
  assert.throws(() => dlqDevVarsText("", new Map([["BAD NAME", "1"]])), /rename the variable/);
});

test("npm start's preparation replaces the old symlink without touching .dev.vars, and is idempotent", (t) => {
  const root = tmp(t);
  mkdirSync(path.join(root, "dlq"));
  copyFileSync(path.join(ROOT, ".dev.vars.example"), path.join(root, ".dev.vars.example"));
  writeFileSync(path.join(root, ".dev.vars"), 'ADMIN_JWT_SECRET="mine"\n');
  symlinkSync("../.dev.vars", path.join(root, "dlq/.dev.vars"));
  const said = [];
  const args = ["--port", "0", "--var", "DLQ_CAPACITY:2", `--var=SOURCES:${SOURCES}`];
  prepareDevVars(args, { root, say: (m) => said.push(m) });
  const rootText = readFileSync(path.join(root, ".dev.vars"), "utf8");
  assert.match(rootText, /^ADMIN_JWT_SECRET="mine"\n/, "the developer's value is kept");
  assert.match(rootText, /WEBHOOK_SECRET_DEMO_HMAC=/, "missing secrets are added from the example");
  assert.doesNotMatch(rootText, /DLQ_CAPACITY/, "the --var values never reach the root file");
  assert.ok(!rootText.includes(SOURCES), "the --var SOURCES never reaches the root file (the demo's SOURCES, added from the example, is overridden in dlq/.dev.vars)");
  assert.ok(!lstatSync(path.join(root, "dlq/.dev.vars")).isSymbolicLink());
  const first = readFileSync(path.join(root, "dlq/.dev.vars"), "utf8");
  const bound = wranglerReads(tmp(t), first);
  assert.equal(bound.ADMIN_JWT_SECRET, "mine");
  assert.equal(bound.DLQ_CAPACITY, "2");
  assert.equal(bound.SOURCES, SOURCES);
  assert.ok(said.some((m) => m.includes("--var DLQ_CAPACITY, SOURCES")), said.join("\n"));
  assert.ok(said.every((m) => !m.includes("hmac-sha256")), "values are never printed");

  prepareDevVars(args, { root, say: () => {} });
  assert.equal(readFileSync(path.join(root, ".dev.vars"), "utf8"), rootText);
  assert.equal(readFileSync(path.join(root, "dlq/.dev.vars"), "utf8"), first);
  prepareDevVars([], { root, say: () => {} });
  assert.doesNotMatch(readFileSync(path.join(root, "dlq/.dev.vars"), "utf8"), /DLQ_CAPACITY/, "a start without --var drops the last start's overrides");
});

test("the tests' harness gives a setting both workers read to both, or refuses it, naming the key", () => {
  assert.deepEqual(SHARED_KEYS, ["EVENT_RETENTION", "DLQ_RETENTION", "D1_MAX_BYTES", "DLQ_CAPACITY"], "read from core::config::SHARED_KEYS");
  for (const key of SHARED_KEYS) {
    assert.throws(() => hookrelayWorkers({ dlqVars: { [key]: "1" } }), new RegExp(`dlqVars sets ${key}, which both workers read; pass it in vars`));
    assert.throws(() => hookrelayWorkers({ relayVars: { [key]: "1" } }), new RegExp(`relayVars sets ${key}`));
  }
  const [relay, dlq] = hookrelayWorkers({ vars: { EVENT_RETENTION: "2s" }, dlqVars: { DLQ_RETRY_DELAY_S: "0" } });
  assert.deepEqual([relay.bindings.EVENT_RETENTION, dlq.bindings.EVENT_RETENTION], ["2s", "2s"]);
});
