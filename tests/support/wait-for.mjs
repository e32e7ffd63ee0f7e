// Tests never sleep a fixed time: they poll a probe until a deadline.

/** Polls `probe` until it returns a truthy value (returned) or the deadline passes (thrown, with the last value). */
export async function waitFor(probe, { timeoutMs = 15000, intervalMs = 50, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await probe();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
