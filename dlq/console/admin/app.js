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

// A Map, so a name such as "constructor" or "__proto__" is not a view.
const VIEWS = new Map(Object.entries({ overview, groups, entries, entry, story, jobs, job, alerts, audit, archive }));
const main = document.getElementById("main");
const nav = document.getElementById("nav");
let cleanup = null;

/**
 * `#/name/arg?x=1` as `{name, arg, params}`; `name` is null when the hash
 * is malformed (a `%` that does not decode).
 */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, q = ""] = raw.split("?");
  const [name, ...rest] = path.split("/");
  try {
    return { name: name || "overview", arg: rest.map(decodeURIComponent).join("/"), params: new URLSearchParams(q) };
  } catch {
    return { name: null };
  }
}

/** The view for a hash the router does not know: what was asked, and the way back. */
function notFound(el, { asked }) {
  el.append(heading("Page not found"),
    h("p", {}, "The console has no page at ", h("code", {}, asked || "#"), "."),
    h("p", {}, h("a", { href: "#/overview" }, "Go to the Overview")));
}

function route() {
  if (cleanup) cleanup();
  cleanup = null;
  if (!token.get()) return signIn();
  nav.hidden = false;
  const { name, arg, params } = parseHash();
  const view = VIEWS.get(name) ?? notFound;
  const tab = view === notFound ? null : name === "entry" ? "entries" : name === "job" ? "jobs" : name;
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === `#/${tab}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  replace(main);
  cleanup = view(main, { arg, params, asked: location.hash }) ?? null;
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
