// `npm run smoke -- --url <relay>` against a real `npm start` (its own port
// and --persist-to): a signed test webhook, then its story read through the
// admin API until it is ingested; and its one-line verdicts when a key is wrong.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startFrontDoor } from "./support/front-door.mjs";
import { runOffline } from "./support/offline-env.mjs";
import { EXAMPLE_SECRETS } from "../scripts/dev-vars.mjs";

let door;
before(async () => {
  door = await startFrontDoor();
});
after(async () => {
  await door?.dispose();
});

const smoke = (args, opts) => runOffline("scripts/smoke.mjs", ["--url", door.url, ...args], { timeoutMs: 90_000, ...opts });

test("a signed webhook is accepted and its story shows it ingested (secrets from .dev.vars, a local relay)", async () => {
  const { code, stdout, stderr } = await smoke(["--source", "demo-hmac", "--timeout", "60"]);
  assert.equal(code, 0, stderr);
  assert.match(stdout.trim(), /^smoke: ok: demo-hmac accepted the webhook \(202\) as evt_[0-9a-f]{32}; ingested within \d+\.\d s/);
  // The story the verdict rests on is the admin API's.
  const id = /as (evt_[0-9a-f]{32})/.exec(stdout)[1];
  const { mintToken } = await import("../scripts/admin-jwt.mjs");
  const story = await door.fetch(`/api/v1/admin/events/${id}`, { headers: { authorization: `Bearer ${mintToken(EXAMPLE_SECRETS.ADMIN_JWT_SECRET)}` } }).then((r) => r.json());
  assert.equal(story.data.event.event_id, id);
  assert.equal(story.data.event.source, "demo-hmac");
  // It goes through the real routes: the header lets a route filter it out.
  assert.equal(story.data.event.headers["x-hookrelay-smoke"], "1");
});

test("the keys from stdin and the environment win over .dev.vars: the right ones pass, a wrong one is named", async () => {
  const stdin = `${EXAMPLE_SECRETS.WEBHOOK_SECRET_DEMO_STRIPE}\n`;
  const ok = await smoke(["--source", "demo-stripe", "--secret-stdin"], { input: stdin, env: { ADMIN_JWT_SECRET: EXAMPLE_SECRETS.ADMIN_JWT_SECRET } });
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^smoke: ok: demo-stripe accepted/);

  const badKey = await smoke(["--source", "demo-stripe", "--secret-stdin"], { input: "whsec_not_the_key\n" });
  assert.equal(badKey.code, 1);
  assert.deepEqual(badKey.stderr.trim().split("\n"), ["smoke: demo-stripe refused the signature (401 SIGNATURE_INVALID); the key given is not the relay's WEBHOOK_SECRET_DEMO_STRIPE"]);

  const badAdmin = await smoke(["--source", "demo-hmac"], { env: { ADMIN_JWT_SECRET: "not-the-admin-secret" } });
  assert.equal(badAdmin.code, 1);
  assert.deepEqual(badAdmin.stderr.trim().split("\n"), ["smoke: the admin API refused the token (401); ADMIN_JWT_SECRET is not the DLQ worker's"]);
});

test("a source the relay does not have, or several without --source, is refused naming the relay's sources", async () => {
  const none = await smoke(["--source", "billing"]);
  assert.equal(none.code, 2);
  assert.match(none.stderr.trim(), /^smoke: the relay at http:\/\/127\.0\.0\.1:\d+ has no source billing \(it has .*\); pick one with --source$/);
  const many = await smoke([]);
  assert.match(many.stderr.trim(), /^smoke: the relay has \d+ sources \(.*\); pick one with --source <name>$/);
});
