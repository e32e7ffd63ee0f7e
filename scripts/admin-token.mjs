#!/usr/bin/env node
// Mints an admin token (HS256, signed with ADMIN_JWT_SECRET) for the admin
// API and the console, or with `--role pull --destination <name>` a pull
// consumer's token for that one destination (DESIGN §4), signed with its
// PULL_TOKEN_SECRET_<NAME> when that is set (rotating it revokes them), else
// with ADMIN_JWT_SECRET. The secret comes from standard input (--stdin, or
// simply piped in: standard input that is not a terminal and not empty) or
// the environment variable; only when none is given, from .dev.vars (a
// development token for `npm start`).
//
//   TOKEN=$(npm run -s admin-token)                                    # local, from .dev.vars
//   printf %s "$SECRET" | npm run -s admin-token -- --stdin --sub alice --ttl 12h
//   printf %s "$SECRET" | npm run -s admin-token -- --sub alice   # --stdin is implied
//   ADMIN_JWT_SECRET=… npm run -s admin-token -- --sub alice --ttl 30m
//   PULL_TOKEN_SECRET_ORDERS=… npm run -s admin-token -- --role pull --destination orders --sub billing --ttl 90d
//
// The token's `sub` is the operator's name: the audit records it as the
// actor of every replay, archive, discard and job.
import { readFileSync } from "node:fs";
import { mintToken } from "./admin-jwt.mjs";
import { localDevVars } from "./dev-vars.mjs";
import { fail, isMain, run } from "./lib/fail.mjs";

const USAGE = "usage: npm run -s admin-token -- [--stdin] [--sub <operator>] [--ttl <duration, e.g. 30m, 12h>] [--role admin | --role pull --destination <name>]";
export const MIN_TTL_S = 60;
export const MAX_TTL_S = 24 * 3600;
// A pull consumer runs unattended: its token may live up to a year (the CLI's PULL_TTL_S).
export const MAX_PULL_TTL_S = 365 * 86400;

/** Seconds of `text`: `90s`, `30m`, `12h`, `1d`, or plain seconds; bounded to [1 min, 24 h], or a year for a pull token. */
export function parseTtl(text, role = "admin") {
  const m = /^(\d+)([smhd]?)$/.exec(String(text).trim());
  if (!m) fail(`--ttl ${JSON.stringify(text)} is not a duration; give seconds or a number with s, m, h or d (e.g. 12h)`, 2);
  const s = Number(m[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2]];
  const [max, says] = role === "pull" ? [MAX_PULL_TTL_S, "a pull token lives between 1m and 365d"] : [MAX_TTL_S, "an admin token lives between 1m and 24h (mint a new one when it expires)"];
  if (s < MIN_TTL_S || s > max) fail(`--ttl ${text} is out of bounds; ${says}`, 2);
  return s;
}

/** `PULL_TOKEN_SECRET_<NAME>` for a pull destination (as core's `pull_secret_name`). */
export const pullSecretName = (destination) => `PULL_TOKEN_SECRET_${destination.toUpperCase().replaceAll("-", "_")}`;

/** `{stdin, sub, ttlS, role, destination}` from the command line; anything unknown is refused. */
export function tokenArgs(argv) {
  const out = { stdin: false, sub: undefined, ttl: undefined, role: "admin", destination: undefined };
  const value = (i, name) => argv[i + 1] ?? fail(`${name} needs a value; ${USAGE}`, 2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--stdin") out.stdin = true;
    else if (a === "--sub") out.sub = value(i++, a);
    else if (a === "--ttl") out.ttl = value(i++, a);
    else if (a === "--role") out.role = value(i++, a);
    else if (a === "--destination") out.destination = value(i++, a);
    else fail(`unknown argument ${JSON.stringify(a)}; ${USAGE}`, 2);
  }
  if (out.role !== "admin" && out.role !== "pull") fail(`--role ${JSON.stringify(out.role)}: a token's role is admin or pull`, 2);
  if (out.role === "pull" && out.destination === undefined) fail("--role pull needs --destination <pull destination>: a pull token may pull one destination", 2);
  if (out.role === "admin" && out.destination !== undefined) fail("--destination goes with --role pull; an admin token is for every destination", 2);
  if (out.destination !== undefined && !/^[a-z0-9_-]{1,64}$/.test(out.destination)) fail(`--destination ${JSON.stringify(out.destination)}: a destination name is 1 to 64 lower-case letters, digits, _ or -`, 2);
  if (out.sub !== undefined && !/^[\w.@+-]{1,64}$/.test(out.sub)) fail(`--sub ${JSON.stringify(out.sub)}: an operator name is 1 to 64 letters, digits or . _ @ + -`, 2);
  // An admin's default is an hour; a pull consumer's 90 days (it runs unattended).
  out.ttlS = out.ttl === undefined ? (out.role === "pull" ? 90 * 86400 : 3600) : parseTtl(out.ttl, out.role);
  delete out.ttl;
  return out;
}

/** Standard input, less trailing whitespace (a newline from echo). */
const readStdin = () => readFileSync(0, "utf8").replace(/\s+$/, "");

/**
 * The secret and where it came from: stdin with --stdin, the environment,
 * a secret piped on standard input without --stdin (stdin not a terminal
 * and not empty), else .dev.vars. A secret the caller gave always wins:
 * a piped one never falls back silently to the development secret.
 */
function secret({ stdin, role, destination }) {
  // A pull token is signed with its destination's own secret when it has
  // one: the relay checks it with that secret, so ADMIN_JWT_SECRET would fail.
  const names = role === "pull" ? [pullSecretName(destination), "ADMIN_JWT_SECRET"] : ["ADMIN_JWT_SECRET"];
  const either = names.join(" (or ") + (names.length > 1 ? ")" : "");
  if (stdin) {
    const text = readStdin();
    if (!text) fail(`--stdin: standard input was empty; pipe the ${either} into it`, 2);
    return { value: text, production: true };
  }
  const fromEnv = names.find((n) => process.env[n]);
  if (fromEnv) return { value: process.env[fromEnv], production: true };
  if (!process.stdin.isTTY) {
    const piped = readStdin();
    if (piped) return { value: piped, production: true };
  }
  const { file, vars } = localDevVars();
  const local = names.find((n) => vars[n]);
  if (!local) fail(`no ${either}: pipe it in with --stdin, set the environment variable, or (locally) put it in ${file}`, 2);
  return { value: vars[local], production: false };
}

function main() {
  const args = tokenArgs(process.argv.slice(2));
  const { value, production } = secret(args);
  // A production token names its operator: the audit shows who did what.
  if (production && args.sub === undefined) fail("--sub <your name> is required with a production secret: the audit records it as the actor", 2);
  const claims = args.role === "pull" ? { destination: args.destination } : {};
  console.log(mintToken(value, { sub: args.sub ?? process.env.USER ?? "local-admin", role: args.role, ttlS: args.ttlS, claims }));
}

if (isMain(import.meta.url)) await run("admin-token", main);
