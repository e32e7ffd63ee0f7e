// Entries: the dead-letter list with every filter the API takes (evicted
// tombstones included), newest first, in cursor pages.
import { h, heading, loadInto, table, cell, select, labelled } from "../dom.js";
import { get, query } from "../api.js";
import { pager } from "./pager.js";

export const STATUSES = ["pending", "replayed", "poisoned", "archived", "discarded", "evicted"];
export const CLASSES = ["transient", "poison", "unknown"];
export const CODES = ["BAD_PAYLOAD", "SCHEMA_MISMATCH", "SIGNATURE_INVALID", "AUTH_EXPIRED", "TIMEOUT", "UPSTREAM_5XX", "UPSTREAM_4XX", "UPSTREAM_REDIRECT", "RATE_LIMITED", "CIRCUIT_OPEN", "D1_UNAVAILABLE", "UNKNOWN"];
export const KINDS = ["ingest", "delivery"];
export const FILTER_KEYS = ["status", "class", "code", "source", "destination", "kind", "signature"];

/** The filter fields, prefilled from `params`. */
export function filterFields(params) {
  return [
    labelled("Status", select("status", [["", "any"], ...STATUSES], params.get("status") ?? "")),
    labelled("Class", select("class", [["", "any"], ...CLASSES], params.get("class") ?? "")),
    labelled("Code", select("code", [["", "any"], ...CODES], params.get("code") ?? "")),
    labelled("Source", h("input", { name: "source", value: params.get("source") ?? "", autocomplete: "off" })),
    labelled("Destination", h("input", { name: "destination", value: params.get("destination") ?? "", autocomplete: "off" })),
    labelled("Kind", select("kind", [["", "any"], ...KINDS], params.get("kind") ?? "")),
    labelled("Signature", h("input", { name: "signature", value: params.get("signature") ?? "", autocomplete: "off", placeholder: "sig_…" })),
  ];
}

/** The filter a form holds, as an object of its non-empty fields. */
export function filterOf(form) {
  return Object.fromEntries(FILTER_KEYS.map((k) => [k, form.elements[k].value.trim()]).filter(([, v]) => v));
}

export function entries(main, { params }) {
  const filter = Object.fromEntries(FILTER_KEYS.map((k) => [k, params.get(k) ?? ""]).filter(([, v]) => v));
  const limit = params.get("limit") ?? "";
  const cursor = params.get("cursor") ?? "";
  const form = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/entries${query({ ...filterOf(form), limit: form.elements.limit.value })}`;
  } }, filterFields(params),
  labelled("Per page", h("input", { name: "limit", type: "number", min: 1, max: 200, value: limit, placeholder: "50" })),
  h("button", { type: "submit" }, "Apply"));
  const region = h("section", { "aria-label": "Entries", id: "entries" });
  main.append(heading("Entries"), form,
    h("p", {}, h("a", { href: `#/jobs${query(filter)}` }, "Create a job from this filter")), region);
  const now = Date.now();
  loadInto(region, "the entries", () => get(`webhook-dlq${query({ ...filter, limit, cursor })}`), (d) => {
    const pages = pager("#/entries", { ...filter, limit }, cursor, d.next_cursor);
    if (!d.items.length) return h("div", {}, h("p", { "data-count": "0" }, "No entry matches this filter."), pages);
    const rows = filter.status === "evicted" ? tombstoneTable(d.items, now) : entryTable(d.items, now);
    return h("div", {}, h("p", { class: "muted", "data-count": d.items.length }, `${d.items.length} on this page, newest first.`), rows, pages);
  });
}

const idLink = (id) => h("a", { href: `#/entry/${encodeURIComponent(id)}`, class: "mono" }, id);

function entryTable(items, now) {
  return table(items, [
    ["Entry", (e) => idLink(e.id)],
    ["Status", (e) => h("span", { class: `status ${e.status}` }, e.status)],
    ["Code", (e) => e.error_code],
    ["Class", (e) => e.error_class],
    ["Source", (e) => e.source ?? "—"],
    ["Destination", (e) => e.destination ?? "—"],
    ["Kind", (e) => e.kind],
    ["Attempts", (e) => String(e.attempts)],
    ["Dead-lettered", (e) => cell("created_at", e.created_at, now)],
    ["Last seen", (e) => cell("last_seen_at", e.last_seen_at, now)],
  ], "Dead-letter entries");
}

/** Tombstones (DESIGN §4: id, hash, time, archive key, status it had), every field shown. */
function tombstoneTable(items, now) {
  // The id first: it is the link that opens the tombstone (and its Restore).
  const keys = [...new Set(["id", ...items.flatMap((t) => Object.keys(t))])];
  return table(items, keys.map((k) => [k, (t) => (k === "id" ? idLink(t.id) : cell(k, t[k], now))]), "Evicted entries (tombstones)");
}
