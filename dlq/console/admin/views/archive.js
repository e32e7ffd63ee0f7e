// Archive objects: what the R2 archive holds, by table and UTC day, with
// each object's key and row count (GET /api/v1/admin/archive, DESIGN §4/§5),
// in the pages of the answer's `cursor`, like the other lists. Every field
// of an object is shown, the ones DESIGN names first under their labels.
import { h, heading, loadInto, labelled, table, cell, fields, label, age } from "../dom.js";
import { get, query } from "../api.js";
import { pager } from "./pager.js";

/** An object's fields as DESIGN names them, in reading order: key, table, day, rows; any other follows under its readable name. */
const KNOWN = [
  ["key", "Key", (v) => h("span", { class: "mono" }, v ?? "—")],
  ["table", "Table", (v) => v ?? "—"],
  ["day", "UTC day", (v) => v ?? "—"],
  ["rows", "Rows", (v) => String(v ?? "—")],
  ["bytes", "Bytes", (v) => String(v ?? "—")],
  ["uploaded", "Uploaded", (v, now) => (typeof v === "number" ? age(v, now) : "—")],
];

export function archive(main, { params }) {
  const filter = { day: params.get("day") ?? "", table: params.get("table") ?? "" };
  const cursor = params.get("cursor") ?? "";
  const form = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/archive${query({ day: form.elements.day.value, table: form.elements.table.value.trim() })}`;
  } },
  labelled("UTC day", h("input", { name: "day", type: "date", value: filter.day })),
  labelled("Table", h("input", { name: "table", value: filter.table, autocomplete: "off", placeholder: "events" })),
  h("button", { type: "submit" }, "Apply"));
  const region = h("section", { "aria-label": "Archive objects" });
  main.append(heading("Archive objects"), h("p", { class: "muted" }, "Read one with: wrangler r2 object get hookrelay-archive/<key>"), form, region);
  loadInto(region, "the archive", () => get(`archive${query({ ...filter, cursor })}`), (d) => {
    const now = Date.now();
    if (!Array.isArray(d?.items)) return fields(d, { now });
    const pages = pager("#/archive", filter, cursor, d.cursor);
    const list = d.items;
    if (!list.length) return h("div", {}, h("p", { "data-count": "0" }, cursor ? "No more objects." : "The archive holds no object for this filter."), pages);
    const known = KNOWN.map(([k]) => k);
    const more = [...new Set(list.flatMap((o) => Object.keys(o)))].filter((k) => !known.includes(k));
    const columns = [...KNOWN.map(([k, name, show]) => [name, (o) => show(o[k], now)]), ...more.map((k) => [label(k), (o) => cell(k, o[k], now)])];
    return h("div", {}, h("p", { class: "muted", "data-count": list.length }, `${list.length} objects on this page.`),
      table(list, columns, "Archive objects"), pages);
  });
}
