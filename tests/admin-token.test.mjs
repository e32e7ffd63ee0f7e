// `npm run admin-token` mints a production token from a secret given on
// standard input or in ADMIN_JWT_SECRET (never only from .dev.vars), with
// the operator's name as `sub`, which the audit then records as the actor,
// and a bounded lifetime.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { SECRETS, startRelay } from "./support/harness.mjs";
import { insertPendingEntry } from "./support/dead-letters.mjs";
import { runOffline } from "./support/offline-env.mjs";
import { parseTtl, tokenArgs } from "../scripts/admin-token.mjs";

// A production-like secret: not the one in .dev.vars, so a token minted from .dev.vars would be refused.
const PROD_SECRET = "prod-admin-secret-from-a-vault-0123456789";
// The pull destination `orders` has its own token secret; `shipping` does not.
const ORDERS_SECRET = "orders-pull-secret-from-a-vault-98765";
let relay;
before(async () => {
  relay = await startRelay({ dlqVars: { ADMIN_JWT_SECRET: PROD_SECRET, PULL_TOKEN_SECRET_ORDERS: ORDERS_SECRET } });
});
after(async () => {
  await relay?.dispose();
});

const claims = (token) => JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());
const mint = async (args, opts) => {
  const { code, stdout, stderr } = await runOffline("scripts/admin-token.mjs", args, opts);
  assert.equal(code, 0, stderr);
  return stdout.trim();
};

async function archiveWith(token, id) {
  const res = await relay.fetch(`/api/v1/admin/webhook-dlq/${id}/archive`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ reason: "checked by hand" }),
  });
  return { status: res.status, body: await res.json() };
}

