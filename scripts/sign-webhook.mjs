#!/usr/bin/env node
// Signs a webhook for a local demo source with the secret from .dev.vars and
// sends it to the local relay (or prints the curl command with --print).
//
//   npm run sign -- demo-stripe '{"id":"evt_1","object":"event"}'
//   npm run sign -- demo-github '{"zen":"hi"}' --print
//   npm run sign -- demo-hmac '{"op":"x"}' --url http://127.0.0.1:8790
//   npm run sign -- demo-slack 'command=%2Fdeploy&text=now'   # a Slack form body
//   WEBHOOK_SECRET_SHOP=… npm run sign -- shop '{"id":"evt_2"}' --scheme stripe --url http://127.0.0.1:8790
// The secret comes from the environment when set there (a source given
// with `npm start -- --var WEBHOOK_SECRET_…`), else from .dev.vars.
import { randomUUID } from "node:crypto";
import { DEMO_SOURCES, localDevVars } from "./dev-vars.mjs";
import { fail, fetchFailure, isMain, run } from "./lib/fail.mjs";
import { SIGNABLE_SCHEMES, headersFor, secretNameFor } from "./webhook-signatures.mjs";

/** The demo sources' schemes, read from the demo's SOURCES (.dev.vars.example), so a new demo source signs too. */
export const DEMO_SCHEMES = Object.fromEntries(Object.entries(DEMO_SOURCES).map(([name, spec]) => [name, spec.scheme]));

/** A source's scheme as the local relay declares it: .dev.vars' SOURCES (which `npm start` runs), else the demo's. */
function localScheme(vars, source) {
  try {
    const sources = typeof vars.SOURCES === "string" ? JSON.parse(vars.SOURCES) : undefined;
    const scheme = sources?.[source]?.scheme;
    if (typeof scheme === "string") return scheme;
  } catch {
    // An unreadable SOURCES in .dev.vars: the relay says so when it starts; fall back to the demo's.
  }
  return DEMO_SCHEMES[source];
}

const USAGE = `usage: npm run sign -- <source> ['<body>'] [--scheme ${SIGNABLE_SCHEMES.join("|")}] [--url http://127.0.0.1:8787] [--print]
  the secret: WEBHOOK_SECRET_<SOURCE> from the environment, else from .dev.vars`;

async function main() {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return;
  }
  const flag = (name) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const [, value] = args.splice(i, 2);
    return value ?? fail(`${name} needs a value`, 2);
  };
  const print = args.includes("--print") && args.splice(args.indexOf("--print"), 1);
  const base = flag("--url") ?? "http://127.0.0.1:8787";
  const schemeFlag = flag("--scheme");
  const [source = "demo-standard", body = JSON.stringify({ id: `evt_${randomUUID()}`, type: "demo.ping", at: new Date().toISOString() })] = args;

  const { file: varsFile, vars } = localDevVars();
  const secretName = secretNameFor(source);
  const secret = process.env[secretName] || vars[secretName];
  if (!secret) fail(`no ${secretName} in the environment or in ${varsFile}; export it, add it to .dev.vars, or sign for a demo source (${Object.keys(DEMO_SCHEMES).join(", ")})`, 2);
  const scheme = schemeFlag ?? localScheme(vars, source);
  const headers = scheme && headersFor(scheme, body, { secret });
  if (!headers) fail(`which scheme does '${source}' use? pass --scheme ${SIGNABLE_SCHEMES.join("|")}`, 2);
  const url = `${base}/webhooks/${source}`;
  if (print) {
    const quote = (s) => `'${s.replaceAll("'", "'\\''")}'`;
    console.log(["curl -i -X POST", quote(url), ...Object.entries(headers).map(([k, v]) => `-H ${quote(`${k}: ${v}`)}`), `--data-binary ${quote(body)}`].join(" \\\n  "));
    return;
  }
  let res;
  try {
    res = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(30_000) });
  } catch (e) {
    throw fetchFailure(e, url, `start one with npm start, or point at a running relay with --url http://127.0.0.1:<port> (npm run sign -- ${source} '<body>' --url …)`);
  }
  console.log(res.status, await res.text());
}

if (isMain(import.meta.url)) await run("sign", main);
