// One consumer run, shared by the consumer, forwarding and sweep sections:
// start a fresh Miniflare, put `n` QueuedEvent messages on `webhooks` in
// sendBatch chunks of 100, and stop the clock when every `events` row exists
// (and, with a downstream, when it has received `n` requests). Then read
// what the broker and the D1 counter saw.
import { median } from "./report.mjs";
import { queuedEvents, settleStdio, sleep } from "./lib.mjs";
import { cpuNs } from "./cpu.mjs";

const CHUNK = 100;
const TIMEOUT_MS = 240_000;

/**
 * `start()` returns a started env (bench/lib.mjs `started`), `worker` is the
 * consumer's worker name (its producer binding and its D1 label).
 * `drainDelayS` > 0 sends every message with that delay, so all sends are
 * done before the first batch runs and batches are full (the sweep); the
 * rate is then timed from the first batch's start to the last one's end,
 * as the broker reported them. `beside(env)`, if given, starts work that
 * runs next to the consumer from just before the first send (e.g. the
 * retention sweep, bench/archive-sweep.mjs) and returns `stop()`, awaited
 * once every event is in; its answer is the run's `beside`. `fanOut`: the
 * destinations each event is routed to, so the downstream must receive
 * `n × fanOut` requests. The run also reads the workerd process's CPU
 * (bench/cpu.mjs) from the first send until its stdout went quiet, and the
 * queue sends the counter saw (bench/queue-counter.mjs), if it counts any.
 */
export async function consumerRun({ start, worker, n, batchSize, source = "demo-hmac", downstream = null, drainDelayS = 0, beside = null, countSource = false, fanOut = 1 }) {
  downstream?.reset();
  const env = await start();
  let stopBeside = null;
  try {
    stopBeside = beside ? await beside(env) : null;
    const producer = await env.mf.getQueueProducer("WEBHOOKS", worker);
    const events = queuedEvents(n, undefined, source);
    // countSource: only this run's source (other rows, e.g. old ones for a sweep beside it, are not counted).
    const count = async () => (await (countSource ? env.db.prepare("SELECT count(*) AS n FROM events WHERE source = ?1").bind(source) : env.db.prepare("SELECT count(*) AS n FROM events")).first("n")) ?? 0;
    const done = async () => (!downstream || downstream.requests >= n * fanOut) && (await count()) >= n;
    const cpu0 = cpuNs(env.pid);
    const t0 = performance.now();
    const options = drainDelayS > 0 ? { delaySeconds: drainDelayS } : undefined;
    const sending = (async () => {
      for (let i = 0; i < events.length; i += CHUNK) {
        await producer.sendBatch(
          events.slice(i, i + CHUNK).map((body) => ({ body })),
          options,
        );
      }
      return performance.now() - t0;
    })();
    while (!(await done())) {
      if (performance.now() - t0 > TIMEOUT_MS) {
        const got = `${await count()} rows${downstream ? `, ${downstream.requests} downstream requests (of ${n * fanOut})` : ""}`;
        throw new Error(`${worker}: only ${got} of ${n} after ${TIMEOUT_MS / 1000} s; errors: ${[...env.log.errors, ...env.stdio.errors].slice(0, 5).join(" | ")}`);
      }
      await sleep(downstream ? 20 : 50);
    }
    const doneAt = performance.now();
    const besideResult = stopBeside ? await stopBeside() : null;
    stopBeside = null;
    const sendMs = await sending;
    await settleStdio(env);
    const cpuMs = (cpuNs(env.pid) - cpu0) / 1e6;
    const batches = env.log.batches.filter((b) => b.queue === "webhooks");
    const full = batches.filter((b) => b.size === batchSize);
    const trips = env.d1.of(worker);
    const delivered = downstream ? await env.db.prepare("SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'").first("n") : null;
    const first = batches.reduce((a, b) => Math.min(a, b.at - b.ms), Infinity);
    const ms = drainDelayS > 0 ? Math.max(...batches.map((b) => b.at)) - first : doneAt - t0;
    return {
      rate: (n / ms) * 1000,
      ms,
      sendMs,
      batches: batches.length,
      meanBatch: batches.reduce((a, b) => a + b.size, 0) / Math.max(1, batches.length),
      // The broker's wall time per invocation, median over full batches.
      handlerMs: median((full.length ? full : batches).map((b) => b.ms)),
      batchMs: batches.map((b) => b.ms),
      unacked: batches.reduce((a, b) => a + (b.size - b.acked), 0),
      trips: trips.trips,
      tripsPerBatch: trips.trips / batches.length,
      statementsPerBatch: trips.statements / batches.length,
      kinds: env.d1.kinds(worker),
      tripsPerEvent: trips.trips / n,
      // workerd's CPU (every isolate, the broker, D1) per event, first send to quiet.
      cpuUsPerEvent: (cpuMs * 1000) / n,
      queueSends: env.queues?.summary(worker) ?? "",
      queueSendCalls: Object.entries(env.queues?.byBinding ?? {}).filter(([k]) => k.startsWith(`${worker} `)).reduce((a, [, q]) => a + q.calls, 0),
      queueMessages: Object.entries(env.queues?.byBinding ?? {}).filter(([k]) => k.startsWith(`${worker} `)).reduce((a, [, q]) => a + q.messages, 0),
      deliveryBatches: env.log.batches.filter((b) => b.queue === "deliveries").length,
      otherTrips: Object.entries(env.d1.byWorker).filter(([w]) => w !== worker).map(([w, t]) => `${w}:${t.trips}`).join(" "),
      downstream: downstream ? { requests: downstream.requests, distinct: downstream.distinct, delivered } : null,
      errors: [...env.log.errors, ...env.stdio.errors].slice(0, 3),
      beside: besideResult,
    };
  } finally {
    await stopBeside?.();
    await env.dispose();
  }
}

/** One progress line for a run. */
export function runLine(r, key, res) {
  const ds = res.downstream ? `; downstream ${res.downstream.requests} requests (${res.downstream.distinct} distinct), ${res.downstream.delivered} rows delivered` : "";
  return (
    `  run ${r} ${key.padEnd(9)} ${res.rate.toFixed(0).padStart(6)} events/s  (${res.ms.toFixed(0)} ms; ${res.batches} batches of mean ${res.meanBatch.toFixed(1)}; ` +
    `broker median ${Number.isFinite(res.handlerMs) ? res.handlerMs.toFixed(0) : "n/a"} ms/batch; D1 ${res.trips} round trips = ${res.tripsPerBatch.toFixed(2)}/batch [${res.kinds}]` +
    `${res.queueSends ? `; queue sends ${res.queueSends}` : ""}${Number.isFinite(res.cpuUsPerEvent) ? `; workerd CPU ${res.cpuUsPerEvent.toFixed(0)} µs/event` : ""}` +
    `${res.otherTrips ? `; other workers ${res.otherTrips}` : ""}${ds}${res.unacked ? `; ${res.unacked} not acked first time` : ""})`
  );
}
