// One entry: the actions its answer lists (the API decides which; this
// page holds no copy of the rules), its envelope grouped for reading
// (envelope.js), and its audit records. Each action takes a reason typed
// into the page and shows the API's answer.
import { h, replace, heading, loadInto, facts, label, cell, apiError } from "../dom.js";
import { get, post, query } from "../api.js";
import { reasonField, confirmStep } from "./actions.js";
import { auditTable } from "./audit-table.js";
import { envelopeGroups, tombstoneFacts } from "./envelope.js";

export function entry(main, { arg: id }) {
  const body = h("section", { "aria-label": "Entry" });
  const trail = h("section", { "aria-labelledby": "trail-h" });
  main.append(heading(`Entry ${id}`), body, trail);
  const now = () => Date.now();
  const load = async () => {
    await loadInto(body, "the entry", () => get(`webhook-dlq/${encodeURIComponent(id)}`), (d) =>
      d.status === "evicted" ? tombstone(d, now(), load) : envelopeView(d, now(), load));
    await loadInto(trail, "the audit records", () => get(`audit${query({ entry_id: id })}`), (d) => auditTable(d.items, now(), "trail-h"));
  };
  load();
}

/** The button text of an action the API names (`unarchive` → "Unarchive"). */
const buttonText = (action) => action.charAt(0).toUpperCase() + action.slice(1);

/** What a discard erases, said before its Confirm (DESIGN §6: destructive actions confirm in the page). */
const DISCARD_WARNING = "Discard erases the stored payload (the original event and the excerpt) for good; identity, evidence and audit stay.";

/** The actions panel: one reason field and a button per action the answer lists, the answer below. */
function actionsPanel(id, actions, reload) {
  const answer = h("div", { role: "status", class: "answer" });
  const panel = h("div", { class: "actions card", "data-actions": actions.join(" ") }, h("h2", {}, "Actions"));
  if (!actions.length) return append(panel, h("p", { class: "muted" }, "Nothing can be done to this entry in its status."), answer);
  const reason = reasonField();
  const run = async (name, action) => {
    if (!reason.check()) return;
    for (const b of panel.querySelectorAll("button")) b.disabled = true;
    replace(answer, h("p", { class: "loading" }, `${name}…`));
    const res = await post(`webhook-dlq/${encodeURIComponent(id)}/${encodeURIComponent(action)}`, { reason: reason.value() });
    for (const b of panel.querySelectorAll("button")) b.disabled = false;
    if (!res.ok) return replace(answer, apiError(res, name));
    reason.clear();
    const now = Date.now();
    replace(answer, h("div", { class: "ok" }, h("strong", {}, `${name}: HTTP ${res.status}`),
      facts(Object.entries(res.data ?? {}).map(([k, v]) => [label(k), cell(k, v, now)]))));
    // The answer stays on screen while the entry and its audit reload.
    const kept = answer.cloneNode(true);
    await reload();
    document.querySelector(".actions .answer")?.replaceWith(kept);
  };
  const buttons = actions.map((action) => {
    const name = buttonText(action);
    if (action !== "discard") return h("button", { type: "button", onclick: () => run(name, action) }, name);
    return h("button", { type: "button", class: "danger", onclick: () => {
      if (!reason.check()) return;
      confirmStep(answer, DISCARD_WARNING, () => run(name, action));
    } }, name);
  });
  return append(panel, reason.el, h("div", { class: "buttons" }, buttons), answer);
}

const append = (el, ...kids) => (el.append(...kids), el);

/** The status line: the status and where to look next. */
function statusLine(d, text) {
  return h("p", { class: "status-line" }, h("span", { class: `status ${d.status}`, "data-status": d.status }, d.status), text ? h("span", {}, text) : null,
    d.event_id ? h("a", { href: `#/story?q=${encodeURIComponent(d.event_id)}` }, "Story of this event") : null,
    d.error_signature ? h("a", { href: `#/entries${query({ signature: d.error_signature })}` }, "Entries with this signature") : null);
}

function envelopeView(d, now, reload) {
  return h("div", {},
    statusLine(d),
    actionsPanel(d.id, d.actions ?? [], reload),
    envelopeGroups(d, now));
}

/** An evicted entry (its tombstone): where the archive holds it, and Restore when it can be restored. */
function tombstone(d, now, reload) {
  return h("div", {},
    statusLine(d, "This entry left D1 for the archive."),
    actionsPanel(d.id, d.actions ?? [], reload),
    h("section", { class: "card group", "aria-label": "Tombstone" }, h("h2", {}, "Tombstone"), tombstoneFacts(d, now)));
}
