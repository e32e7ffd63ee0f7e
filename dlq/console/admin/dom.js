// DOM helpers. Everything the API returns is put on the page as text
// (text nodes, textContent, attribute values set one by one): no HTML
// string is ever parsed, so markup inside a webhook stays inert.

/** An element: `attrs` set as attributes (`on*` keys as listeners), `children` as nodes or text. */
export function h(tag, attrs = {}, ...children) {
  const svg = SVG_TAGS.has(tag);
  const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

const SVG_TAGS = new Set(["svg", "g", "rect", "line", "text", "title", "path", "polyline"]);

/** Appends nodes and text (arrays flattened; null and false skipped). */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces the contents of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** The exact time of unix milliseconds, as the hover title shows it. */
export function exact(ms) {
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

/** A duration in seconds, short: 45 s, 12 min, 3 h 5 min, 2 d 4 h. */
export function duration(s) {
  s = Math.max(0, Math.round(s));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return m % 60 ? `${hrs} h ${m % 60} min` : `${hrs} h`;
  const d = Math.floor(hrs / 24);
  return hrs % 24 ? `${d} d ${hrs % 24} h` : `${d} d`;
}

/** A time as a relative age ("5 min ago"), with the exact time on hover. */
export function age(ms, now = Date.now()) {
  if (typeof ms !== "number") return h("span", { class: "muted" }, "never");
  const d = (now - ms) / 1000;
  const text = d >= 0 ? `${duration(d)} ago` : `in ${duration(-d)}`;
  return h("time", { datetime: new Date(ms).toISOString(), title: exact(ms) }, text);
}

/** A time as its age with the exact instant beside it (and on hover). */
export function when(ms, now = Date.now()) {
  if (typeof ms !== "number") return age(ms, now);
  return h("span", { class: "when" }, age(ms, now), " ", h("small", { class: "exact" }, exact(ms)));
}

/** A field name as a person reads it: `dead_lettered_at_ms` → "Dead lettered". */
export function label(key) {
  const words = key.replace(/(_at_ms|_at|_ms)$/, "").replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * A definition list of `[label, value]` pairs, each shown once under its
 * label; a pair whose value is `undefined` (the answer has no such field)
 * is left out, and `null` shows as a dash.
 */
export function facts(pairs) {
  const dl = h("dl", { class: "fields" });
  for (const [name, value] of pairs) {
    if (value === undefined) continue;
    dl.append(h("dt", {}, name), h("dd", {}, value === null ? h("span", { class: "muted" }, "—") : value));
  }
  return dl;
}

/** Whether a field name holds unix milliseconds (the API's naming). */
export const isTimeField = (key) => /(^at$|_at$|_at_ms$|^since$|_ms$)/.test(key) && !/timeout|took/.test(key);

/** A value for a cell: times as ages, objects as compact JSON text, null as a dash. */
export function cell(key, value, now) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "—");
  if (typeof value === "number" && isTimeField(key) && value > 1e11) return age(value, now);
  if (typeof value === "object") return h("code", {}, JSON.stringify(value));
  return String(value);
}

/** A definition list of an object's fields (nested objects as JSON text). */
export function fields(obj, { now, omit = [] } = {}) {
  const dl = h("dl", { class: "fields" });
  for (const [key, value] of Object.entries(obj ?? {})) {
    if (omit.includes(key)) continue;
    dl.append(h("dt", {}, key), h("dd", {}, cell(key, value, now)));
  }
  return dl;
}

/** A table of rows; `columns` are `[heading, (row) => cell]`. Wrapped so only the table scrolls sideways. */
export function table(rows, columns, caption) {
  const head = h("tr", {}, columns.map(([name]) => h("th", { scope: "col" }, name)));
  // data-label names the column where a phone shows rows as cards (console.css).
  const body = rows.map((row) => h("tr", {}, columns.map(([name, get]) => h("td", { "data-label": name }, get(row)))));
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption ?? "table" },
    h("table", {}, caption ? h("caption", {}, caption) : null, h("thead", {}, head), h("tbody", {}, body)));
}

/** The API's error, shown where its data would have been. */
export function apiError(res, what) {
  const e = res.error ?? {};
  return h("div", { class: "error", role: "alert", "data-error": e.code ?? "NETWORK" },
    h("strong", {}, `${what} failed`), " ",
    `(${res.status ? `HTTP ${res.status}` : "no answer"}): `,
    h("code", {}, e.code ?? "NETWORK"), " ", e.message ?? "");
}

/** A region that shows "Loading…" until `load` settles, then what `render` makes of it. */
export async function loadInto(region, what, load, render) {
  region.setAttribute("aria-busy", "true");
  replace(region, h("p", { class: "loading" }, `Loading ${what}…`));
  const res = await load();
  region.removeAttribute("aria-busy");
  if (!region.isConnected) return res;
  if (!res.ok) replace(region, apiError(res, `Reading ${what}`));
  else replace(region, render(res.data, res));
  return res;
}

/** A labelled form field: `<label>` wrapping its text and the control. */
export function labelled(text, control, hint) {
  return h("label", { class: "field" }, h("span", {}, text), control, hint ? h("small", {}, hint) : null);
}

/** A `<select>` of `options` (`[value, label]` or a value), `selected` chosen. */
export function select(name, options, selected = "") {
  return h("select", { name },
    options.map((o) => {
      const [value, text] = Array.isArray(o) ? o : [o, o];
      return h("option", { value, selected: value === selected }, text);
    }));
}

/** A heading for a view, focused so keyboard and screen-reader users land on it. */
export function heading(text) {
  return h("h1", { tabindex: "-1", id: "view-title" }, text);
}
