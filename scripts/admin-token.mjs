#!/usr/bin/env node
// Mints a local admin token (HS256) from ADMIN_JWT_SECRET in .dev.vars, for
// curl against `npm start`:
//
//   TOKEN=$(npm run -s admin-token)
//   curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8787/api/v1/admin/webhook-dlq/stats
//
// Options: --sub <who> (default: $USER), --ttl <seconds> (default 3600), --role <role> (default admin).
import { localDevVars } from "./dev-vars.mjs";
import { mintToken } from "./admin-jwt.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const { file, vars } = localDevVars();
if (!vars.ADMIN_JWT_SECRET) {
  console.error(`ADMIN_JWT_SECRET is not in ${file}`);
  process.exit(2);
}
console.log(
  mintToken(vars.ADMIN_JWT_SECRET, {
    sub: opt("--sub", process.env.USER || "local-admin"),
    role: opt("--role", "admin"),
    ttlS: Number(opt("--ttl", "3600")),
  }),
);
