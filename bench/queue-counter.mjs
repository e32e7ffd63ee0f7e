// Counts queue sends from outside the product code, the way d1-counter.mjs
// counts D1 round trips: a Miniflare wrapped binding replaces each named
// queue producer of a worker (`env.DELIVERIES`, …) with an object that
// prints one stdout line per call (`send`, `sendBatch`) and forwards it to
// the real producer, held by the counter worker `queue-counter`.
//
// worker-rs accepts a queue binding only if its JS constructor is named
// `WorkerQueue` (`Queue::TYPE_NAME` in worker-0.8.7/src/queue.rs), hence
// the class name below; the relay's own sends (platform/src/queue_send.rs)
// call `send` and `sendBatch` on the object it is handed.

/** The counter's stdout line: `QSEND <worker> <binding> <kind> <messages>`. */
const LINE = /^QSEND (\S+) (\S+) (\S+) (\d+)/;
export const QUEUE_COUNTER_WORKER = "queue-counter";

const SCRIPT = `
const REAL = Symbol("real");
class WorkerQueue {
  constructor(real, label, binding) { this[REAL] = real; this.label = label; this.binding = binding; }
  send(body, options) { trip(this, "send", 1); return this[REAL].send(body, options); }
  sendBatch(messages, options) { trip(this, "sendBatch", messages.length); return this[REAL].sendBatch(messages, options); }
}
// Written before the call, so a call that throws still counts.
function trip(q, kind, messages) { console.log("QSEND " + q.label + " " + q.binding + " " + kind + " " + messages); }
export default function (env) { return new WorkerQueue(env[env.Q_COUNTER_BINDING], env.Q_COUNTER_LABEL, env.Q_COUNTER_BINDING); }
`;

/**
 * `workers` with the producers `bindings` of worker `name` routed through
 * the counter, plus the counter worker (last: a wrapped worker may not be
 * the entry), which holds the real producers under the same names. Leave
 * out a binding that something outside the worker also sends through
 * (the bench's own `getQueueProducer("WEBHOOKS", …)`).
 */
export function wrapQueues(workers, name, bindings) {
  const real = {};
  const wrapped = workers.map((w) => {
    if (w.name !== name) return w;
    const queueProducers = { ...w.queueProducers };
    const wrappedBindings = { ...w.wrappedBindings };
    for (const b of bindings) {
      if (!queueProducers[b]) throw new Error(`queue-counter: worker ${name} has no queue producer ${b}`);
      real[b] = queueProducers[b];
      delete queueProducers[b];
      wrappedBindings[b] = { scriptName: QUEUE_COUNTER_WORKER, bindings: { Q_COUNTER_LABEL: name, Q_COUNTER_BINDING: b } };
    }
    return { ...w, queueProducers, wrappedBindings };
  });
  return [...wrapped, { name: QUEUE_COUNTER_WORKER, modules: true, script: SCRIPT, queueProducers: real }];
}

/** Tallies the counter's lines by worker and binding: `onLine` returns true for a counter line. */
export class QueueTally {
  constructor() {
    this.byBinding = {};
  }
  onLine(line) {
    const m = LINE.exec(line);
    if (!m) return false;
    const b = (this.byBinding[`${m[1]} ${m[2]}`] ??= { calls: 0, messages: 0 });
    b.calls += 1;
    b.messages += Number(m[4]);
    return true;
  }
  /** Send calls and messages of `worker`'s producer `binding` so far. */
  of(worker, binding) {
    return this.byBinding[`${worker} ${binding}`] ?? { calls: 0, messages: 0 };
  }
  /** Every binding of `worker`: `DELIVERIES:20/2000` (calls/messages). */
  summary(worker) {
    return Object.entries(this.byBinding)
      .filter(([k]) => k.startsWith(`${worker} `))
      .map(([k, v]) => `${k.slice(worker.length + 1)}:${v.calls}/${v.messages}`)
      .join(" ");
  }
}
