// Admin API helpers: mint HS256 tokens with node:crypto (independently of
// the Rust verifier) and call the API exactly as DESIGN.md states it.
import { mintToken } from "../../scripts/admin-jwt.mjs";
import assert from "node:assert/strict";
import { EXAMPLE_SECRETS as SECRETS } from "../../scripts/dev-vars.mjs";

/** An HS256 token for the tests' admin; `header` and `claims` override the defaults. */
export function token({ claims = {}, header = {}, secret = SECRETS.ADMIN_JWT_SECRET } = {}) {
  return mintToken(secret, { sub: "test-admin", ttlS: 600, claims, header });
}

/** Every configured secret, to scan responses for. */
export const ALL_SECRETS = () => Object.values(SECRETS);

/** Calls the admin API through the relay's origin; checks the envelope shape and that no secret leaks. */
export function adminClient(relay, extraSecrets = []) {
  const call = async (method, path, body, auth = `Bearer ${token()}`) => {
    const headers = {};
    if (auth) headers.authorization = auth;
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await relay.fetch(`/api/v1/admin/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    for (const secret of [...ALL_SECRETS(), ...extraSecrets]) {
      assert.ok(!text.includes(secret), `a secret appeared in the answer to ${method} ${path}`);
    }
    const json = JSON.parse(text);
    if (res.ok) assert.equal(json.status, "success", text);
    else {
      assert.equal(json.status, "error", text);
      assert.equal(typeof json.error.code, "string");
      assert.equal(typeof json.error.message, "string");
    }
    return { status: res.status, json, data: json.data, error: json.error };
  };
  return {
    get: (path, auth) => call("GET", path, undefined, auth),
    post: (path, body, auth) => call("POST", path, body, auth),
  };
}
