// The two public-key presets. The keys are fixed (derived from a fixed text),
// the signatures deterministic (Ed25519 is; ECDSA uses RFC 6979 through
// @noble/curves), so a rerun writes the same file; each vector is then
// checked by the provider's own library and by node:crypto.
import { createHash, createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify } from "node:crypto";
import assert from "node:assert/strict";
import { verifyKey, verifyWebhookEventMiddleware } from "discord-interactions";
import sendgrid from "@sendgrid/eventwebhook";
import { p256 } from "@noble/curves/nist.js";
import { RELAY, T0, lib, proven, stale, tampered, vector } from "./vector.mjs";

const seed = (text) => createHash("sha256").update(text).digest();

/** An Ed25519 key pair from a fixed 32-byte seed (PKCS#8 wraps the seed as is). */
function ed25519FromSeed(bytes) {
  const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), bytes]);
  const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  const raw = Buffer.from(createPublicKey(privateKey).export({ format: "jwk" }).x, "base64url");
  return { privateKey, publicHex: raw.toString("hex") };
}

/** What discord-interactions' webhook-event middleware answers, driven with a minimal request and response. */
async function discordMiddlewareAnswer(publicHex, v) {
  return new Promise((resolve) => {
    const answer = { status: null, content_type: null, body: "" };
    const res = {
      statusCode: 200,
      setHeader(name, value) {
        if (name.toLowerCase() === "content-type") answer.content_type = value;
      },
      end(text) {
        answer.status = this.statusCode;
        if (text) answer.body = String(text);
        resolve(answer);
      },
    };
    const req = { header: (name) => v.headers[name], body: Buffer.from(v.body) };
    verifyWebhookEventMiddleware(publicHex)(req, res, () => {});
  });
}

export async function discord() {
  const L = lib("discord-interactions");
  const { privateKey, publicHex } = ed25519FromSeed(seed("hookrelay discord preset vector key"));
  const sign = (ts, body) => nodeSign(null, Buffer.from(ts + body), privateKey).toString("hex");
  const ts = String(T0);
  const checked_by = `node:crypto Ed25519 sign, accepted by ${L} verifyKey`;
  const event = '{"version":1,"application_id":"1234560123453231555","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2023-11-14T22:13:19.000000+00:00","data":{"integration_type":0,"scopes":["applications.commands"],"user":{"id":"111111111111111111","username":"hookrelay"}}}}';
  const valid = vector({
    preset: "discord", checked_by, public_key: publicHex, url: `${RELAY}/discord`,
    headers: { "X-Signature-Ed25519": sign(ts, event), "X-Signature-Timestamp": ts }, body: event, now_s: T0 + 2, valid: true,
  });
  const ping = '{"version":1,"application_id":"1234560123453231555","type":0}';
  const pingVector = vector({ ...valid, headers: { "X-Signature-Ed25519": sign(ts, ping), "X-Signature-Timestamp": ts }, body: ping });
  pingVector.handshake = await discordMiddlewareAnswer(publicHex, pingVector);
  pingVector.checked_by = `${checked_by}; answer from verifyWebhookEventMiddleware`;
  assert.deepEqual(pingVector.handshake, { status: 204, content_type: null, body: "" });
  const out = [
    valid, pingVector, tampered(valid, event.replace("hookrelay", "attacker")),
    stale(valid, T0 + 301, "300 s (DESIGN §2: discord-interactions checks no time)", `${checked_by} (the signature; the age is DESIGN §2's rule)`),
  ];
  for (const v of out) {
    const sigOk = await verifyKey(v.body, v.headers["X-Signature-Ed25519"], v.headers["X-Signature-Timestamp"], publicHex);
    const expected = v.note?.startsWith("stale") ? true : v.valid;
    proven(sigOk, expected, `discord ${v.note ?? "valid"} (signature only)`);
  }
  return out;
}

