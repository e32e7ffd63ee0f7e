// Jobs: create one from a filter with a dry-run preview first, list them,
// and watch one (canary, progress, counts) by polling, with the commands
// the job's answer lists (Approve, Pause, Resume, Cancel).
import { h, replace, heading, loadInto, fields, table, cell, select, labelled, apiError } from "../dom.js";
import { get, post, query } from "../api.js";
import { filterFields, filterOf } from "./entries.js";
import { reasonField, confirmStep } from "./actions.js";
import { auditTable } from "./audit-table.js";
import { pager } from "./pager.js";
import { poller } from "./poll.js";

/** A job on more than this many entries asks for confirmation (DESIGN §6). */
const CONFIRM_ABOVE = 100;

export function jobs(main, { params }) {
  const list = h("section", { "aria-labelledby": "jobs-h" });
  // The list's page size and cursor share the route with the create form's
  // filter, so paging keeps the filter and a new filter keeps the page size.
  const rest = Object.fromEntries([...params].filter(([k]) => k !== "cursor"));
  const cursor = params.get("cursor") ?? "";
  const limit = h("input", { name: "limit", type: "number", min: 1, max: 200, value: params.get("limit") ?? "", placeholder: "50" });
  const size = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/jobs${query({ ...rest, limit: limit.value })}`;
  } }, labelled("Jobs per page", limit), h("button", { type: "submit" }, "Show"));
  main.append(heading("Jobs"), createForm(params), h("h2", { id: "jobs-h" }, "Recent jobs"), size, list);
  loadInto(list, "the jobs", () => get(`jobs${query({ limit: rest.limit, cursor })}`), (d) => h("div", {},
    d.items.length
      ? table(d.items, [
        ["Job", (j) => h("a", { href: `#/job/${encodeURIComponent(j.id)}`, class: "mono" }, j.id)],
        ["Action", (j) => j.action], ["Status", (j) => h("span", { class: `status ${j.status}` }, j.status)],
        ["Matched", (j) => String(j.matched)], ["Attempted", (j) => String(j.attempted)],
        ["Created", (j) => cell("created_at", j.created_at, Date.now())],
      ], "Jobs")
      : h("p", { "data-count": "0" }, "No job yet."),
    pager("#/jobs", rest, cursor, d.next_cursor)));
}

/** The request body the form describes. */
function requestOf(form, reason) {
  const e = form.elements;
  const body = { action: e.action.value, reason: reason.value(), filter: filterOf(form), approve: e.approve.value };
  if (e.rate_per_s.value) body.rate_per_s = Number(e.rate_per_s.value);
  if (e.concurrency.value) body.concurrency = Number(e.concurrency.value);
  if (body.action === "replay") {
    body.canary = { per_signature: e.per_signature.checked };
    if (e.canary_size.value !== "") body.canary.size = Number(e.canary_size.value);
  }
  return body;
}

function createForm(params) {
  const reason = reasonField();
  const preview = h("div", { role: "status", class: "answer" });
  const form = h("form", { class: "card job-form", onsubmit: async (ev) => {
    ev.preventDefault();
    if (!reason.check()) return;
    const body = requestOf(form, reason);
    replace(preview, h("p", { class: "loading" }, "Dry run…"));
    const res = await post("jobs", { ...body, dry_run: true });
    if (!res.ok) return replace(preview, apiError(res, "The dry run"));
    replace(preview, dryRun(res.data), startButton(body, res.data, preview));
  } },
  h("h2", {}, "New job"),
  h("div", { class: "filters" },
    labelled("Action", select("action", ["replay", "archive", "discard"], params.get("action") ?? "replay")),
    filterFields(params),
    labelled("Canary size", h("input", { name: "canary_size", type: "number", min: 0, placeholder: "5" })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "per_signature", checked: true }), " Canary: one per signature"),
    labelled("Approval after the canary", select("approve", ["manual", "auto"], "manual")),
    labelled("Rate per second", h("input", { name: "rate_per_s", type: "number", min: 0.1, max: 100, step: "any", placeholder: "10" })),
    labelled("Concurrency", h("input", { name: "concurrency", type: "number", min: 1, max: 50, placeholder: "5" }))),
  reason.el,
  h("button", { type: "submit" }, "Preview (dry run)"),
  preview);
  return form;
}

function dryRun(d) {
  return h("div", { class: "preview" },
    h("p", {}, h("strong", { "data-matched": d.matched }, `${d.matched} entries match.`), " Nothing has changed yet."),
    d.by_signature?.length ? table(d.by_signature, [["Signature", (s) => h("a", { href: `#/entries${query({ signature: s.signature })}`, class: "mono" }, s.signature)], ["Code", (s) => s.code], ["Count", (s) => String(s.count)]], "By signature") : null,
    d.by_source?.length ? table(d.by_source, [["Source", (s) => s.source], ["Count", (s) => String(s.count)]], "By source") : null,
    d.canary_ids?.length ? h("p", {}, "Canary: ", d.canary_ids.map((id) => [h("a", { href: `#/entry/${encodeURIComponent(id)}`, class: "mono" }, id), " "])) : null);
}

