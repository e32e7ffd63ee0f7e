// The hourly plot: dead letters and parked events per hour over the last
// 24 hours, as the stats answer counts them, drawn as SVG by the page.
import { h, exact } from "../dom.js";

const W = 720, H = 180, PAD_L = 34, PAD_B = 22, PAD_T = 10;

/** Reads one hour of the answer: `{hour, dead_letters, parked}`. */
const hourOf = (r) => ({ at: r.hour, dead: r.dead_letters, parked: r.parked });

/** The plot, or a note saying the answer has no hourly counts. */
export function hourlyPlot(hourly) {
  if (!Array.isArray(hourly)) {
    return h("p", { class: "muted", "data-plot": "missing" }, "The stats answer has no hourly counts (field hourly), so there is nothing to plot.");
  }
  const hours = hourly.map(hourOf);
  const max = Math.max(1, ...hours.map((r) => Math.max(r.dead, r.parked)));
  const slot = (W - PAD_L) / Math.max(hours.length, 1);
  const bar = Math.max(2, slot / 2 - 2);
  const y = (n) => H - PAD_B - ((H - PAD_B - PAD_T) * n) / max;
  const bars = hours.flatMap((r, i) => {
    const x = PAD_L + i * slot + 1;
    const label = `${r.at ? exact(r.at) : `hour ${i + 1}`}: ${r.dead} dead letters, ${r.parked} parked`;
    return [
      h("rect", { class: "bar-dead", x, y: y(r.dead), width: bar, height: H - PAD_B - y(r.dead) }, h("title", {}, label)),
      h("rect", { class: "bar-parked", x: x + bar + 1, y: y(r.parked), width: bar, height: H - PAD_B - y(r.parked) }, h("title", {}, label)),
    ];
  });
  const axis = [
    h("line", { class: "axis", x1: PAD_L, y1: H - PAD_B, x2: W, y2: H - PAD_B }),
    h("text", { class: "tick", x: PAD_L - 4, y: PAD_T + 8, "text-anchor": "end" }, String(max)),
    h("text", { class: "tick", x: PAD_L - 4, y: H - PAD_B, "text-anchor": "end" }, "0"),
    h("text", { class: "tick", x: PAD_L, y: H - 6 }, "24 h ago"),
    h("text", { class: "tick", x: W, y: H - 6, "text-anchor": "end" }, "now"),
  ];
  return h("figure", { class: "plot" },
    h("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Dead letters and parked events per hour, last 24 hours" }, axis, bars),
    h("figcaption", {}, h("span", { class: "key-dead" }, "■"), " dead letters  ", h("span", { class: "key-parked" }, "■"), " parked events"));
}
