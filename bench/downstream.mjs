// The loopback downstream for the forwarding benches: a node http server on
// 127.0.0.1 that answers 200 at once and only counts what it receives
// (requests, distinct X-Operation-Id values), so it costs as little as a
// server can and is the same for every consumer.
import http from "node:http";

export async function startDownstream() {
  const state = { requests: 0, ids: new Set() };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      state.requests += 1;
      state.ids.add(req.headers["x-operation-id"]);
      res.writeHead(200, { "content-type": "application/json", "content-length": "11" });
      res.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/hook`;
  return {
    url,
    get requests() {
      return state.requests;
    },
    get distinct() {
      return state.ids.size;
    },
    reset() {
      state.requests = 0;
      state.ids = new Set();
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  };
}
