// The hourly plot: dead letters and parked events per hour over the last
// 24 hours, as the stats answer counts them, drawn by the page. The bars
// are SVG stretched to the plot's width; the axis labels are HTML text, so
// they stay readable at a phone's width (an SVG's text would shrink with it).
import { h, exact } from "../dom.js";

/** Units per hour across, and the bars' full height, in the SVG's own units. */
const SLOT = 10, TALL = 100;
/** Every how many hours the time axis is labelled. */
const LABEL_EVERY = 6;

/** Reads one hour of the answer: `{hour, dead_letters, parked}`. */
const hourOf = (r) => ({ at: r.hour, dead: r.dead_letters, parked: r.parked });

/** The hour of unix milliseconds as the axis shows it: `14:00` (UTC). */
const clock = (ms) => new Date(ms).toISOString().slice(11, 16);

/** The plot, or a note saying the answer has no hourly counts. */
export function hourlyPlot(hourly) {
  if (!Array.isArray(hourly)) {
    return h("p", { class: "muted", "data-plot": "missing" }, "The stats answer has no hourly counts (field hourly), so there is nothing to plot.");
  }
  const hours = hourly.map(hourOf);
  const max = Math.max(1, ...hours.map((r) => Math.max(r.dead, r.parked)));
  const height = (n) => (TALL * n) / max;
  const bar = (cls, x, n) => h("rect", { class: cls, x, y: TALL - height(n), width: SLOT / 2 - 1, height: height(n) });
  const groups = hours.map((r, i) => h("g", { "data-hour": r.at, "data-dead": r.dead, "data-parked": r.parked },
    h("title", {}, `${exact(r.at)}: ${r.dead} dead letters, ${r.parked} parked`),
    bar("bar-dead", i * SLOT + 0.5, r.dead),
    bar("bar-parked", i * SLOT + SLOT / 2, r.parked)));
  const svg = h("svg", { viewBox: `0 0 ${hours.length * SLOT} ${TALL}`, preserveAspectRatio: "none", role: "img", "aria-label": "Dead letters and parked events per hour, last 24 hours" },
    h("line", { class: "axis", x1: 0, y1: TALL, x2: hours.length * SLOT, y2: TALL, "vector-effect": "non-scaling-stroke" }), groups);
  const ticks = hours.map((r, i) => (i % LABEL_EVERY === 0 ? h("span", { class: "hour-tick", "data-index": i }, clock(r.at)) : null));
  return h("figure", { class: "plot", "data-max": max },
    h("div", { class: "plot-area" },
      h("div", { class: "y-axis", "aria-hidden": "true" }, h("span", { class: "y-max" }, String(max)), h("span", {}, "0")),
      svg,
      h("div", { class: "x-axis", "aria-hidden": "true" }, ticks)),
    h("figcaption", {}, h("span", { class: "key-dead" }, "■"), " dead letters  ", h("span", { class: "key-parked" }, "■"),
      " parked events; one pair of bars per hour (UTC), the last is the current hour"));
}
