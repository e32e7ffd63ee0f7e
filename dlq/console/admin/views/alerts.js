// Alerts: firing and recently resolved alarms, each with its delivery to
// ALERT_WEBHOOK_URL, and a button that sends a test alert (DESIGN §4/§5).
import { h, replace, heading, loadInto, table, cell, fields, apiError } from "../dom.js";
import { get, post } from "../api.js";

export function alerts(main) {
  const region = h("section", { "aria-label": "Alerts" });
  const answer = h("div", { role: "status", class: "answer" });
  const test = h("button", { type: "button", onclick: async () => {
    test.disabled = true;
    replace(answer, h("p", { class: "loading" }, "Sending a test alert…"));
    const res = await post("alerts/test");
    test.disabled = false;
    replace(answer, res.ok ? h("div", { class: "ok" }, h("strong", {}, "The receiver answered:"), fields(res.data, { now: Date.now() })) : apiError(res, "The test alert"));
  } }, "Send a test alert");
  main.append(heading("Alerts"), h("p", {}, test), answer, region);
  const now = Date.now();
  loadInto(region, "the alerts", () => get("alerts"), (d) =>
    d.items?.length
      ? table(d.items, [
        ["Alarm", (a) => a.id],
        ["State", (a) => h("span", { class: `status ${a.state}` }, a.state)],
        ["Since", (a) => cell("since", a.since, now)],
        ["Resolved", (a) => cell("resolved_at", a.resolved_at, now)],
        ["Detail", (a) => fields(a.detail, { now })],
        ["Delivery", (a) => fields(a.delivery, { now })],
      ], "Alerts")
      : h("p", { "data-count": "0" }, "No alarm has fired."));
}
