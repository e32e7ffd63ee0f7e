// Mints HS256 admin tokens with node:crypto, independently of the Rust
// verifier: used by `npm run admin-token`, the demo and the tests.
import { createHmac } from "node:crypto";

const b64 = (obj) => Buffer.from(JSON.stringify(obj)).toString("base64url");

/** A token whose claims default to an admin valid for `ttlS` seconds; `claims` and `header` override. */
export function mintToken(secret, { sub = "local-admin", role = "admin", ttlS = 3600, claims = {}, header = {} } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const h = b64({ alg: "HS256", typ: "JWT", ...header });
  const p = b64({ sub, role, iat: now, exp: now + ttlS, ...claims });
  return `${h}.${p}.${createHmac("sha256", secret).update(`${h}.${p}`).digest("base64url")}`;
}
