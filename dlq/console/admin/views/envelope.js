// One entry's envelope as an engineer reads it: each field once, under a
// label a person reads, grouped as failure, timing, identity, the attempt
// timeline, then the event. Times show as ages with the exact instant
// beside them (the entry id is the page's heading; the status line links
// the event's story and the signature's entries). A field this page does
// not know yet is still shown, under its name made readable, in the group
// it came in.
import { h, facts, when, label, cell, table } from "../dom.js";

/** How the message reached the DLQ (the envelope's `kind`, the entry's `arrival`), in words. */
const ARRIVALS = { poison_handoff: "Poison hand-off (sent at once by the consumer)", retries_exhausted: "Retries exhausted (moved by the queue)" };
/** What the entry is the failure of (`identity.kind`). */
const KINDS = { ingest: "ingest (the event never reached its deliveries)", delivery: "delivery (one destination's failure)" };

const mono = (v) => (v === undefined || v === null ? v : h("span", { class: "mono" }, String(v)));
const text = (v) => (v === undefined || v === null ? v : String(v));
const at = (v, now) => (v === undefined ? v : v === null ? null : when(v, now));

/** The fields of `obj` not named in `known`, under readable labels. */
function others(obj, known, now) {
  return Object.entries(obj ?? {}).filter(([k]) => !known.includes(k)).map(([k, v]) => [label(k), cell(k, v, now)]);
}

/** The listing fields the groups below show (any other is listed under Identity). */
const SUMMARY = ["id", "kind", "arrival", "status", "event_id", "idempotency_key", "source", "destination", "error_code", "error_class", "error_signature", "content_hash",
  "attempts", "seen_count", "replay_attempts", "created_at", "last_seen_at", "replayed_at", "actions", "envelope"];

/** A group: a card with its heading and its facts. */
const group = (title, ...body) => h("section", { class: "card group", "aria-label": title }, h("h2", {}, title), body);

/** The envelope of entry `d` (the GET answer: its listing fields plus `envelope`), grouped. */
export function envelopeGroups(d, now) {
  const env = d.envelope ?? {};
  const f = env.failure ?? {};
  const t = env.timing ?? {};
  const id = env.identity ?? {};
  const input = env.input ?? {};
  const history = env.delivery?.history ?? [];
  const signature = f.signature ?? d.error_signature;
  const failure = group("Failure", facts([
    ["Code", mono(f.code ?? d.error_code)],
    ["Class", text(f.class ?? d.error_class)],
    ["Message", f.message === undefined ? undefined : h("span", { class: "msg" }, f.message)],
    ["Signature", mono(signature)],
    ["Failed replays", text(d.replay_attempts)],
    ["Seen", d.seen_count === undefined ? undefined : d.seen_count === 1 ? "once" : `${d.seen_count} times (identical dead letters joined this entry)`],
    ...others(f, ["code", "class", "message", "signature"], now),
  ]));
  const timing = group("Timing", facts([
    ["Enqueued", at(t.enqueued_at_ms, now)],
    ["Received", at(t.received_at_ms, now)],
    ["First attempt", at(t.first_attempt_at_ms, now)],
    ["Last attempt", at(t.last_attempt_at_ms, now)],
    ["Dead-lettered", at(t.dead_lettered_at_ms ?? d.created_at, now)],
    ["Last seen", d.seen_count > 1 ? at(d.last_seen_at, now) : undefined],
    ["Replayed", d.replayed_at ? at(d.replayed_at, now) : undefined],
    ...others(t, ["enqueued_at_ms", "received_at_ms", "first_attempt_at_ms", "last_attempt_at_ms", "dead_lettered_at_ms"], now),
  ]));
  const eventId = id.event_id ?? d.event_id;
  const arrival = env.kind ?? d.arrival;
  const kind = id.kind ?? d.kind ?? "ingest";
  const identity = group("Identity", facts([
    ["Kind", h("span", { "data-kind": kind }, KINDS[kind] ?? kind)],
    ["How it got here", arrival === undefined ? undefined : ARRIVALS[arrival] ?? arrival],
    ["Event", mono(eventId)],
    ["Idempotency key", mono(id.idempotency_key ?? d.idempotency_key)],
    ["Source", text(id.source ?? d.source)],
    ["Destination", ((v) => v && h("span", { "data-destination": v }, v))(id.destination ?? d.destination)],
    ["Queue", mono(id.queue)],
    ["Queue message", mono(id.queue_message_id)],
    ["Delivery id", mono(env.transport?.delivery_id)],
    ["Content hash", mono(input.content_hash ?? d.content_hash)],
    ...others(id, ["kind", "event_id", "idempotency_key", "source", "destination", "queue", "queue_message_id"], now),
    ...others(d, SUMMARY, now),
  ]));
  const attempts = env.delivery?.attempts ?? d.attempts;
  const timeline = group("Attempts",
    h("p", { class: "muted" }, attempts === 1 ? "1 attempt before it was dead-lettered." : `${attempts ?? "?"} attempts before it was dead-lettered.`),
    history.length
      ? h("ol", { class: "timeline" }, history.map((a) => h("li", {},
        h("strong", {}, `Attempt ${a.attempt}`), " · ", when(a.at_ms, now), h("br"),
        h("code", {}, a.code), ` (${a.class})`, a.cause ? [" caused by ", h("code", {}, a.cause)] : null, " ",
        h("span", { class: "msg" }, a.message))))
      : h("p", { class: "muted" }, "No attempt recorded."));
  return h("div", {},
    h("div", { class: "groups" }, failure, timing, identity, timeline),
    eventPart(env, input));
}

