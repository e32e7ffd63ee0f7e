// Groups: pending entries by error signature ("what is failing?"), largest
// first, each linking to its entries.
import { h, heading, loadInto, table, cell, select, labelled } from "../dom.js";
import { get, query } from "../api.js";
import { STATUSES } from "./entries.js";

export function groups(main, { params }) {
  const status = params.get("status") ?? "";
  const region = h("section", { "aria-label": "Groups" });
  const form = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/groups${query({ status: form.elements.status.value })}`;
  } }, labelled("Status", select("status", [["", "pending (default)"], ...STATUSES.filter((s) => s !== "evicted")], status)), h("button", { type: "submit" }, "Apply"));
  main.append(heading("Groups"), h("p", { class: "muted" }, "Dead-letter entries grouped by error signature, largest first."), form, region);
  const now = Date.now();
  loadInto(region, "the groups", () => get(`webhook-dlq/groups${query({ status })}`), (d) =>
    d.items.length
      ? table(d.items, [
        ["Count", (g) => String(g.count)],
        ["Code", (g) => g.code],
        ["Class", (g) => g.class],
        ["Sources", (g) => g.sources.join(", ")],
        ["Destinations", (g) => (g.destinations ?? []).join(", ") || "—"],
        ["Message", (g) => h("span", { class: "msg" }, g.message ?? "")],
        ["First seen", (g) => cell("first_seen_at", g.first_seen_at, now)],
        ["Last seen", (g) => cell("last_seen_at", g.last_seen_at, now)],
        ["", (g) => h("span", { class: "links" },
          h("a", { href: `#/entries${query({ signature: g.signature, status })}` }, "Entries"), " ",
          h("a", { href: `#/entry/${encodeURIComponent(g.sample_id)}` }, "Sample"))],
      ], "Incident groups")
      : h("p", {}, "No group: nothing matches."));
}
