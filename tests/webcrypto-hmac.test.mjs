// The WebCrypto HMAC step of the signature check (platform/src/webcrypto.rs,
// its inline JS run as written, under Node's WebCrypto): each (key,
// message) MAC is computed once, whatever the number of signatures a
// request presents; the core then compares every signature with them in
// constant time (HmacCheck::matches, table-tested natively). Before,
// each presented signature cost one verify over the whole message: up to
// 8 signatures x 2 keys over a 1 MiB body per forged request.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** The module wasm-bindgen emits from the `inline_js` of webcrypto.rs. */
async function inlineModule() {
  const src = readFileSync(new URL("../platform/src/webcrypto.rs", import.meta.url), "utf8");
  const js = /inline_js = r#"([\s\S]*?)"#\)\]/.exec(src)[1];
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), "webcrypto-")), "inline.mjs");
  writeFileSync(file, js);
  return import(pathToFileURL(file).href);
}

test("each (key, message) HMAC is computed once, not once per presented signature", async () => {
  const m = await inlineModule();
  assert.equal(typeof m.hmac_macs, "function", "webcrypto.rs exports hmac_macs: the MACs, for the core to compare");
  const subtle = globalThis.crypto.subtle;
  const calls = { sign: 0, verify: 0 };
  for (const op of ["sign", "verify"]) {
    const real = subtle[op].bind(subtle);
    subtle[op] = (...args) => {
      calls[op]++;
      return real(...args);
    };
  }
  const body = new Uint8Array(1024 * 1024).fill(0x61);
  const keys = [new TextEncoder().encode("current"), new TextEncoder().encode("previous")];
  const before = new TextEncoder().encode("1700000000.");
  const macs = await m.hmac_macs("SHA-256", keys, [[before, true, new Uint8Array()]], body);
  assert.deepEqual(calls, { sign: 2, verify: 0 }, "two keys, one message: two MACs, however many signatures");
  const message = Buffer.concat([before, body]);
  assert.deepEqual(macs.map((x) => Buffer.from(x).toString("hex")), ["current", "previous"].map((k) => createHmac("sha256", k).update(message).digest("hex")));
});
