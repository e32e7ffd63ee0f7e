// What the two hand-written ingest anchors (bench/js-ingest and
// bench/js-ingest-bare) share: their bindings, the HMAC key per source
// (imported once per isolate, as the relay caches its config) and the
// decoding of one hex signature. Bundled into each by esbuild.

export interface Queue {
  send(body: unknown, options?: { contentType?: string }): Promise<void>;
}
export interface IngestEnv {
  WEBHOOKS: Queue;
  SOURCES: string; // JSON: {"name": {"scheme": "hmac-sha256", "tolerance_s"?: n}}
  MAX_BODY_BYTES?: string;
  [secret: string]: unknown; // WEBHOOK_SECRET_<NAME>
}

const utf8 = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

/** The source's HMAC-SHA256 key, from `WEBHOOK_SECRET_<NAME>`. */
export function hmacKey(env: IngestEnv, name: string): Promise<CryptoKey> {
  let k = keys.get(name);
  if (!k) {
    const secret = env[`WEBHOOK_SECRET_${name.toUpperCase().replaceAll("-", "_")}`] as string;
    k = crypto.subtle.importKey("raw", utf8.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    keys.set(name, k);
  }
  return k;
}

/** 64 hex digits as the 32 bytes of a MAC, or null. */
export function fromHex(s: string): Uint8Array | null {
  if (!/^[0-9a-fA-F]{64}$/.test(s)) return null;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Whether any of `macs` is the HMAC of `{timestamp}.{raw body}` (WebCrypto, constant time). */
export async function anyMacMatches(env: IngestEnv, name: string, timestamp: string | number, raw: Uint8Array, macs: Uint8Array[]): Promise<boolean> {
  const prefix = utf8.encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix);
  signed.set(raw, prefix.length);
  const k = await hmacKey(env, name);
  let valid = false;
  for (const mac of macs) if (await crypto.subtle.verify("HMAC", k, mac, signed)) valid = true;
  return valid;
}
