// `hookrelay listen` (DESIGN §8, issue 43) against the Miniflare relay and
// a local server: a pull destination's deliveries are forwarded with their
// body, content type, original headers (less redacted ones), delivery id
// and idempotency key, one line each; Ctrl-C stops it with exit 0 and
// deliveries that arrived meanwhile come first when it starts again; a
// local 500 is retried by the relay until delivered, once; while the local
// server refuses connections `listen` pulls nothing, so no attempt is spent.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startRelay, rows, waitFor } from "./support/harness.mjs";
import { hmacHeaders } from "./support/signers.mjs";
import { token } from "./support/admin.mjs";
import { baseEnv, start } from "./support/cli.mjs";
import { secretNameFor } from "../scripts/webhook-signatures.mjs";

const SECRET = "listen-source-secret";
let relay, env;
const servers = [];

before(async () => {
  relay = await startRelay({
    vars: {
      SOURCES: JSON.stringify({ laptop: { scheme: "hmac-sha256", routes: [{ to: "laptop-pull" }] } }),
      DESTINATIONS: JSON.stringify({ "laptop-pull": { pull: { lease_s: 10 } } }),
      [secretNameFor("laptop")]: SECRET,
      RETRY_DELAYS_S: "1,1,1,1,1",
    },
  });
  env = baseEnv({ HOOKRELAY_URL: String(relay.url).replace(/\/$/, ""), HOOKRELAY_TOKEN: token() });
});
after(async () => {
  for (const s of servers) await new Promise((r) => { s.closeAllConnections(); s.close(r); });
  await relay?.dispose();
});

/** A local server on a free port: what it received, and `answer(req, n)` for its status. */
async function localServer(answer = () => 200, port = 0) {
  const got = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      got.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(answer(req, got.length));
      res.end("ok");
    });
  });
  servers.push(server);
  await new Promise((r) => server.listen(port, "127.0.0.1", r));
  return { server, got, port: server.address().port };
}

async function send(payload, operationId) {
  const body = JSON.stringify(payload);
  const headers = { ...hmacHeaders(body, { secret: SECRET, operationId }), "x-custom": "kept" };
  const res = await relay.fetch("/webhooks/laptop", { method: "POST", body, headers });
  assert.equal(res.status, 202, await res.clone().text());
  return { ...(await res.json()), body };
}
const state = async (eventId) => (await rows(relay.db, "SELECT state, attempts FROM deliveries WHERE event_id = ?", eventId))[0];

test("listen forwards each delivery once with its body and headers, stops on Ctrl-C, and takes up what arrived meanwhile first", async () => {
  const local = await localServer();
  const first = await send({ n: 1 }, "listen-1");
  const l = start(["listen", String(local.port), "--destination", "laptop-pull", "--path", "/hooks"], { env });
  await waitFor(() => local.got.length === 1, { what: "the first delivery at the local server" });
  const [got] = local.got;
  assert.equal(got.path, "/hooks");
  assert.equal(got.body, first.body, "byte-exact");
  assert.equal(got.headers["content-type"], "application/json");
  assert.equal(got.headers["x-custom"], "kept");
  assert.equal(got.headers["x-idempotency-key"], "laptop:listen-1");
  assert.ok(got.headers["x-hookrelay-delivery-id"]);
  assert.equal(got.headers["x-signature"], undefined, "the provider's signature is redacted, never forwarded");
  await waitFor(async () => (await state(first.event_id))?.state === "delivered", { what: "the first delivery acked" });
  await waitFor(() => /\b200\b.*ms/.test(l.out.stdout), { what: "a line for the delivery" });
  l.child.kill("SIGINT");
  assert.equal(await l.exited, 0, l.out.stderr);

  // While it is stopped, two more arrive; started again, it takes them first.
  const waiting = [await send({ n: 2 }, "listen-2"), await send({ n: 3 }, "listen-3")];
  const again = start(["listen", String(local.port), "--destination", "laptop-pull", "--path", "/hooks"], { env });
  await waitFor(async () => (await Promise.all(waiting.map((w) => state(w.event_id)))).every((s) => s.state === "delivered"), { what: "the waiting deliveries" });
  again.child.kill("SIGTERM");
  assert.equal(await again.exited, 0, again.out.stderr);
  assert.equal(local.got.length, 3, "each once");
});

test("a local 500 is retried on the relay's schedule until delivered, once", async () => {
  const local = await localServer((_req, n) => (n <= 2 ? 500 : 200));
  const ev = await send({ n: 4 }, "listen-4");
  const l = start(["listen", String(local.port), "--destination", "laptop-pull"], { env });
  await waitFor(async () => (await state(ev.event_id))?.state === "delivered", { timeoutMs: 30_000, what: "delivered after two 500s" });
  l.child.kill("SIGINT");
  assert.equal(await l.exited, 0, l.out.stderr);
  assert.equal(local.got.length, 3);
  assert.equal((await state(ev.event_id)).attempts, 3, "three attempts counted on the row");
  assert.match(l.out.stdout, /\b500\b/);
});

test("while the local server refuses connections, listen pulls nothing and spends no attempt", async () => {
  // A port nobody listens on: take one, then close it.
  const probe = await localServer();
  const port = probe.port;
  await new Promise((r) => probe.server.close(r));
  const ev = await send({ n: 5 }, "listen-5");
  const l = start(["listen", String(port), "--destination", "laptop-pull"], { env });
  await waitFor(() => l.out.stderr.includes("refuses connections"), { what: "listen saying it waits" });
  // Three of listen's probes (one a second, commands/listen.rs): had it
  // pulled, the delivery would be leased or its attempt spent by now.
  await new Promise((r) => setTimeout(r, 3_000));
  assert.deepEqual(await state(ev.event_id), { state: "pending", attempts: 0 });
  // The server comes up on that port: the delivery goes through.
  const local = await localServer(() => 200, port);
  await waitFor(async () => (await state(ev.event_id))?.state === "delivered", { timeoutMs: 20_000, what: "delivered once the server is up" });
  l.child.kill("SIGINT");
  assert.equal(await l.exited, 0, l.out.stderr);
  assert.equal(local.got.length, 1);
});
