// Table printing and the small statistics every section shares. A target's
// table always has the same shape: one row per measured worker (median and
// every run, plus counted D1 round trips per message batch), then one row
// per ratio, paired per run (run i of A over run i of B), so the spread
// shown is that of the ratio itself, not of two independent medians.

export const say = (...a) => console.log(...a);
export const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");

export function median(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function quantile(xs, q) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

export function table(headers, rows) {
  const cells = [headers, ...rows].map((r) => r.map((c) => String(c)));
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  return [line(cells[0]), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n");
}

/** Per-run ratios a[i] / b[i], their median and min–max. */
export function pairedRatio(a, b) {
  const per = a.map((x, i) => x / b[i]);
  const finite = per.filter(Number.isFinite);
  return { per, median: median(per), min: Math.min(...finite), max: Math.max(...finite) };
}

/** `1.00 (0.98–1.02)`: D1 round trips per message batch, median of runs and their range. */
function tripsCell(runs) {
  const xs = runs.map((r) => r.tripsPerBatch).filter(Number.isFinite);
  if (xs.length === 0) return "not counted";
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? fmt(lo, 2) : `${fmt(median(xs), 2)} (${fmt(lo, 2)}–${fmt(hi, 2)})`;
}

/**
 * One target's table. `subjects`: [{key, label}]; `runs[key]`: the runs of
 * that subject, each `{rate, tripsPerBatch?, statementsPerBatch?}`;
 * `ratios`: [[numeratorKey, denominatorKey], …]; `unit` names `rate`;
 * `per` is what the D1 counts are divided by (a message batch, a request).
 */
export function targetTable({ subjects, runs, ratios, unit, extra = [], per = "batch" }) {
  const rows = subjects.map(({ key, label }) => {
    const rs = runs[key];
    const rates = rs.map((r) => r.rate);
    const extras = extra.map((e) => e.cell(rs));
    return [label, fmt(median(rates)), `${fmt(Math.min(...rates))}–${fmt(Math.max(...rates))}`, rates.map((x) => fmt(x)).join(", "), tripsCell(rs), fmt(median(rs.map((r) => r.statementsPerBatch)), 0), ...extras];
  });
  const out = {};
  for (const [a, b] of ratios) {
    const r = pairedRatio(
      runs[a].map((x) => x.rate),
      runs[b].map((x) => x.rate),
    );
    const label = `${subjects.find((s) => s.key === a).short ?? a} / ${subjects.find((s) => s.key === b).short ?? b}`;
    out[`${a}/${b}`] = r;
    rows.push([`ratio ${label} (paired per run)`, `${fmt(r.median, 2)}x`, `${fmt(r.min, 2)}–${fmt(r.max, 2)}x`, r.per.map((x) => fmt(x, 2)).join(", "), "", "", ...extra.map(() => "")]);
  }
  const headers = ["", `median ${unit}`, "min–max", `runs (${unit})`, `D1 round trips / ${per}`, `statements / ${per}`, ...extra.map((e) => e.header)];
  return { text: table(headers, rows), ratios: out };
}

/**
 * The same ratio from the handlers alone: capacity = batch size / the
 * broker's median wall time per full batch, paired per run. End to end, the
 * producer's sends share workerd's one thread with the consumer, so this
 * line shows the consumers without the send cost both sides pay.
 */
export function capacityLine(runs, a, b, batchSize) {
  const cap = (k) => runs[k].map((r) => (batchSize / r.handlerMs) * 1000);
  const r = pairedRatio(cap(a), cap(b));
  return `  handler capacity (batch size / broker ms per batch), ${a} / ${b}: ${fmt(r.median, 2)}x (${fmt(r.min, 2)}–${fmt(r.max, 2)}x; runs ${r.per.map((x) => fmt(x, 2)).join(", ")}); medians ${fmt(median(cap(a)))} vs ${fmt(median(cap(b)))} events/s`;
}
