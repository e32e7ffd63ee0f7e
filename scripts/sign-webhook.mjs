#!/usr/bin/env node
// Signs a webhook for a local demo source with the secret from .dev.vars and
// sends it to the local relay (or prints the curl command with --print).
//
//   npm run sign -- demo-stripe '{"id":"evt_1","object":"event"}'
//   npm run sign -- demo-github '{"zen":"hi"}' --print
//   npm run sign -- demo-hmac '{"op":"x"}' --url http://127.0.0.1:8790
//   npm run sign -- demo-slack 'command=%2Fdeploy&text=now'   # a Slack form body
import { randomUUID } from "node:crypto";
import { localDevVars } from "./dev-vars.mjs";
import { githubSignatureHeader, hmacSha256Headers, secretNameFor, slackHeaders, standardWebhooksHeaders, stripeSignatureHeader } from "./webhook-signatures.mjs";

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const [, value] = args.splice(i, 2);
  return value ?? true;
};
const print = args.includes("--print") && args.splice(args.indexOf("--print"), 1);
const base = flag("--url") ?? "http://127.0.0.1:8787";
const [source = "demo-standard", body = JSON.stringify({ id: `evt_${randomUUID()}`, type: "demo.ping", at: new Date().toISOString() })] = args;

const { file: varsFile, vars } = localDevVars();
const secretName = secretNameFor(source);
const secret = vars[secretName];
if (!secret) {
  console.error(`no ${secretName} in ${varsFile}; which scheme does '${source}' use? (demo sources: demo-standard, demo-stripe, demo-github, demo-hmac, demo-slack)`);
  process.exit(2);
}
const scheme = { "demo-standard": "standard-webhooks", "demo-stripe": "stripe", "demo-github": "github", "demo-hmac": "hmac-sha256", "demo-slack": "slack" }[source] ?? flag("--scheme");
const headers = { "content-type": "application/json" };
switch (scheme) {
  case "standard-webhooks":
    Object.assign(headers, standardWebhooksHeaders(body, { secret }));
    break;
  case "stripe":
    headers["stripe-signature"] = stripeSignatureHeader(body, { secret });
    break;
  case "github":
    Object.assign(headers, { "x-github-event": "ping", "x-github-delivery": randomUUID(), "x-hub-signature-256": githubSignatureHeader(body, { secret }) });
    break;
  case "hmac-sha256":
    Object.assign(headers, hmacSha256Headers(body, { secret, operationId: `op_${randomUUID()}` }));
    break;
  case "slack":
    // Slack's commands and interactivity post forms; its Events API posts JSON.
    if (!body.trimStart().startsWith("{")) headers["content-type"] = "application/x-www-form-urlencoded";
    Object.assign(headers, slackHeaders(body, { secret }));
    break;
  default:
    console.error(`unknown scheme for '${source}'; pass --scheme standard-webhooks|stripe|github|hmac-sha256|slack`);
    process.exit(2);
}
const url = `${base}/webhooks/${source}`;
if (print) {
  const quote = (s) => `'${s.replaceAll("'", "'\\''")}'`;
  console.log(["curl -i -X POST", quote(url), ...Object.entries(headers).map(([k, v]) => `-H ${quote(`${k}: ${v}`)}`), `--data-binary ${quote(body)}`].join(" \\\n  "));
} else {
  const res = await fetch(url, { method: "POST", headers, body });
  console.log(res.status, await res.text());
}
