// One entry: its envelope, the attempt history as a timeline, the excerpt
// and the redacted headers, its audit records, and the actions. Each action
// takes a reason typed into the page and shows the API's answer.
import { h, replace, heading, loadInto, fields, table, age, apiError } from "../dom.js";
import { get, post, query } from "../api.js";
import { reasonField, confirmStep } from "./actions.js";
import { auditTable } from "./audit-table.js";

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

/** The actions panel: one reason field, a button per action, the answer below. */
function actionsPanel(id, names, reload) {
  const reason = reasonField();
  const answer = h("div", { role: "status", class: "answer" });
  const panel = h("div", { class: "actions card" });
  const run = async (name) => {
    if (!reason.check()) return;
    for (const b of panel.querySelectorAll("button")) b.disabled = true;
    replace(answer, h("p", { class: "loading" }, `${name}…`));
    const res = await post(`webhook-dlq/${encodeURIComponent(id)}/${name.toLowerCase()}`, { reason: reason.value() });
    for (const b of panel.querySelectorAll("button")) b.disabled = false;
    if (!res.ok) return replace(answer, apiError(res, name));
    reason.clear();
    replace(answer, h("div", { class: "ok" }, h("strong", {}, `${name}: HTTP ${res.status}`), fields(res.data, { now: Date.now() })));
    // The answer stays on screen while the entry and its audit reload.
    const kept = answer.cloneNode(true);
    await reload();
    document.querySelector(".actions .answer")?.replaceWith(kept);
  };
  const buttons = names.map((name) => {
    if (name !== "Discard") return h("button", { type: "button", onclick: () => run(name) }, name);
    return h("button", { type: "button", class: "danger", onclick: () => {
      if (!reason.check()) return;
      confirmStep(answer, "Discard erases the stored payload (the original event and the excerpt) for good; identity, evidence and audit stay.", () => run("Discard"));
    } }, "Discard");
  });
  append(panel, h("h2", {}, "Actions"), reason.el, h("div", { class: "buttons" }, buttons), answer);
  return panel;
}

const append = (el, ...kids) => (el.append(...kids), el);

function envelopeView(d, now, reload) {
  const env = d.envelope ?? {};
  const summary = { ...d };
  delete summary.envelope;
  const history = env.delivery?.history ?? [];
  return h("div", {},
    h("p", {}, h("span", { class: `status ${d.status}`, "data-status": d.status }, d.status), " ",
      d.event_id ? h("a", { href: `#/story?q=${encodeURIComponent(d.event_id)}` }, "Story of this event") : null, " ",
      h("a", { href: `#/entries${query({ signature: d.error_signature })}` }, "Entries with this signature")),
    actionsPanel(d.id, ["Replay", "Archive", "Unarchive", "Discard"], reload),
    h("div", { class: "columns" },
      h("div", {}, h("h2", {}, "Failure"), fields(env.failure ?? {}, { now }), h("h2", {}, "Entry"), fields(summary, { now })),
      h("div", {}, h("h2", {}, "Attempt history"), timeline(history, now), h("h2", {}, "Timing"), fields(env.timing ?? {}, { now }),
        h("h2", {}, "Identity"), fields(env.identity ?? {}, { now }))),
    h("h2", {}, "Request headers (redacted)"),
    table(Object.entries(env.transport?.headers ?? {}), [["Header", ([k]) => k], ["Value", ([, v]) => h("span", { class: "mono" }, v)]], "Request headers"),
    h("h2", {}, "Excerpt"),
    h("p", { class: "muted" }, `${env.input?.body_bytes ?? "?"} bytes`, env.input?.excerpt_truncated ? ", excerpt truncated to the first 4 KB" : ""),
    h("pre", { class: "excerpt", tabindex: "0" }, env.input?.excerpt ?? ""),
    h("details", {}, h("summary", {}, "The whole envelope (JSON)"), h("pre", { tabindex: "0" }, JSON.stringify(env, null, 2))));
}

function timeline(history, now) {
  if (!history.length) return h("p", { class: "muted" }, "No attempt recorded.");
  return h("ol", { class: "timeline" }, history.map((a) =>
    h("li", {}, age(a.at_ms, now), " ", h("strong", {}, `attempt ${a.attempt}`), " ", h("code", {}, a.code), ` (${a.class}) `,
      a.cause ? `cause ${a.cause} ` : "", h("span", { class: "msg" }, a.message))));
}

/** An evicted entry (its tombstone): the archive key and Restore. */
function tombstone(d, now, reload) {
  return h("div", {},
    h("p", {}, h("span", { class: "status evicted", "data-status": "evicted" }, "evicted"), " This entry left D1 for the archive; restore brings it back."),
    actionsPanel(d.id, ["Restore"], reload),
    h("h2", {}, "Tombstone"), fields(d, { now }));
}