/** The event: its size, excerpt, redacted headers and the whole envelope. */
function eventPart(env, input) {
  const size = input.body_bytes === undefined ? "size unknown" : `${input.body_bytes} bytes`;
  return h("section", { "aria-label": "Event" },
    h("h2", {}, "Event"),
    h("p", { class: "muted" }, `Body: ${size}`, input.excerpt_truncated ? "; the excerpt shows the first 4 KB" : "",
      input.body_ref ? [" (stored apart, under ", h("span", { class: "mono" }, input.body_ref), ")"] : null, "."),
    h("h3", {}, "Excerpt"),
    input.event_missing ? h("p", { role: "note" }, "The event's row was gone (swept) when this delivery was dead-lettered: the original is the delivery message alone, and its body is unknown.") : null,
    h("pre", { class: "excerpt", tabindex: "0" }, input.excerpt ?? ""),
    h("h3", {}, "Request headers (redacted)"),
    table(Object.entries(env.transport?.headers ?? {}), [["Header", ([k]) => k], ["Value", ([, v]) => h("span", { class: "mono" }, v)]], "Request headers"),
    h("details", {}, h("summary", {}, "The whole envelope (JSON)"), h("pre", { tabindex: "0" }, JSON.stringify(env, null, 2))));
}

/** Why a tombstone's entry left D1, in words. */
const CAUSES = { evicted: "Evicted at capacity", swept: "Swept by retention" };

/** A tombstone (an entry that left D1 for the archive), each field under its label. */
export function tombstoneFacts(d, now) {
  return facts([
    ["Left D1", at(d.evicted_at, now)],
    ["Why", d.cause === undefined ? undefined : CAUSES[d.cause] ?? d.cause],
    ["Status it had", d.prior_status === undefined ? undefined : d.prior_status],
    ["Archive key", mono(d.archive_key)],
    ["Event", mono(d.event_id)],
    ["Source", text(d.source)],
    ["Code", mono(d.error_code)],
    ["Content hash", mono(d.content_hash)],
    ...others(d, ["id", "evicted_at", "cause", "prior_status", "archive_key", "event_id", "source", "error_code", "content_hash", "status", "actions"], now),
  ]);
}
