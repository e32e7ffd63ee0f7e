// Overview: the figures of one stats answer, as that answer gives them
// (ages are "as of" the answer, whose fetch time is shown), the hourly plot,
// each destination (its breaker, parked deliveries, last hour and rate), firing
// alarms and the database size.
import { h, replace, heading, age, duration, table, fields, apiError, cell } from "../dom.js";
import { get } from "../api.js";
import { hourlyPlot } from "./plot.js";

/** The stats keys this view shows in their own places; any other key is listed under "More figures". */
const SHOWN = ["depth", "oldest_pending_age_s", "ingress_last_hour", "dominant_failure_code", "breakers", "parked", "destinations", "hourly", "storage", "by_status", "by_class", "replay"];

export function overview(main) {
  const stats = h("section", { "aria-label": "Stats" });
  const alarms = h("section", { "aria-labelledby": "alarms-h" });
  main.append(heading("Overview"), h("p", {}, h("button", { type: "button", onclick: () => load() }, "Refresh")), alarms, stats);
  const load = async () => {
    replace(stats, h("p", { class: "loading" }, "Loading the stats…"));
    stats.setAttribute("aria-busy", "true");
    replace(alarms, h("h2", { id: "alarms-h" }, "Firing alarms"), h("p", { class: "loading" }, "Loading the alarms…"));
    const [s, a] = await Promise.all([get("webhook-dlq/stats"), get("alerts")]);
    const fetchedAt = Date.now();
    stats.removeAttribute("aria-busy");
    replace(stats, s.ok ? renderStats(s.data, fetchedAt) : apiError(s, "Reading the stats"));
    replace(alarms, h("h2", { id: "alarms-h" }, "Firing alarms"), a.ok ? firing(a.data, fetchedAt) : apiError(a, "Reading the alerts"));
    performance.mark("overview-rendered");
  };
  load();
}

/** One figure; `data-value` holds the answer's own value, so a reader (or a test) can check it. */
const figure = (label, key, value, title, raw) =>
  h("div", { class: "figure" }, h("dt", {}, label), h("dd", { "data-stat": key, "data-value": JSON.stringify(raw ?? null), title }, value));

function renderStats(d, fetchedAt) {
  const asOf = `as of the stats answer fetched ${new Date(fetchedAt).toISOString()}`;
  const oldest = d.oldest_pending_age_s;
  const parked = d.parked ?? {};
  return h("div", {},
    h("p", { class: "muted" }, "Fetched ", age(fetchedAt, fetchedAt), " (", h("span", { "data-fetched": fetchedAt }, new Date(fetchedAt).toISOString()), ")."),
    h("dl", { class: "figures" },
      figure("Pending dead letters (depth)", "depth", String(d.depth), undefined, d.depth),
      figure("Oldest pending", "oldest_pending_age_s", oldest === null || oldest === undefined ? "none pending" : duration(oldest), asOf, oldest),
      figure("Dead letters in the last hour", "ingress_last_hour", String(d.ingress_last_hour), undefined, d.ingress_last_hour),
      figure("Dominant code", "dominant_failure_code", d.dominant_failure_code ?? "none", undefined, d.dominant_failure_code),
      figure("Parked deliveries", "parked.count", String(parked.count), undefined, parked.count),
      figure("Oldest parked", "parked.oldest_age_s", typeof parked.oldest_age_s === "number" ? duration(parked.oldest_age_s) : "none parked", asOf, parked.oldest_age_s),
      storageFigure(d.storage)),
    h("h2", {}, "Dead letters and parked events per hour (last 24 h)"),
    hourlyPlot(d.hourly),
    h("h2", {}, "Destinations"),
    d.destinations?.length
      ? table(d.destinations, [["Destination", (x) => x.destination],
        ["Breaker", (x) => (x.breaker ? h("span", { class: `state ${String(x.breaker.state).toLowerCase()}` }, x.breaker.state) : "CLOSED (no record)")],
        ["Since", (x) => (x.breaker ? cell("since", x.breaker.since, fetchedAt) : "—")],
        ["Parked", (x) => String(x.parked.count)], ["Oldest parked", (x) => (typeof x.parked.oldest_age_s === "number" ? duration(x.parked.oldest_age_s) : "—")],
        ["Last hour", (x) => `${x.deliveries_last_hour.delivered} delivered, ${x.deliveries_last_hour.dead_lettered} dead-lettered of ${x.deliveries_last_hour.total}`],
        ["Rate", (x) => (typeof x.rate_per_s === "number" ? `${x.rate_per_s}/s` : "—")]], "Destinations")
      : h("p", { class: "muted" }, "No destination has a breaker, a parked delivery or a delivery in the last hour."),
    h("h2", {}, "Entries by status and class"),
    h("div", { class: "pair" }, h("div", {}, h("h3", {}, "By status"), fields(d.by_status)), h("div", {}, h("h3", {}, "By class"), fields(d.by_class)),
      h("div", {}, h("h3", {}, "Replay outcomes"), fields(d.replay))),
    more(d));
}

/** The database size against its cap (DESIGN §5); until the lifecycle work adds it, says so. */
function storageFigure(storage) {
  if (!storage || typeof storage.size_bytes !== "number") {
    return figure("Database size", "storage", h("span", { class: "muted" }, "not in the stats answer (storage.size_bytes)"));
  }
  const pct = storage.cap_bytes ? ` (${Math.round((100 * storage.size_bytes) / storage.cap_bytes)}%)` : "";
  return figure("Database size / cap", "storage",
    [bytes(storage.size_bytes), h("span", { class: "muted" }, ` of ${storage.cap_bytes ? bytes(storage.cap_bytes) : "no cap"}${pct}`)]);
}

const bytes = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${(n / 1e3).toFixed(1)} KB`);

/** Every other figure of the answer, so a field added to stats is visible at once. */
function more(d) {
  const rest = Object.fromEntries(Object.entries(d).filter(([k]) => !SHOWN.includes(k)));
  const storage = d.storage ? [h("h3", {}, "Storage"), fields(d.storage)] : [];
  return h("div", {},
    h("details", {}, h("summary", {}, "More figures from the stats answer"), storage, fields(rest)),
    h("p", {}, h("a", { href: "#/archive" }, "Archive objects"), " (what the R2 archive holds, by table and day)"));
}

function firing(data, now) {
  const items = (data.items ?? []).filter((a) => a.state === "firing");
  if (!items.length) return h("p", { "data-alarms": "0" }, "No alarm is firing.");
  return table(items, [
    ["Alarm", (a) => a.id],
    ["Kind", (a) => a.kind],
    ["Subject", (a) => a.subject],
    ["Since", (a) => cell("since", a.since, now)],
    ["Detail", (a) => fields(a.detail, { now })],
  ], "Firing alarms");
}

