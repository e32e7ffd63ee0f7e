#!/usr/bin/env node
// Mints a local admin token (HS256) from ADMIN_JWT_SECRET in .dev.vars, for
// curl against `npm start`:
//
//   TOKEN=$(npm run -s admin-token)
//   curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8787/api/v1/admin/webhook-dlq/stats
//
// Options: --sub <who> (default: $USER), --ttl <seconds> (default 3600), --role <role> (default admin).
import { createHmac } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const file = existsSync(".dev.vars") ? ".dev.vars" : ".dev.vars.example";
const line = readFileSync(file, "utf8").split("\n").find((l) => l.trim().startsWith("ADMIN_JWT_SECRET="));
if (!line) {
  console.error(`ADMIN_JWT_SECRET is not in ${file}`);
  process.exit(2);
}
const secret = line.slice(line.indexOf("=") + 1).trim().replace(/^"|"$/g, "");
const now = Math.floor(Date.now() / 1000);
const b64 = (obj) => Buffer.from(JSON.stringify(obj)).toString("base64url");
const header = b64({ alg: "HS256", typ: "JWT" });
const payload = b64({ sub: opt("--sub", process.env.USER || "local-admin"), role: opt("--role", "admin"), iat: now, exp: now + Number(opt("--ttl", "3600")) });
const signature = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
console.log(`${header}.${payload}.${signature}`);
