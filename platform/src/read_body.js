// The one body reader, shared by the relay's module entry (src/entry.js,
// which build.sh gives a copy as build/read_body.mjs) and by
// `hookrelay_platform::body::drain` (a wasm-bindgen snippet of this file).
//
// A body declared at most `whole` bytes long is read in one native call,
// which is about twice as cheap as chunk by chunk. Any other body is
// streamed: its first `keep` bytes are kept and the rest dropped, and past
// `stop` bytes the read stops (the sender is abusive; a reset is fine). So
// an isolate never holds more than `keep` bytes and a chunk of a body it
// does not want. Reading to the end lets the client read an early answer:
// workerd resets a connection answered before its body was read.
//
// Answers the bytes read, at most `keep` of them unless read whole.
export async function readBody(request, keep, whole, stop) {
  if (request.body === null || request.bodyUsed) return new Uint8Array(0);
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared >= 0 && declared <= whole) return new Uint8Array(await request.arrayBuffer());
  const kept = new Uint8Array(keep);
  const reader = request.body.getReader();
  let seen = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (seen < keep) kept.set(value.subarray(0, keep - seen), seen);
    seen += value.byteLength;
    if (seen > stop) {
      reader.cancel().catch(() => {});
      break;
    }
  }
  return kept.subarray(0, Math.min(seen, keep));
}
