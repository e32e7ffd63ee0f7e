// Audit: every decision (replay, archive, unarchive, discard, restore, job
// steps), newest first, by entry or job, in cursor pages.
import { h, heading, loadInto, labelled, age, duration } from "../dom.js";
import { get, query } from "../api.js";
import { auditTable } from "./audit-table.js";
import { pager } from "./pager.js";

export function audit(main, { params }) {
  const filter = { entry_id: params.get("entry_id") ?? "", job_id: params.get("job_id") ?? "" };
  const cursor = params.get("cursor") ?? "";
  const form = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/audit${query({ entry_id: form.elements.entry_id.value.trim(), job_id: form.elements.job_id.value.trim() })}`;
  } },
  labelled("Entry id", h("input", { name: "entry_id", value: filter.entry_id, autocomplete: "off", placeholder: "dlq_…" })),
  labelled("Job id", h("input", { name: "job_id", value: filter.job_id, autocomplete: "off" })),
  h("button", { type: "submit" }, "Apply"));
  const region = h("section", { "aria-label": "Audit records" });
  main.append(heading("Audit"), form, region);
  loadInto(region, "the audit log", () => get(`audit${query({ ...filter, cursor })}`), (d) => h("div", {},
    h("p", { class: "muted", id: "audit-held" }, "D1 holds the decisions of the last ", duration(d.retention_ms / 1000),
      " (since ", age(d.held_since), "); older ones are in the archive under ", h("code", {}, d.archived_under), "."),
    auditTable(d.items, Date.now(), "audit-h"),
    pager("#/audit", filter, cursor, d.next_cursor)));
}
