// The `hookrelay` binary against the Miniflare relay and DLQ worker (DESIGN
// §8): each command's happy path and its refusals, where the token comes
// from and where it may go, `login`'s owner-only file, `replay --watch`
// following a canaried job to its end, `jobs` steering, `tail` naming new
// events and stopping cleanly, and no token ever printed but by `token`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHmac, generateKeyPairSync } from "node:crypto";
import { statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startJobsRelay, waitFor } from "./support/jobs.mjs";
import { token } from "./support/admin.mjs";
import { SECRETS } from "./support/harness.mjs";
import { RUNS, baseEnv, hookrelay, projectDir, start, tempDir } from "./support/cli.mjs";

const NAMES = ["cli-ok", "cli-flaky", "cli-bad", "cli-slow"];
const TOKEN = token();
let flakyUp = false;
let j, url, env;

before(async () => {
  j = await startJobsRelay(NAMES, {
    "cli-flaky": () => ({ status: flakyUp ? 200 : 400 }),
    "cli-bad": () => ({ status: 400 }),
  });
  url = String(j.relay.url).replace(/\/$/, "");
  const sources = Object.fromEntries(NAMES.map((n) => [n, { scheme: "hmac-sha256" }]));
  const { publicKey } = generateKeyPairSync("ed25519");
  sources["cli-discord"] = { scheme: "discord", public_key: Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("hex") };
  const secrets = Object.fromEntries(NAMES.map((n) => [`WEBHOOK_SECRET_${n.toUpperCase().replaceAll("-", "_")}`, `${n}-webhook-secret`]));
  env = (extra = {}) => baseEnv({ HOOKRELAY_URL: url, HOOKRELAY_TOKEN: TOKEN, SOURCES: JSON.stringify(sources), ...secrets, ...extra });
});
after(() => j?.dispose());

