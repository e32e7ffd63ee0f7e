// A lighter load generator than node's global fetch (undici), for target 4:
// node:http with one keep-alive agent. With fetch, node spent about as much
// CPU per request as workerd did, so on 2 cores the trivial worker (the
// "ceiling") served no more requests/s than the relay or the JS anchor and
// the req/s ratio could not tell the workers apart.
import http from "node:http";

/** One keep-alive agent per load, with a socket per request in flight. */
export function agent(inFlight) {
  return new http.Agent({ keepAlive: true, maxSockets: inFlight });
}

/** POSTs `body` to `url` and resolves with the status once the answer is read. */
export function post(url, { headers, body, agent: via }) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { ...headers, "content-length": Buffer.byteLength(body) }, agent: via }, (res) => {
      res.on("data", () => {});
      res.on("end", () => resolve(res.statusCode));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}