test("a token minted from ADMIN_JWT_SECRET in the environment works, and the audit shows its --sub", async () => {
  await insertPendingEntry(relay.db, "dlq_00000000000000000000e0e1");
  const token = await mint(["--sub", "alice.ops", "--ttl", "12h"], { env: { ADMIN_JWT_SECRET: PROD_SECRET } });
  const c = claims(token);
  assert.equal(c.sub, "alice.ops");
  assert.equal(c.exp - c.iat, 12 * 3600);
  assert.equal((await archiveWith(token, "dlq_00000000000000000000e0e1")).status, 200);
  const audit = await relay.fetch("/api/v1/admin/audit?entry_id=dlq_00000000000000000000e0e1", { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
  assert.equal(audit.status, "success", JSON.stringify(audit));
  assert.deepEqual(audit.data.items.map((a) => [a.action, a.actor]), [["archive", "alice.ops"]]);
});

test("a token minted from standard input works the same way", async () => {
  await insertPendingEntry(relay.db, "dlq_00000000000000000000e0e2");
  const token = await mint(["--stdin", "--sub", "bob", "--ttl", "30m"], { input: `${PROD_SECRET}\n` });
  assert.equal(claims(token).exp - claims(token).iat, 1800);
  assert.equal((await archiveWith(token, "dlq_00000000000000000000e0e2")).status, 200);
  const [row] = await relay.db.prepare("SELECT actor FROM replay_audit WHERE entry_id = 'dlq_00000000000000000000e0e2'").all().then((r) => r.results);
  assert.equal(row.actor, "bob");
});

test("a secret piped on standard input without --stdin is used, never the .dev.vars development secret", async () => {
  await insertPendingEntry(relay.db, "dlq_00000000000000000000e0e3");
  const token = await mint(["--sub", "ops"], { input: PROD_SECRET });
  assert.equal(claims(token).sub, "ops");
  assert.equal((await archiveWith(token, "dlq_00000000000000000000e0e3")).status, 200, "minted from the piped production secret");
  // Piped with no --sub: a production secret needs the operator's name.
  const { code, stderr } = await runOffline("scripts/admin-token.mjs", [], { input: PROD_SECRET });
  assert.equal(code, 2);
  assert.match(stderr, /--sub <your name> is required/);
});

test("the .dev.vars fallback mints a development token, which this production-keyed worker refuses", async () => {
  assert.notEqual(SECRETS.ADMIN_JWT_SECRET, PROD_SECRET);
  const local = await mint(["--sub", "carol"]);
  assert.equal((await archiveWith(local, "dlq_00000000000000000000e0e1")).status, 401);
});

test("--ttl takes s, m, h, d or seconds, between 1 minute and 24 hours", () => {
  assert.deepEqual(["90s", "30m", "12h", "1d", "3600"].map(parseTtl), [90, 1800, 43200, 86400, 3600]);
  for (const bad of ["59s", "25h", "2d", "1w", "-5", "h"]) assert.throws(() => parseTtl(bad), /--ttl/);
});

const whoami = async (token) => {
  const res = await relay.fetch("/api/v1/admin/whoami", { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
};

test("--role pull --destination mints a pull token signed with that destination's PULL_TOKEN_SECRET: whoami names it, every admin route forbids it", async () => {
  const token = await mint(["--role", "pull", "--destination", "orders", "--sub", "billing-consumer", "--ttl", "90d"], { env: { PULL_TOKEN_SECRET_ORDERS: ORDERS_SECRET, ADMIN_JWT_SECRET: PROD_SECRET } });
  const c = claims(token);
  assert.deepEqual([c.role, c.destination, c.sub, c.exp - c.iat], ["pull", "orders", "billing-consumer", 90 * 86400]);
  const who = await whoami(token);
  assert.equal(who.status, 200, JSON.stringify(who.body));
  assert.deepEqual([who.body.data.role, who.body.data.destination, who.body.data.sub], ["pull", "orders", "billing-consumer"]);
  await insertPendingEntry(relay.db, "dlq_00000000000000000000e0e4");
  const refused = await archiveWith(token, "dlq_00000000000000000000e0e4");
  assert.equal(refused.status, 403, "a genuine pull token of its own secret is forbidden on admin routes, not a bad signature");
  assert.equal(refused.body.error.code, "FORBIDDEN");
});

test("a destination's PULL_TOKEN_SECRET revokes its pull tokens signed with ADMIN_JWT_SECRET; one without its own secret takes ADMIN_JWT_SECRET's", async () => {
  // Minted before `orders` had its own secret: refused now.
  const old = await mint(["--role", "pull", "--destination", "orders", "--sub", "old"], { env: { ADMIN_JWT_SECRET: PROD_SECRET } });
  assert.equal((await whoami(old)).status, 401);
  const shipping = await mint(["--role", "pull", "--destination", "shipping", "--sub", "ship"], { env: { ADMIN_JWT_SECRET: PROD_SECRET } });
  assert.equal(claims(shipping).exp - claims(shipping).iat, 90 * 86400, "a pull token's default lifetime");
  const who = await whoami(shipping);
  assert.equal(who.status, 200, JSON.stringify(who.body));
  assert.equal(who.body.data.destination, "shipping");
});

test("--role and --destination are checked before anything is minted", async () => {
  assert.equal(tokenArgs(["--role", "pull", "--destination", "orders", "--ttl", "365d"]).ttlS, 365 * 86400);
  for (const [args, says] of [
    [["--role", "pull"], /needs --destination/],
    [["--destination", "orders"], /goes with --role pull/],
    [["--role", "owner"], /admin or pull/],
    [["--role", "pull", "--destination", "Orders!"], /destination name/],
    [["--role", "pull", "--destination", "orders", "--ttl", "366d"], /between 1m and 365d/],
    [["--ttl", "2d"], /between 1m and 24h/],
  ]) {
    const { code, stderr } = await runOffline("scripts/admin-token.mjs", args, { env: { ADMIN_JWT_SECRET: PROD_SECRET } });
    assert.equal(code, 2, args.join(" "));
    assert.match(stderr, says);
  }
});
