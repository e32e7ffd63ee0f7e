// Shared pieces of the action forms: the reason field (at least 5
// characters, checked in the page before the API sees it) and the
// in-page confirmation step (a Confirm button, never window.confirm).
import { h, replace, labelled } from "../dom.js";

let seq = 0;

/** A labelled reason input with its own error line. */
export function reasonField(label = "Reason (at least 5 characters)") {
  const id = `reason-${++seq}`;
  const input = h("input", { name: "reason", id, autocomplete: "off", minlength: 5, "aria-describedby": `${id}-err` });
  const err = h("p", { class: "field-error", id: `${id}-err`, "aria-live": "polite" });
  return {
    el: h("div", {}, labelled(label, input), err),
    value: () => input.value.trim(),
    clear: () => { input.value = ""; },
    check() {
      if (input.value.trim().length >= 5) {
        replace(err);
        return true;
      }
      replace(err, "Type a reason of at least 5 characters; it goes into the audit record.");
      input.focus();
      return false;
    },
  };
}

/** Shows `what` with Confirm and a way back inside `region`; runs `go` on Confirm. */
export function confirmStep(region, what, go) {
  const confirm = h("button", { type: "button", class: "danger", onclick: () => { replace(region); go(); } }, "Confirm");
  replace(region, h("div", { class: "confirm", role: "alertdialog", "aria-label": "Confirm" },
    h("p", {}, what), confirm, " ", h("button", { type: "button", onclick: () => replace(region, "Not done.") }, "Back")));
  confirm.focus();
}
