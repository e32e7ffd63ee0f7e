// Deadlines that follow what the relay schedules (issue 39).
//
// A wait on the relay (a retry, a drain, a dead letter, a paced replay)
// lasts as long as the relay schedules that work: the retry delays, each
// queue's max_batch_timeout, the breaker's threshold and cooldown, a rate's
// spacing. A deadline guessed for one path goes stale when the test takes
// another one: five quick 5xx answers open a breaker, which parks the
// delivery for a whole cooldown (60 s by default) instead of retrying it at
// once. These helpers add up the schedule from the settings the relay runs
// with (`relay.settings()`, tests/support/harness.mjs), and `deadline` adds
// one margin for the work itself. They never sleep: a test still polls
// with waitFor, only its deadline comes from here.

/**
 * What the work itself may take beyond what the relay schedules (workerd,
 * D1, the queue broker and this process on a loaded 2-core runner): the
 * deadline waitFor gives a wait with nothing scheduled.
 */
export const MARGIN_MS = 15_000;

/**
 * The relay's defaults for settings that are not in wrangler.toml's [vars]
 * (DESIGN §1; core::breaker::BreakerConfig::default).
 */
const BREAKER_DEFAULTS = { BREAKER_FAILURE_THRESHOLD: "5", BREAKER_COOLDOWN_S: "60", BREAKER_OPEN_ACTION: "park" };

/** A waitFor timeoutMs: the schedules (ms) added up, plus MARGIN_MS. */
export const deadline = (...scheduleMs) => scheduleMs.reduce((a, b) => a + b, 0) + MARGIN_MS;

/** The delay (s) after failed attempt `n`, 1-based; past the list's end its last delay repeats (core::retry_policy::delay_after). */
export function retryDelayS(delays, n) {
  return delays[Math.min(n, delays.length) - 1];
}

/** The most a message waits for its batch on `queue` (its consumer's maxBatchTimeout), in ms. */
function hopMs(consumers, queue) {
  const consumer = consumers[queue];
  if (!consumer) throw new Error(`no consumer of queue ${queue}: nothing would deliver its messages`);
  return (consumer.maxBatchTimeout ?? 0) * 1000;
}

/** The relay's delivery settings, with their defaults. */
function deliverySettings(relay) {
  const { vars, consumers } = relay.settings();
  const v = { ...BREAKER_DEFAULTS, ...vars };
  return {
    delays: String(v.RETRY_DELAYS_S).split(",").map((d) => Number(d.trim())),
    threshold: Number(v.BREAKER_FAILURE_THRESHOLD),
    openAction: v.BREAKER_OPEN_ACTION,
    cooldownMs: Number(v.BREAKER_COOLDOWN_S) * 1000,
    webhooksHopMs: hopMs(consumers, v.QUEUE_WEBHOOKS),
    deliveriesHopMs: hopMs(consumers, v.QUEUE_DELIVERIES),
    controlHopMs: hopMs(consumers, v.QUEUE_CONTROL),
    // The DLQ worker's queue: the relay's dead_letter_queue.
    dlqHopMs: hopMs(consumers, consumers[v.QUEUE_DELIVERIES].deadLetterQueue),
    attemptsBudget: consumers[v.QUEUE_DELIVERIES].maxRetries + 1,
  };
}

/**
 * From a breaker opening to its drain's probe: one cooldown (the drain
 * step's delay is rounded up to whole seconds, never past the cooldown),
 * then the step's control-queue hop.
 */
export function probeMs(relay) {
  const s = deliverySettings(relay);
  return s.cooldownMs + s.controlHopMs;
}

/**
 * The longest the relay schedules between accepting an event and the
 * attempt that follows `failures` failed ones at one destination (whose
 * breaker was closed with no failures): the `webhooks` hop, then per
 * attempt its `deliveries` hop, its call (`callMs`: the destination's
 * answer time, or its timeout for one that hangs) and, after a failure,
 * the retry delay. When the failures reach BREAKER_FAILURE_THRESHOLD the
 * breaker opens (BREAKER_OPEN_ACTION=park): the next attempt is parked,
 * and each later one is a drain's probe, `probeMs` after the breaker
 * opened again. An upper bound: a wait that ends sooner is fine.
 */
export function deliveryScheduleMs(relay, { failures = 0, callMs = 0 } = {}) {
  const s = deliverySettings(relay);
  const retried = Math.min(failures, s.threshold);
  if (failures < s.threshold && failures + 1 > s.attemptsBudget) {
    throw new Error(`${failures} failures spend the delivery's ${s.attemptsBudget} attempts: it is dead-lettered, not delivered`);
  }
  if (failures >= s.threshold && s.openAction !== "park") {
    throw new Error(`BREAKER_OPEN_ACTION=${s.openAction}: a breaker opened by ${failures} failures is not modelled here`);
  }
  let ms = s.webhooksHopMs;
  for (let n = 1; n <= retried; n++) ms += s.deliveriesHopMs + callMs + retryDelayS(s.delays, n) * 1000;
  if (failures < s.threshold) return ms + s.deliveriesHopMs + callMs;
  // Open: the retry that follows is parked; a probe comes one cooldown
  // after each opening, and each failed probe opens it again.
  const probes = failures - s.threshold + 1;
  return ms + s.deliveriesHopMs + probes * (probeMs(relay) + callMs);
}

/**
 * The longest the relay schedules between accepting an event whose every
 * call fails and its dead letter's arrival at the DLQ worker, on the retry
 * path: the `webhooks` hop, then each of the delivery's attempts (its hop,
 * its call of `callMs`, the retry delay after all but the last), then the
 * hand-off's hop to the DLQ worker. With BREAKER_OPEN_ACTION=park a
 * breaker that opens parks the delivery instead, which this does not model.
 */
export function deadLetterScheduleMs(relay, { callMs = 0 } = {}) {
  const s = deliverySettings(relay);
  if (s.openAction === "park" && s.attemptsBudget >= s.threshold) {
    throw new Error(`${s.attemptsBudget} failures open the breaker (threshold ${s.threshold}), which parks the delivery rather than dead-lettering it`);
  }
  let ms = s.webhooksHopMs + s.dlqHopMs;
  for (let n = 1; n <= s.attemptsBudget; n++) ms += s.deliveriesHopMs + callMs + (n < s.attemptsBudget ? retryDelayS(s.delays, n) * 1000 : 0);
  return ms;
}

/**
 * The longest the relay schedules between accepting an event whose first
 * call is refused for good (a poison answer: a 4xx other than 408/429) and
 * its dead letter's arrival at the DLQ worker: the `webhooks` hop, the
 * `deliveries` hop and its call (`callMs`), then the hand-off's hop (the
 * relay hands a poison delivery to `webhooks-dlq` at once, no retry).
 */
export function poisonScheduleMs(relay, { callMs = 0 } = {}) {
  const s = deliverySettings(relay);
  return s.webhooksHopMs + s.deliveriesHopMs + callMs + s.dlqHopMs;
}

/** The spacing (ms) between two starts at `ratePerS` (core::pacing::spacing_ms). */
export const spacingMs = (ratePerS) => 1000 / ratePerS;

/**
 * How long a `deliveries` consumer's lease lasts for a batch whose longest
 * destination timeout is `timeoutMs` (core/src/deliver/lease.rs,
 * `Holder::batch`): the consumer's rate wait (2 s), two waves of calls (a
 * probe, then the rest), and the 30 s margin for the record.
 */
export const consumerLeaseMs = (timeoutMs) => 2_000 + 2 * timeoutMs + 30_000;
