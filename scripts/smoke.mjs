#!/usr/bin/env node
// `npm run smoke -- --url <relay> [--source <name>]`: checks a deployment
// end to end. It sends one signed test webhook to a source, then reads that
// event's story through the admin API (/api/v1/admin/events/:id), polling
// with a deadline until it is ingested, and prints a one-line verdict. The
// event is a real one: it goes through the source's routes to their
// destinations, carrying `X-Hookrelay-Smoke: 1` so a route can filter it out.
//
// Secrets, never printed: the source's key from the environment variable
// named by --secret-env (default WEBHOOK_SECRET_<SOURCE>) or the first line
// of stdin (--secret-stdin); ADMIN_JWT_SECRET from the environment or the
// next line of stdin (--admin-secret-stdin). Against a local relay
// (127.0.0.1, localhost) both fall back to .dev.vars.
//
//   WEBHOOK_SECRET_BILLING=… ADMIN_JWT_SECRET=… npm run smoke -- --url https://hookrelay.example.workers.dev --source billing
//   npm run smoke -- --url http://127.0.0.1:8790 --source demo-hmac
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mintToken } from "./admin-jwt.mjs";
import { localDevVars } from "./dev-vars.mjs";
import { fail, fetchFailure, run } from "./lib/fail.mjs";
import { jsonVar } from "./lib/provision-plan.mjs";
import { DEMO_SCHEMES } from "./sign-webhook.mjs";
import { SIGNABLE_SCHEMES, headersFor, secretNameFor } from "./webhook-signatures.mjs";

/** Set on the smoke event, so a route can leave it out: `"filter": {"headers": {"x-hookrelay-smoke": {"$exist": false}}}`. */
export const SMOKE_HEADER = "x-hookrelay-smoke";

const USAGE = "usage: npm run smoke -- --url <relay URL> [--source <name>] [--scheme <scheme>] [--secret-env <VAR>] [--secret-stdin] [--admin-secret-stdin] [--env <name>] [--timeout <seconds>]";

/** The options; anything unknown is refused. */
export function smokeArgs(argv) {
  const out = { url: undefined, source: undefined, scheme: undefined, secretEnv: undefined, secretStdin: false, adminSecretStdin: false, env: undefined, timeoutS: 60 };
  const names = { "--url": "url", "--source": "source", "--scheme": "scheme", "--secret-env": "secretEnv", "--env": "env", "--timeout": "timeoutS" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--secret-stdin") out.secretStdin = true;
    else if (a === "--admin-secret-stdin") out.adminSecretStdin = true;
    else if (names[a]) out[names[a]] = argv[++i] ?? fail(`${a} needs a value; ${USAGE}`, 2);
    else fail(`unknown argument ${JSON.stringify(a)}; ${USAGE}`, 2);
  }
  if (!out.url) fail(`--url is required (the relay's URL); ${USAGE}`, 2);
  try {
    out.url = new URL(out.url).origin;
  } catch {
    fail(`--url ${JSON.stringify(out.url)} is not a URL; give the relay's, e.g. https://hookrelay.<you>.workers.dev`, 2);
  }
  out.timeoutS = Number(out.timeoutS);
  if (!(out.timeoutS > 0)) fail("--timeout is a number of seconds above 0", 2);
  return out;
}

const isLocal = (url) => ["127.0.0.1", "localhost", "[::1]"].includes(new URL(url).hostname);

/** GET or POST `path` on the relay; a network failure is one line naming the URL. */
async function call(base, path, init = {}) {
  try {
    const res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, text, json };
  } catch (e) {
    throw fetchFailure(e, base, "check --url (the relay's URL, where /healthz answers)");
  }
}

/** The source's scheme: --scheme, else its entry in wrangler.toml's SOURCES, else the demo's. */
async function schemeOf(source, { scheme, env }) {
  if (scheme) return scheme;
  const { readWorkerConfigs } = await import("./lib/worker-configs.mjs");
  const { ROOT } = await import("./lib/wrangler.mjs");
  const { relay } = readWorkerConfigs(ROOT, env);
  const spec = jsonVar(relay.vars, "SOURCES", relay.file)[source];
  return spec?.scheme ?? DEMO_SCHEMES[source];
}