function startButton(body, preview, region) {
  const start = async () => {
    const res = await post("jobs", body);
    if (!res.ok) return region.append(apiError(res, "Starting the job"));
    location.hash = `#/job/${encodeURIComponent(res.data.id)}`;
  };
  const risky = body.action === "discard" || preview.matched > CONFIRM_ABOVE;
  const slot = h("div", {});
  const button = h("button", { type: "button", class: risky ? "danger" : "", onclick: () => {
    if (!risky) return start();
    confirmStep(slot, `This job will ${body.action} ${preview.matched} entries.`, start);
  } }, "Start job");
  return h("div", {}, button, slot);
}

/** The button text of a command the API names (`approve` → "Approve"). */
const buttonText = (command) => command.charAt(0).toUpperCase() + command.slice(1);

/**
 * One job, polled every second until it has finished (`finished_at`),
 * in one loop: a steer command restarts it, and leaving the view stops it.
 */
export function job(main, { arg: id }) {
  const region = h("section", { "aria-label": "Job" });
  const answer = h("div", { role: "status", class: "answer" });
  const trail = h("section", { "aria-labelledby": "job-trail-h" });
  main.append(heading(`Job ${id}`), region, answer, trail);
  const poll = poller(async (current) => {
    const res = await get(`jobs/${encodeURIComponent(id)}`);
    // A read a newer loop replaced (or of a view left) is dropped unseen.
    if (!current()) return false;
    // Each poll redraws the job; a keyboard user keeps focus on the same button.
    const focused = region.contains(document.activeElement) ? document.activeElement.textContent : null;
    replace(region, res.ok ? jobView(res.data, steer) : apiError(res, "Reading the job"));
    if (focused) [...region.querySelectorAll("button")].find((b) => b.textContent === focused && !b.disabled)?.focus();
    const finished = res.ok && res.data.finished_at != null;
    if (finished) loadInto(trail, "the job's audit records", () => get(`audit${query({ job_id: id, limit: 200 })}`), (d) => auditTable(d.items, Date.now(), "job-trail-h"));
    return !finished;
  }, 1000);
  const steer = async (command) => {
    const name = buttonText(command);
    replace(answer, h("p", { class: "loading" }, `${name}…`));
    const res = await post(`jobs/${encodeURIComponent(id)}/${encodeURIComponent(command)}`);
    replace(answer, res.ok ? h("p", { class: "ok" }, `${name}: HTTP ${res.status}, status ${res.data.status}`) : apiError(res, name));
    poll.start();
  };
  region.append(h("p", { class: "loading" }, "Loading the job…"));
  poll.start();
  return poll.stop;
}

const COUNTS = ["matched", "attempted", "succeeded", "failed", "deduped", "skipped", "remaining"];

function jobView(j, steer) {
  const done = j.attempted + j.skipped;
  const actions = j.actions ?? [];
  return h("div", {},
    h("p", {}, h("span", { class: `status ${j.status}`, "data-job-status": j.status }, j.status), ` ${j.action}: ${j.reason}`),
    j.abort_reason ? h("p", { class: "error" }, `Aborted: ${j.abort_reason}`) : null,
    h("label", { class: "field" }, h("span", {}, `Progress: ${done} of ${j.matched}`), h("progress", { max: Math.max(j.matched, 1), value: done, "data-progress": `${done}/${j.matched}` })),
    h("dl", { class: "figures" }, COUNTS.map((k) => h("div", { class: "figure" }, h("dt", {}, k), h("dd", { "data-count": k }, String(j[k]))))),
    // Exactly the commands the answer lists (core/src/jobs/lifecycle.rs decides them).
    actions.length
      ? h("div", { class: "buttons", "data-actions": actions.join(" ") }, actions.map((c) => h("button", { type: "button", onclick: () => steer(c) }, buttonText(c))))
      : h("p", { class: "muted", "data-actions": "" }, "This job takes no command now."),
    h("h2", {}, "Canary"),
    j.canary?.ids?.length
      ? h("p", { "data-canary": String(j.canary.passed) }, j.canary.passed === true ? "Passed: " : j.canary.passed === false ? "Failed: " : "Running: ",
        j.canary.ids.map((id) => [h("a", { href: `#/entry/${encodeURIComponent(id)}`, class: "mono" }, id), " "]))
      : h("p", { class: "muted" }, "No canary for this job."),
    h("h2", {}, "Details"),
    fields(j, { now: Date.now(), omit: [...COUNTS, "canary", "actions"] }));
}
