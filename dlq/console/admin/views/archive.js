// Archive objects: what the R2 archive holds, by table and UTC day, with
// each object's key and row count (GET /api/v1/admin/archive, DESIGN §4/§5).
// Every field of the answer is shown as it comes, so the page assumes no
// more of its shape than DESIGN gives.
import { h, heading, loadInto, labelled, table, cell, fields } from "../dom.js";
import { get, query } from "../api.js";

export function archive(main, { params }) {
  const filter = { day: params.get("day") ?? "", table: params.get("table") ?? "" };
  const form = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/archive${query({ day: form.elements.day.value, table: form.elements.table.value.trim() })}`;
  } },
  labelled("UTC day", h("input", { name: "day", type: "date", value: filter.day })),
  labelled("Table", h("input", { name: "table", value: filter.table, autocomplete: "off", placeholder: "events" })),
  h("button", { type: "submit" }, "Apply"));
  const region = h("section", { "aria-label": "Archive objects" });
  main.append(heading("Archive objects"), h("p", { class: "muted" }, "Read one with: wrangler r2 object get hookrelay-archive/<key>"), form, region);
  loadInto(region, "the archive", () => get(`archive${query(filter)}`), (d) => {
    const now = Date.now();
    const list = Array.isArray(d) ? d : Object.values(d ?? {}).find(Array.isArray);
    if (!list) return fields(d, { now });
    if (!list.length) return h("p", { "data-count": "0" }, "The archive holds no object for this filter.");
    const keys = [...new Set(list.flatMap((o) => Object.keys(o)))];
    return table(list, keys.map((k) => [k, (o) => cell(k, o[k], now)]), "Archive objects");
  });
}
