// The audit records table, shared by the entry, story, job and audit views.
import { h, table, cell } from "../dom.js";

/** A list of audit records under an `h2` with id `headingId`. */
export function auditTable(items, now, headingId) {
  return h("div", {}, h("h2", { id: headingId }, "Audit records"),
    items.length
      ? table(items, [
        ["When", (r) => cell("at", r.at, now)],
        ["Action", (r) => r.action],
        ["Outcome", (r) => h("span", { class: `outcome ${r.outcome}` }, r.outcome)],
        ["Who", (r) => r.actor],
        ["Reason", (r) => r.reason],
        ["Entry", (r) => h("a", { href: `#/entry/${encodeURIComponent(r.entry_id)}`, class: "mono" }, r.entry_id)],
        ["Job", (r) => (r.job_id ? h("a", { href: `#/job/${encodeURIComponent(r.job_id)}` }, r.job_id) : "—")],
        ["Error", (r) => (r.error_code ? `${r.error_code}: ${r.error_message ?? ""}` : "—")],
      ], "Audit records")
      : h("p", { "data-count": "0" }, "No decision recorded yet."));
}
