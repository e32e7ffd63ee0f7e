// Story: one event's whole story (the event, each delivery with its
// destination's attempts, the routes it did not match, every consumer
// attempt, every delivery step, its dead-letter entries and the decisions),
// found by event id or by idempotency key. Once retention swept the event's
// row, the archive key that holds it stands in place of the event.
import { h, heading, loadInto, fields, table, cell, labelled, age } from "../dom.js";
import { get, query } from "../api.js";
import { auditTable } from "./audit-table.js";

const EVENT_ID = /^evt_[0-9a-f]{32}$/;

export function story(main, { params }) {
  const q = params.get("q") ?? "";
  const input = h("input", { name: "q", value: q, autocomplete: "off", spellcheck: "false", placeholder: "evt_… or source:delivery-id" });
  const form = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/story${query({ q: input.value.trim() })}`;
  } }, labelled("Event id or idempotency key", input), h("button", { type: "submit" }, "Show the story"));
  const region = h("section", { "aria-label": "Story" });
  main.append(heading("Story"), form, region);
  if (q) loadInto(region, "the story", () => find(q), (d) => render(d, Date.now()));
  else region.append(h("p", { class: "muted" }, "Search for an event by its id or its idempotency key."));
}

/** The story of an event id, or of the event an idempotency key names. */
async function find(q) {
  if (EVENT_ID.test(q)) return get(`events/${q}`);
  const list = await get(`events${query({ key: q, limit: 1 })}`);
  if (!list.ok) return list;
  const first = list.data.items[0];
  if (!first) return { ok: false, status: 404, error: { code: "NOT_FOUND", message: `no event with idempotency key '${q}'` } };
  return get(`events/${first.event_id}`);
}

function render(d, now) {
  return h("div", {},
    h("h2", {}, "Event"),
    d.event ? eventPart(d.event, now) : sweptPart(d.event_archive_key),
    h("h2", {}, "Deliveries"),
    (d.deliveries ?? []).length
      ? h("div", { "data-deliveries": d.deliveries.map((x) => `${x.destination}:${x.state}`).join(" ") }, d.deliveries.map((x) => delivery(x, now)))
      : h("p", { class: "muted" }, d.event?.delivery_status === "filtered" ? "No route matched: filtered." : "No delivery."),
    (d.routes_unmatched ?? []).length
      ? h("p", { "data-unmatched": d.routes_unmatched.join(" ") }, "Routes it did not match: ", d.routes_unmatched.join(", "), ".")
      : null,
    h("h2", {}, "What happened"),
    d.steps.length
      ? h("ol", { class: "timeline", "data-steps": d.steps.map((s) => s.step).join(" ") }, d.steps.map((s) =>
        h("li", {}, age(s.at, now), " ", h("strong", {}, s.step), ` by ${s.component}`, s.code ? [" ", h("code", {}, s.code)] : null, s.detail ? [" ", h("span", { class: "msg" }, s.detail)] : null)))
      : h("p", { class: "muted" }, "No delivery step recorded."),
    h("h2", {}, "Consumer attempts"),
    d.attempts.length
      ? table(d.attempts, [["Attempt", (a) => String(a.attempt)], ["Destination", (a) => a.destination ?? "—"], ["When", (a) => cell("at", a.at, now)], ["Code", (a) => a.code], ["Class", (a) => a.class], ["Message", (a) => h("span", { class: "msg" }, a.message)]], "Consumer attempts")
      : h("p", { class: "muted" }, "No failed consumer attempt."),
    h("h2", {}, "Dead-letter entries"),
    d.dead_letters.length
      ? table(d.dead_letters, [["Entry", (e) => h("a", { href: `#/entry/${encodeURIComponent(e.id)}`, class: "mono" }, e.id)], ["Status", (e) => e.status], ["Code", (e) => e.error_code], ["Dead-lettered", (e) => cell("created_at", e.created_at, now)]], "Dead-letter entries")
      : h("p", { class: "muted" }, "Never dead-lettered."),
    auditTable(d.decisions, now, "decisions-h"));
}

/** One delivery: its destination, state and counts, then its destination's attempts. */
function delivery(x, now) {
  return h("section", { class: "card", "aria-label": `Delivery to ${x.destination}` },
    h("h3", {}, x.destination, " ", h("span", { class: `status ${x.state}` }, x.state)),
    fields({ attempts: x.attempts, delivered_at: x.delivered_at, last_error: x.last_error, parked_at: x.parked_at, park_cause: x.park_cause }, { now }),
    x.history?.length
      ? table(x.history, [["Attempt", (a) => String(a.attempt)], ["When", (a) => cell("at", a.at, now)], ["Code", (a) => a.code], ["Message", (a) => h("span", { class: "msg" }, a.message)]], `Attempts to ${x.destination}`)
      : null);
}

function eventPart(event, now) {
  return [
    h("p", {}, h("span", { class: `status ${event.delivery_status}`, "data-delivery": event.delivery_status }, event.delivery_status), " ingested ", age(event.ingested_at, now)),
    fields(event, { now, omit: ["body", "headers"] }),
    event.headers ? [h("h3", {}, "Headers (redacted)"), table(Object.entries(event.headers), [["Header", ([k]) => k], ["Value", ([, v]) => String(v)]], "Event headers")] : null,
    typeof event.body === "string" ? [h("h3", {}, "Body"), h("pre", { class: "excerpt", tabindex: "0" }, event.body)] : null,
  ];
}

/** Retention swept the event's row (with its attempts and steps); its entries and decisions are still in D1. */
function sweptPart(key) {
  return h("p", { "data-swept": "" }, "Swept to the archive: ",
    key ? h("code", { class: "mono", "data-archive-key": key }, key) : h("span", { class: "muted" }, "its key is not recorded (look under events/ in Archive)"));
}