async function main() {
  const opts = smokeArgs(process.argv.slice(2));
  const stdinLines = opts.secretStdin || opts.adminSecretStdin ? readFileSync(0, "utf8").split(/\r?\n/) : [];
  const local = isLocal(opts.url) ? localDevVars().vars : {};

  const health = await call(opts.url, "/healthz");
  if (health.status !== 200 || !Array.isArray(health.json?.sources)) fail(`GET ${opts.url}/healthz answered ${health.status} ${health.text.slice(0, 200)}; is --url the relay (not the DLQ worker), and is its configuration valid?`);
  const sources = health.json.sources;
  const source = opts.source ?? (sources.length === 1 ? sources[0] : fail(`the relay has ${sources.length} sources (${sources.join(", ")}); pick one with --source <name>`, 2));
  if (!sources.includes(source)) fail(`the relay at ${opts.url} has no source ${source} (it has ${sources.join(", ") || "none"}); pick one with --source`, 2);

  const scheme = await schemeOf(source, opts);
  const secretVar = opts.secretEnv ?? secretNameFor(source);
  const secret = process.env[secretVar] || (opts.secretStdin ? stdinLines.shift() : undefined) || local[secretNameFor(source)];
  if (!secret) fail(`no key for ${source}: set the environment variable ${secretVar} (or name another with --secret-env), or pipe it in with --secret-stdin`, 2);
  const adminSecret = process.env.ADMIN_JWT_SECRET || (opts.adminSecretStdin ? stdinLines.shift() : undefined) || local.ADMIN_JWT_SECRET;
  if (!adminSecret) fail("no ADMIN_JWT_SECRET: set the environment variable, or pipe it in with --admin-secret-stdin", 2);

  const body = JSON.stringify({ id: `smoke_${randomUUID()}`, type: "hookrelay.smoke", at: new Date().toISOString() });
  const signed = scheme && headersFor(scheme, body, { secret });
  // The smoke event goes through the source's routes like any event, to the
  // real destinations: this header lets a route filter it out (README).
  const headers = signed && { ...signed, [SMOKE_HEADER]: "1" };
  if (!headers) fail(`the smoke test cannot sign ${source}'s scheme (${scheme ?? "a recipe"}); pass --source for one of scheme ${SIGNABLE_SCHEMES.join(", ")}, or --scheme`, 2);
  const sent = await call(opts.url, `/webhooks/${source}`, { method: "POST", headers, body });
  if (sent.status === 401) fail(`${source} refused the signature (401 ${sent.json?.error?.code ?? ""}); the key given is not the relay's ${secretNameFor(source)}`);
  if (sent.status < 200 || sent.status > 299) fail(`POST /webhooks/${source} answered ${sent.status} ${sent.text.slice(0, 200)}`);
  const eventId = sent.json?.event_id;
  if (!eventId) fail(`${source} answered ${sent.status} without an event_id (a Slack source answers empty); pick another source with --source`, 2);

  const started = Date.now();
  const token = mintToken(adminSecret, { sub: "smoke", ttlS: Math.ceil(opts.timeoutS) + 300 });
  for (;;) {
    const story = await call(opts.url, `/api/v1/admin/events/${encodeURIComponent(eventId)}`, { headers: { authorization: `Bearer ${token}` } });
    if (story.status === 401 || story.status === 403) fail(`the admin API refused the token (${story.status}); ADMIN_JWT_SECRET is not the DLQ worker's`);
    if (story.status === 200 && story.json?.data?.event) {
      const ev = story.json.data.event;
      const s = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`smoke: ok: ${source} accepted the webhook (${sent.status}) as ${eventId}; ingested within ${s} s${ev.delivery_status ? `, delivery ${ev.delivery_status}` : ""}`);
      return;
    }
    if (story.status !== 200 && story.status !== 404) fail(`GET /api/v1/admin/events/${eventId} answered ${story.status} ${story.text.slice(0, 200)}`);
    if (Date.now() - started > opts.timeoutS * 1000) fail(`${eventId} was accepted (${sent.status}) but not ingested within ${opts.timeoutS} s; check the \`webhooks\` queue's consumer (npx wrangler queues info webhooks) and the relay's logs (npx wrangler tail hookrelay)`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

await run("smoke", main);