/** A P-256 key from a fixed text: the private scalar, and the public key as base64 SPKI (what SendGrid shows). */
function p256FromSeed(bytes) {
  const point = Buffer.from(p256.getPublicKey(bytes, false));
  const jwk = { kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") };
  const spki = createPublicKey({ key: jwk, format: "jwk" }).export({ type: "spki", format: "der" });
  return { secretKey: bytes, spki, spkiBase64: spki.toString("base64") };
}

export async function sendgridPreset() {
  const L = lib("@sendgrid/eventwebhook");
  const N = lib("@noble/curves");
  const ew = new sendgrid.EventWebhook();
  const { secretKey, spki, spkiBase64 } = p256FromSeed(seed("hookrelay sendgrid preset vector key"));
  const ts = String(T0);
  const body = '[{"email":"example@test.com","timestamp":1699999999,"smtp-id":"<14c5d75ce93.dfd.64b469@ismtpd-555>","event":"processed","category":["cat facts"],"sg_event_id":"sg_event_id","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"}]';
  // RFC 6979 k, so the same key and text always give the same DER.
  const der = Buffer.from(p256.sign(Buffer.from(ts + body), secretKey, { lowS: false, format: "der" })).toString("base64");
  const checked_by = `${N} p256.sign (RFC 6979, DER), accepted by ${L} EventWebhook.verifySignature and node:crypto verify`;
  const valid = vector({
    preset: "sendgrid", checked_by, public_key: spkiBase64, url: `${RELAY}/sendgrid`,
    headers: { "X-Twilio-Email-Event-Webhook-Signature": der, "X-Twilio-Email-Event-Webhook-Timestamp": ts }, body, now_s: T0 + 5, valid: true,
  });
  // SendGrid's own test vector (sendgrid-nodejs, packages/eventwebhook/src/eventwebhook.spec.js).
  const docKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA==";
  const docVector = vector({
    preset: "sendgrid", checked_by: `SendGrid's test vector (github.com/sendgrid/sendgrid-nodejs packages/eventwebhook/src/eventwebhook.spec.js), accepted by ${L} EventWebhook.verifySignature and node:crypto verify`,
    public_key: docKey, url: `${RELAY}/sendgrid`,
    headers: { "X-Twilio-Email-Event-Webhook-Signature": "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0=", "X-Twilio-Email-Event-Webhook-Timestamp": "1588788367" },
    body: '{"category":"example_payload","event":"test_event","message_id":"message_id"}', now_s: 1588788367 + 10, valid: true,
    note: "its DER r has 33 bytes (a leading 0x00): the conversion to r‖s must strip it",
  });
  const out = [
    valid, docVector, tampered(valid, body.replace("processed", "delivered")), tampered(docVector, docVector.body.replace("test_event", "test_evenT")),
    stale(valid, T0 + 301, "300 s (DESIGN §2: the library checks no time)", `${checked_by} (the signature; the age is DESIGN §2's rule)`),
  ];
  for (const v of out) {
    const sig = v.headers["X-Twilio-Email-Event-Webhook-Signature"];
    const signed = v.headers["X-Twilio-Email-Event-Webhook-Timestamp"] + v.body;
    const expected = v.note?.startsWith("stale") ? true : v.valid;
    proven(ew.verifySignature(ew.convertPublicKeyToECDSA(v.public_key), v.body, sig, v.headers["X-Twilio-Email-Event-Webhook-Timestamp"]), expected, `sendgrid ${v.note ?? "valid"} (library)`);
    const key = createPublicKey({ key: Buffer.from(v.public_key, "base64"), format: "der", type: "spki" });
    proven(nodeVerify("sha256", Buffer.from(signed), key, Buffer.from(sig, "base64")), expected, `sendgrid ${v.note ?? "valid"} (node:crypto)`);
  }
  assert.equal(spki.length, 91, "a P-256 SPKI is 91 bytes");
  return out;
}
