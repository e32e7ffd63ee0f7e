// Holds a worker's queue sends instead of delivering them, so a test can
// keep the messages a release left on its queues across a restart of the
// workers (Miniflare's queue broker does not outlive one) and hand them to
// whatever runs next, as Cloudflare's queues would. A Miniflare wrapped
// binding replaces each named producer with an object that prints one
// stdout line per message (`QTAP <binding> <delaySeconds> <body>`) and
// sends nothing; the tap worker keeps the real producers under the same
// names, for `release` (see bench/queue-counter.mjs for the same wrapping,
// which counts and forwards).
//
// worker-rs accepts a queue binding only if its JS constructor is named
// `WorkerQueue`, hence the class name below.

const LINE = /^QTAP (\S+) (\d+) (.*)$/;
export const QUEUE_TAP_WORKER = "queue-tap";

const SCRIPT = `
class WorkerQueue {
  constructor(binding) { this.binding = binding; }
  async send(body, options) { hold(this.binding, body, options); }
  async sendBatch(messages, options) { for (const m of messages) hold(this.binding, m.body, { ...options, ...m }); }
}
function hold(binding, body, options) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  console.log("QTAP " + binding + " " + (options?.delaySeconds ?? 0) + " " + text.replaceAll("\\n", " "));
}
export default function (env) { return new WorkerQueue(env.Q_TAP_BINDING); }
`;

/**
 * A tap for the producers `bindings` of one worker: `wrap(options)` returns
 * that worker's Miniflare options with those producers held, and `worker`
 * is the tap worker to run beside it (it gets the real producers when
 * `wrap` runs).
 */
export function queueTap(bindings) {
  const worker = { name: QUEUE_TAP_WORKER, modules: true, script: SCRIPT, queueProducers: {} };
  const wrap = (w) => {
    const queueProducers = { ...w.queueProducers };
    const wrappedBindings = { ...w.wrappedBindings };
    for (const b of bindings) {
      if (!queueProducers[b]) throw new Error(`queue-tap: worker ${w.name} has no queue producer ${b}`);
      worker.queueProducers[b] = queueProducers[b];
      delete queueProducers[b];
      wrappedBindings[b] = { scriptName: QUEUE_TAP_WORKER, bindings: { Q_TAP_BINDING: b } };
    }
    return { ...w, queueProducers, wrappedBindings };
  };
  return { worker, wrap };
}

/** The messages held so far, in the order sent, from the workers' log lines. */
export function held(lines) {
  return lines.flatMap((line) => {
    const m = LINE.exec(line);
    return m ? [{ binding: m[1], delaySeconds: Number(m[2]), body: m[3], json: JSON.parse(m[3]) }] : [];
  });
}

/** Sends held messages on to their queues through the tap's real producers (`mf` the running Miniflare). */
export async function release(mf, messages, { delaySeconds } = {}) {
  for (const m of messages) {
    const producer = await mf.getQueueProducer(m.binding, QUEUE_TAP_WORKER);
    await producer.send(m.body, { contentType: "text", ...(delaySeconds !== undefined ? { delaySeconds } : {}) });
  }
}
