// The console's shell: sign-in, the hash router, and the views. Routes
// live in the fragment (#/entries?status=pending), which never leaves the
// browser; the token is never part of one.
import { h, replace, heading, labelled } from "./dom.js";
import { token, whenRefused } from "./api.js";
import { overview } from "./views/overview.js";
import { groups } from "./views/groups.js";
import { entries } from "./views/entries.js";
import { entry } from "./views/entry.js";
import { story } from "./views/story.js";
import { jobs, job } from "./views/jobs.js";
import { alerts } from "./views/alerts.js";
import { audit } from "./views/audit.js";
import { archive } from "./views/archive.js";

const VIEWS = { overview, groups, entries, entry, story, jobs, job, alerts, audit, archive };
const main = document.getElementById("main");
const nav = document.getElementById("nav");
let cleanup = null;

/** `#/name/arg?x=1` as `{name, arg, params}`. */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, q = ""] = raw.split("?");
  const [name, ...rest] = path.split("/");
  return { name: name || "overview", arg: rest.map(decodeURIComponent).join("/"), params: new URLSearchParams(q) };
}

function route() {
  if (cleanup) cleanup();
  cleanup = null;
  if (!token.get()) return signIn();
  nav.hidden = false;
  const { name, arg, params } = parseHash();
  const view = VIEWS[name] ?? VIEWS.overview;
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === `#/${name === "entry" ? "entries" : name === "job" ? "jobs" : name}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  replace(main);
  cleanup = view(main, { arg, params }) ?? null;
  main.querySelector("h1")?.focus({ preventScroll: true });
}

/** The sign-in form; `message` is the API's reason when a token was refused. */
function signIn(message) {
  nav.hidden = true;
  const input = h("input", { type: "password", name: "token", autocomplete: "off", spellcheck: "false", required: true });
  const form = h("form", { class: "card signin", onsubmit: async (ev) => {
    ev.preventDefault();
    const value = input.value.trim().replace(/^Bearer\s+/i, "");
    if (!value) return;
    token.set(value);
    input.value = "";
    // The view's first call checks the token: a refusal comes back here
    // with the API's message (whenRefused).
    route();
  } },
  labelled("Admin token", input, "An HS256 JWT with role admin (npm run admin-token). Kept in this tab only."),
  h("button", { type: "submit" }, "Sign in"));
  replace(main, heading("Sign in"), message ? h("div", { class: "error", role: "alert" }, message) : null, form);
  input.focus();
}

whenRefused((res) => {
  token.clear();
  if (cleanup) cleanup();
  cleanup = null;
  signIn(`The API refused the token (HTTP ${res.status}, ${res.error.code}): ${res.error.message}`);
});

document.getElementById("sign-out").addEventListener("click", () => {
  token.clear();
  if (cleanup) cleanup();
  cleanup = null;
  signIn("Signed out.");
});
window.addEventListener("hashchange", route);
route();