const json = (run) => {
  assert.equal(run.code, 0, `${run.args.join(" ")}: ${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout);
};
const ok = (run) => {
  assert.equal(run.code, 0, `${run.args.join(" ")}: ${run.stderr}${run.stdout}`);
  return run.stdout;
};
/** A failure: its exit code, and an error that says what to do next. */
const refused = (run, code, ...mentions) => {
  assert.equal(run.code, code, `${run.args.join(" ")}: ${run.stdout}${run.stderr}`);
  assert.match(run.stderr, /^error: /m, run.stderr);
  assert.match(run.stderr, /^ {2}next: /m, run.stderr);
  for (const m of mentions) assert.ok(run.stderr.includes(m), `${run.args.join(" ")}: ${run.stderr} lacks ${m}`);
};

test("every command has --help, completion scripts print, and a usage error exits 2 saying what to do", async () => {
  const commands = [[], ["login"], ["status"], ["dlq"], ["dlq", "list"], ["dlq", "show"], ["dlq", "groups"], ["dlq", "replay"], ["dlq", "archive"],
    ["dlq", "unarchive"], ["dlq", "discard"], ["dlq", "restore"], ["replay"], ["jobs"], ["jobs", "list"], ["jobs", "show"], ["jobs", "watch"],
    ["jobs", "approve"], ["jobs", "pause"], ["jobs", "resume"], ["jobs", "cancel"], ["events"], ["events", "list"], ["events", "show"],
    ["tail"], ["listen"], ["verify"], ["config"], ["config", "check"], ["send"], ["token"], ["completion"]];
  for (const c of commands) {
    const run = await hookrelay([...c, "--help"], { env: env() });
    assert.equal(run.code, 0, c.join(" "));
    assert.match(run.stdout, /Usage: hookrelay/, c.join(" "));
  }
  for (const shell of ["bash", "zsh", "fish"]) assert.match(ok(await hookrelay(["completion", shell], { env: env() })), /hookrelay/);
  for (const args of [["frobnicate"], ["--token", "x", "status"], ["token", "--sub", "a", "--role", "pull"], ["replay", "--reason", "fixed it", "--dry-run", "--watch"]]) {
    const run = await hookrelay(args, { env: env() });
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
  }
  refused(await hookrelay(["dlq", "list", "--since", "yesterday"], { env: env() }), 2, "--since", "RFC 3339");
  refused(await hookrelay(["dlq", "list", "--status", "bogus"], { env: env() }), 2, "status");
  refused(await hookrelay(["tail", "--interval", "0"], { env: env() }), 2, "--interval");
});

test("status shows the figures, and --json the stats' data unchanged", async () => {
  const text = ok(await hookrelay(["status"], { env: env() }));
  for (const line of ["depth", "oldest", "ingress", "dominant code", "parked", "destinations", "alarms firing"]) assert.match(text, new RegExp(line), text);
  const data = json(await hookrelay(["status", "--json"], { env: env() }));
  const api = await j.admin.get("webhook-dlq/stats");
  assert.deepEqual(Object.keys(data).sort(), Object.keys(api.data).sort());
});

test("the token comes from --token-file, HOOKRELAY_TOKEN or the profile, never travels over plain http to another host, and a loopback relay gets a development token", async () => {
  refused(await hookrelay(["status", "--url", "https://relay.invalid"], { env: env({ HOOKRELAY_TOKEN: "" }) }), 2, "no token for https://relay.invalid", "hookrelay login");
  refused(await hookrelay(["status", "--url", "http://relay.example.com"], { env: env() }), 2, "plain http://", "https://");
  // A flag wins over the environment: a good token file beats a bad HOOKRELAY_TOKEN.
  const file = path.join(tempDir("token"), "token");
  writeFileSync(file, `${TOKEN}\n`);
  ok(await hookrelay(["status", "--token-file", file], { env: env({ HOOKRELAY_TOKEN: "not.a.token" }) }));
  refused(await hookrelay(["status"], { env: env({ HOOKRELAY_TOKEN: "not.a.token" }) }), 1, "401", "hookrelay login");
  // No token anywhere, a loopback relay: minted from the project's .dev.vars.
  const project = projectDir({ ADMIN_JWT_SECRET: SECRETS.ADMIN_JWT_SECRET });
  ok(await hookrelay(["status"], { env: env({ HOOKRELAY_TOKEN: "" }), cwd: project }));
  const wrong = projectDir({ ADMIN_JWT_SECRET: "another-secret" });
  refused(await hookrelay(["status"], { env: env({ HOOKRELAY_TOKEN: "" }), cwd: wrong }), 1, "401");
});

test("login checks the token with whoami and keeps it in a file its owner alone may read; a refused token is not kept", async () => {
  const config = tempDir("login");
  const e = (extra = {}) => env({ HOOKRELAY_CONFIG: config, HOOKRELAY_TOKEN: "", HOOKRELAY_URL: "", ...extra });
  const out = ok(await hookrelay(["login", "--url", url, "--profile", "local"], { env: e(), input: `${TOKEN}\n` }));
  assert.match(out, /logged in to .* as test-admin \(role admin, expires in/);
  const file = path.join(config, "config.toml");
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(statSync(config).mode & 0o777, 0o700);
  ok(await hookrelay(["--profile", "local", "status"], { env: e() }));
  refused(await hookrelay(["--profile", "staging", "status"], { env: e() }), 2, "no profile named \"staging\"", "hookrelay login");
  refused(await hookrelay(["login", "--url", url, "--profile", "bad"], { env: e(), input: "not.a.token\n" }), 1, "401");
  refused(await hookrelay(["--profile", "bad", "status"], { env: e() }), 2, "no profile named \"bad\"");
  refused(await hookrelay(["login", "--url", "http://relay.example.com"], { env: e(), input: `${TOKEN}\n` }), 2, "plain http://");
  const minted = ok(await hookrelay(["login", "--url", url, "--mint", "--sub", "ann", "--ttl", "30m", "--profile", "minted"], { env: e(), input: SECRETS.ADMIN_JWT_SECRET }));
  assert.match(minted, /as ann \(role admin, expires in 29m/);
  const who = json(await hookrelay(["login", "--url", url, "--json", "--profile", "again"], { env: e(), input: `${TOKEN}\n` }));
  assert.equal(who.sub, "test-admin");
});

test("send signs as the provider would, dlq list, show and groups read what failed, and each decision answers", async () => {
  const sent = JSON.parse(ok(await hookrelay(["send", "cli-bad", "--json"], { env: env() })));
  assert.equal(sent.status, "queued");
  assert.match(ok(await hookrelay(["send", "cli-ok", "--body", '{"n":1}'], { env: env() })), /^202 \{"event_id":"evt_/);
  refused(await hookrelay(["send", "cli-discord"], { env: env() }), 2, "public-key");
  refused(await hookrelay(["send", "nope"], { env: env() }), 1, "SOURCES", "no source named 'nope'");
  const [a, b] = await j.makeEntries([{ source: "cli-flaky" }, { source: "cli-flaky" }]);
  const page = json(await hookrelay(["dlq", "list", "--source", "cli-flaky", "--since", "5m", "--limit", "1", "--json"], { env: env() }));
  assert.equal(page.items.length, 1);
  assert.equal(typeof page.next_cursor, "string");
  const all = json(await hookrelay(["dlq", "list", "--source", "cli-flaky", "--all", "--json"], { env: env() }));
  assert.ok(Array.isArray(all) && all.length === 2, JSON.stringify(all));
  assert.equal(json(await hookrelay(["dlq", "list", "--source", "cli-flaky", "--until", "1h", "--json"], { env: env() })).items.length, 0);
  const listed = ok(await hookrelay(["dlq", "list", "--source", "cli-flaky"], { env: env() }));
  assert.match(listed, new RegExp(`${a.id}.*ago \\(20\\d\\d-`));
  assert.match(ok(await hookrelay(["dlq", "show", a.id], { env: env() })), /actions +replay, archive, discard/);
  const groups = json(await hookrelay(["dlq", "groups", "--since", "1h", "--json"], { env: env() }));
  assert.ok(groups.items.some((g) => g.sources.includes("cli-flaky")));
  assert.match(ok(await hookrelay(["dlq", "archive", a.id, "--reason", "keep as history"], { env: env() })), /pending -> archived/);
  assert.match(ok(await hookrelay(["dlq", "unarchive", a.id, "--reason", "needed again"], { env: env() })), /archived -> pending/);
  assert.match(ok(await hookrelay(["dlq", "discard", b.id, "--reason", "a known bad sender"], { env: env() })), /pending -> discarded/);
  refused(await hookrelay(["dlq", "archive", b.id, "--reason", "too late now"], { env: env() }), 1, "409");
  refused(await hookrelay(["dlq", "restore", b.id, "--reason", "bring it back"], { env: env() }), 1);
  refused(await hookrelay(["dlq", "replay", a.id, "--reason", "still failing"], { env: env() }), 1, "the replay of", "fix the destination");
  refused(await hookrelay(["dlq", "show", "dlq_nope"], { env: env() }), 1, "404");
  refused(await hookrelay(["dlq", "show", "../x"], { env: env() }), 2);
  refused(await hookrelay(["dlq", "archive", a.id, "--reason", "no"], { env: env() }), 2, "reason");
});

test("events list says whether it arrived, and events show tells its story as a timeline", async () => {
  const sent = JSON.parse(ok(await hookrelay(["send", "cli-ok", "--json"], { env: env() })));
  await waitFor(async () => (await j.admin.get(`events/${sent.event_id}`)).data?.deliveries?.[0]?.state === "delivered", { what: "delivered" });
  const listed = json(await hookrelay(["events", "list", "--source", "cli-ok", "--since", "10m", "--json"], { env: env() }));
  const item = listed.items.find((e) => e.event_id === sent.event_id);
  assert.equal(item.delivery_status, "delivered");
  for (const id of [sent.event_id, item.idempotency_key]) {
    const story = ok(await hookrelay(["events", "show", id], { env: env() }));
    assert.match(story, /received from cli-ok/);
    assert.match(story, /ingested as evt_/);
    assert.match(story, /delivered to cli-ok after 1 attempts/);
  }
  refused(await hookrelay(["events", "show", "cli-ok:no-such-delivery"], { env: env() }), 1, "no event with idempotency key");
});

test("replay --watch follows a canaried job to its end, and exits 1 when a job aborts", async () => {
  flakyUp = false;
  await j.makeEntries([{ source: "cli-flaky" }, { source: "cli-flaky" }, { source: "cli-flaky" }]);
  const dry = ok(await hookrelay(["replay", "--reason", "destination fixed", "--source", "cli-flaky", "--dry-run"], { env: env() }));
  assert.match(dry, /would replay \d+ entries \(dry run: nothing changed\)/);
  flakyUp = true;
  const run = await hookrelay(["replay", "--reason", "destination fixed", "--source", "cli-flaky", "--canary", "1", "--rate", "20", "--approve", "auto", "--watch"], { env: env(), timeoutMs: 90_000 });
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /job_\w+ created: \d+ entries matched/);
  assert.match(run.stdout, /canary passed/);
  assert.match(run.stdout, /completed: (\d+)\/\1 done/);
  await j.makeEntries([{ source: "cli-bad" }, { source: "cli-bad" }]);
  const aborted = await hookrelay(["replay", "--reason", "will it work now", "--source", "cli-bad", "--canary", "1", "--approve", "auto", "--watch"], { env: env(), timeoutMs: 90_000 });
  refused(aborted, 1, "aborted", "canary");
  assert.match(aborted.stdout, /aborted: .*canary failed/);
});

test("jobs list, show, watch, approve, pause, resume and cancel steer a job", async () => {
  flakyUp = true;
  await j.makeEntries([{ source: "cli-flaky" }, { source: "cli-flaky" }, { source: "cli-flaky" }, { source: "cli-flaky" }]);
  const created = json(await hookrelay(["replay", "--reason", "slowly, by hand", "--source", "cli-flaky", "--canary", "1", "--rate", "0.1", "--json"], { env: env() }));
  const id = created.id;
  const status = async () => json(await hookrelay(["jobs", "show", id, "--json"], { env: env() })).status;
  await waitFor(async () => (await status()) === "awaiting_approval", { timeoutMs: 30_000, intervalMs: 200, what: "awaiting approval" });
  assert.match(ok(await hookrelay(["jobs", "approve", id], { env: env() })), /approve -> running/);
  assert.match(ok(await hookrelay(["jobs", "pause", id], { env: env() })), /pause -> paused/);
  refused(await hookrelay(["jobs", "pause", id], { env: env() }), 1, "409");
  assert.match(ok(await hookrelay(["jobs", "resume", id], { env: env() })), /resume -> running/);
  assert.match(ok(await hookrelay(["jobs", "cancel", id], { env: env() })), /cancel -> cancelled/);
  assert.match(ok(await hookrelay(["jobs", "list"], { env: env() })), new RegExp(`${id} +replay +cancelled`));
  assert.match(ok(await hookrelay(["jobs", "show", id], { env: env() })), /actions +-/);
  refused(await hookrelay(["jobs", "watch", id], { env: env() }), 1, "ended cancelled");
  const all = json(await hookrelay(["jobs", "list", "--all", "--json"], { env: env() }));
  assert.ok(all.some((x) => x.id === id));
});

test("tail names new events as they happen and stops cleanly on SIGTERM and Ctrl-C", async () => {
  for (const [signal, args] of [["SIGTERM", ["tail", "--json", "--interval", "0.2"]], ["SIGINT", ["tail", "--source", "cli-ok", "--interval", "0.2"]]]) {
    const t = start(args, { env: env() });
    await waitFor(() => t.out.stderr.includes("following"), { what: "tail started" });
    const sent = [];
    for (let n = 0; n < 2; n++) sent.push(JSON.parse(ok(await hookrelay(["send", "cli-ok", "--json"], { env: env() }))).event_id);
    await waitFor(() => sent.every((id) => t.out.stdout.includes(id)), { timeoutMs: 30_000, intervalMs: 100, what: `tail naming ${sent}` });
    if (args.includes("--json")) {
      const lines = t.out.stdout.trim().split("\n").map((l) => JSON.parse(l));
      assert.ok(lines.some((l) => l.kind === "event" && l.event_id === sent[0] && l.source === "cli-ok"));
    } else {
      assert.match(t.out.stdout, new RegExp(`${sent[0]} +cli-ok:\\S+ +accepted`));
    }
    t.child.kill(signal);
    assert.equal(await t.exited, 0, `${signal}: ${t.out.stderr}`);
  }
});

test("token prints the token alone on its line, and no other command ever printed one", async () => {
  const out = ok(await hookrelay(["token", "--sub", "ann", "--ttl", "2h"], { env: env(), input: "s3cret-from-stdin\n" }));
  const lines = out.split("\n").filter(Boolean);
  assert.equal(lines.length, 1);
  const [h, p, s] = lines[0].split(".");
  assert.equal(createHmac("sha256", "s3cret-from-stdin").update(`${h}.${p}`).digest("base64url"), s);
  const claims = JSON.parse(Buffer.from(p, "base64url").toString());
  assert.deepEqual([claims.sub, claims.role, claims.exp - claims.iat], ["ann", "admin", 7200]);
  const pull = JSON.parse(Buffer.from(ok(await hookrelay(["token", "--sub", "laptop", "--role", "pull", "--destination", "demo-pull", "--ttl", "90d"], { env: env(), input: "x" })).split(".")[1], "base64url"));
  assert.deepEqual([pull.role, pull.destination], ["pull", "demo-pull"]);
  refused(await hookrelay(["token", "--sub", "ann", "--ttl", "48h"], { env: env(), input: "x" }), 2, "--ttl");
  refused(await hookrelay(["token", "--sub", "ann"], { env: env(), input: "" }), 2, "standard input");
  const secrets = [TOKEN, SECRETS.ADMIN_JWT_SECRET];
  for (const run of RUNS.filter((r) => r.args[0] !== "token")) {
    for (const s of secrets) {
      assert.ok(!run.stdout.includes(s) && !run.stderr.includes(s), `hookrelay ${run.args.join(" ")} printed a secret`);
    }
    // Nor any JWT at all (three base64url segments, the first a JOSE header).
    assert.doesNotMatch(run.stdout + run.stderr, /eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/, `hookrelay ${run.args.join(" ")} printed a token`);
  }
  assert.ok(RUNS.length > 60, `${RUNS.length} runs checked`);
});
