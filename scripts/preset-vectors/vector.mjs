// The shape of one golden vector, and the small tools every preset's
// generator shares: the fixed clock, HMACs by hand, the libraries' versions.
// core/tests/preset_vectors.json is read by the Rust core's native tests, so
// the key order and the field set here are its contract.
import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";

/** The time every vector is signed at (2023-11-14T22:13:20Z), so the output is deterministic. */
export const T0 = 1700000000;
/** Where the relay is reached in every vector; the source name is the path's last segment. */
export const RELAY = "https://relay.example.com/webhooks";

const pinned = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")).dependencies;

/** `name@version` of an installed library, checked against the pin (a stale node_modules is refused). */
export function lib(name) {
  const installed = JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), "utf8")).version;
  assert.equal(installed, pinned[name], `${name} is installed at ${installed} but pinned at ${pinned[name]}: run npm run vectors`);
  return `${name}@${installed}`;
}

/**
 * One vector, its keys always in this order. `headers` never holds the
 * Content-Type: that is `content_type`. `valid` says whether the relay must
 * accept the signature at `now_s`; `note` says why an invalid one is invalid,
 * or where the provider differs from DESIGN §2.
 */
export function vector({
  preset, checked_by, secret = null, public_key = null, method = "POST", url, headers, content_type = "application/json",
  body, now_s, valid, delivery_id = null, handshake = null, note = null,
}) {
  for (const [k, v] of Object.entries({ preset, checked_by, url, headers, body, now_s, valid })) assert.notEqual(v, undefined, `${preset}: ${k} is required`);
  assert.ok(!Object.keys(headers).some((h) => h.toLowerCase() === "content-type"), `${preset}: Content-Type belongs in content_type`);
  return { preset, checked_by, secret, public_key, method, url, headers, content_type, body, now_s, valid, delivery_id, handshake, note };
}

/** The same vector with its body changed after signing: what an attacker who edits a capture sends. */
export function tampered(v, body, checked_by = v.checked_by) {
  assert.notEqual(body, v.body);
  return { ...v, checked_by, body, valid: false, delivery_id: null, handshake: null, note: "tampered: the body was changed after signing" };
}

/** The same vector received at `now_s`, past the preset's tolerance; every vector is signed at T0. */
export function stale(v, now_s, tolerance, checked_by = v.checked_by) {
  return { ...v, checked_by, now_s, valid: false, delivery_id: null, handshake: null, note: `stale: received ${now_s - T0} s after its timestamp, past the tolerance of ${tolerance}` };
}

export const hmacHex = (alg, key, data) => createHmac(alg, key).update(data).digest("hex");
export const hmacBase64 = (alg, key, data) => createHmac(alg, key).update(data).digest("base64");
export const sha256Hex = (data) => createHash("sha256").update(data).digest("hex");

/**
 * Runs `fn` while `Date` reads `nowMs`: for the libraries that check a
 * timestamp against the real clock and take no "now" argument. Only the
 * clock the library reads is replaced, and only for that call.
 */
export async function atClock(nowMs, fn) {
  const RealDate = globalThis.Date;
  class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(nowMs);
      else super(...args);
    }
    static now() {
      return nowMs;
    }
  }
  globalThis.Date = FixedDate;
  try {
    return await fn();
  } finally {
    globalThis.Date = RealDate;
  }
}

/** Asserts what a library said about a vector: the vector is then proven by the library, not by this script. */
export function proven(actual, expected, what) {
  assert.equal(actual, expected, `${what}: the library says ${actual}, the vector says ${expected}`);
}
