// Cursor pages for the list views (entries, jobs, audit). The API's cursors
// only go forward, so the cursors of the pages before this one are kept
// here, per list and filter, for "Previous page".
import { h } from "../dom.js";
import { query } from "../api.js";

const earlier = new Map();

/**
 * The pager of the list at `route` (`#/entries`): `params` are the route's
 * other parameters (filter, limit), `cursor` the page shown, `next` the
 * answer's `next_cursor`.
 */
export function pager(route, params, cursor, next) {
  const key = route + JSON.stringify(params);
  const stack = earlier.get(key) ?? [];
  if (!cursor) stack.length = 0;
  earlier.set(key, stack);
  return h("nav", { class: "pager", "aria-label": "Pages" },
    cursor ? h("a", { href: `${route}${query({ ...params, cursor: stack.at(-1) ?? "" })}`, onclick: () => stack.pop() }, "Previous page") : null,
    cursor ? h("a", { href: `${route}${query(params)}` }, "First page") : null,
    next ? h("a", { href: `${route}${query({ ...params, cursor: next })}`, onclick: () => stack.push(cursor) }, "Next page") : null);
}
