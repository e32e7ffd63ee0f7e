#!/usr/bin/env node
// Mints an admin token (HS256, signed with ADMIN_JWT_SECRET) for the admin
// API and the console. The secret comes from standard input (--stdin, or
// simply piped in: standard input that is not a terminal and not empty) or
// the environment variable ADMIN_JWT_SECRET; only when none is given, from
// .dev.vars (a development token for `npm start`).
//
//   TOKEN=$(npm run -s admin-token)                                    # local, from .dev.vars
//   printf %s "$SECRET" | npm run -s admin-token -- --stdin --sub alice --ttl 12h
//   printf %s "$SECRET" | npm run -s admin-token -- --sub alice   # --stdin is implied
//   ADMIN_JWT_SECRET=… npm run -s admin-token -- --sub alice --ttl 30m
//
// The token's `sub` is the operator's name: the audit records it as the
// actor of every replay, archive, discard and job.
import { readFileSync } from "node:fs";
import { mintToken } from "./admin-jwt.mjs";
import { localDevVars } from "./dev-vars.mjs";
import { fail, isMain, run } from "./lib/fail.mjs";

const USAGE = "usage: npm run -s admin-token -- [--stdin] [--sub <operator>] [--ttl <duration, e.g. 30m, 12h>] [--role admin]";
export const MIN_TTL_S = 60;
export const MAX_TTL_S = 24 * 3600;

/** Seconds of `text`: `90s`, `30m`, `12h`, `1d`, or plain seconds; bounded to [1 min, 24 h]. */
export function parseTtl(text) {
  const m = /^(\d+)([smhd]?)$/.exec(String(text).trim());
  if (!m) fail(`--ttl ${JSON.stringify(text)} is not a duration; give seconds or a number with s, m, h or d (e.g. 12h)`, 2);
  const s = Number(m[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2]];
  if (s < MIN_TTL_S || s > MAX_TTL_S) fail(`--ttl ${text} is out of bounds; an admin token lives between 1m and 24h (mint a new one when it expires)`, 2);
  return s;
}

/** `{stdin, sub, ttlS, role}` from the command line; anything unknown is refused. */
export function tokenArgs(argv) {
  const out = { stdin: false, sub: undefined, ttlS: 3600, role: "admin" };
  const value = (i, name) => argv[i + 1] ?? fail(`${name} needs a value; ${USAGE}`, 2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--stdin") out.stdin = true;
    else if (a === "--sub") out.sub = value(i++, a);
    else if (a === "--ttl") out.ttlS = parseTtl(value(i++, a));
    else if (a === "--role") out.role = value(i++, a);
    else fail(`unknown argument ${JSON.stringify(a)}; ${USAGE}`, 2);
  }
  if (out.sub !== undefined && !/^[\w.@+-]{1,64}$/.test(out.sub)) fail(`--sub ${JSON.stringify(out.sub)}: an operator name is 1 to 64 letters, digits or . _ @ + -`, 2);
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
function secret({ stdin }) {
  if (stdin) {
    const text = readStdin();
    if (!text) fail("--stdin: standard input was empty; pipe the ADMIN_JWT_SECRET into it", 2);
    return { value: text, production: true };
  }
  if (process.env.ADMIN_JWT_SECRET) return { value: process.env.ADMIN_JWT_SECRET, production: true };
  if (!process.stdin.isTTY) {
    const piped = readStdin();
    if (piped) return { value: piped, production: true };
  }
  const { file, vars } = localDevVars();
  if (!vars.ADMIN_JWT_SECRET) fail(`no ADMIN_JWT_SECRET: pipe it in with --stdin, set the environment variable ADMIN_JWT_SECRET, or (locally) put it in ${file}`, 2);
  return { value: vars.ADMIN_JWT_SECRET, production: false };
}

function main() {
  const args = tokenArgs(process.argv.slice(2));
  const { value, production } = secret(args);
  // A production token names its operator: the audit shows who did what.
  if (production && args.sub === undefined) fail("--sub <your name> is required with a production secret: the audit records it as the actor", 2);
  console.log(mintToken(value, { sub: args.sub ?? process.env.USER ?? "local-admin", role: args.role, ttlS: args.ttlS }));
}

if (isMain(import.meta.url)) await run("admin-token", main);
