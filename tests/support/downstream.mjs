// A real HTTP server on loopback standing in for a customer's endpoint.
// Each path has a behaviour; every request is recorded with its headers
// and raw body so tests can verify signatures independently.
import http from "node:http";
import { createHash } from "node:crypto";

/**
 * How logs, alerts, alarm ids and the stats name a destination URL
 * (core::redact::destination_label), computed here on its own as the
 * oracle: scheme, host and port, then `/...#` and 8 hex digits of the URL's
 * SHA-256 when it has a path, query or credentials.
 */
export function destinationLabel(url) {
  const u = url.split("#")[0];
  const { protocol, host, username, pathname, search } = new URL(u);
  const bare = `${protocol}//${host}`;
  if (!username && (pathname === "/" || pathname === "") && !search && !u.includes("?")) return bare;
  return `${bare}/...#${createHash("sha256").update(u).digest("hex").slice(0, 8)}`;
}

/**
 * `behaviours` maps a path to a function `(request, count) => {status, delayMs?, headers?}`
 * where `request` is `{path, method, headers, body}` and `count` is how many requests
 * that path has had (1-based).
 */
export async function startDownstream(behaviours = {}) {
  const requests = [];
  const counts = new Map();
  // Requests being answered right now, and the most at once, per path.
  const inFlight = new Map();
  const peak = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url, "http://x").pathname;
      const count = (counts.get(path) ?? 0) + 1;
      counts.set(path, count);
      const body = Buffer.concat(chunks).toString("utf8");
      const recorded = { path, method: req.method, headers: req.headers, body, at: Date.now() };
      inFlight.set(path, (inFlight.get(path) ?? 0) + 1);
      peak.set(path, Math.max(peak.get(path) ?? 0, inFlight.get(path)));
      requests.push(recorded);
      const behaviour = behaviours[path] ?? (() => ({ status: 200 }));
      const { status = 200, delayMs = 0, headers = {} } = behaviour(recorded, count) ?? {};
      recorded.status = status;
      const send = () => {
        inFlight.set(path, inFlight.get(path) - 1);
        if (res.destroyed) return;
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify({ ok: status < 300 }));
      };
      delayMs ? setTimeout(send, delayMs) : send();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    hits: (path) => requests.filter((r) => r.path === path),
    /** The most requests to `path` that were being answered at once. */
    peakInFlight: (path) => peak.get(path) ?? 0,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}
