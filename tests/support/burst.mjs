// Requests that reach the workers in the same instant: a client inside
// workerd (an extra worker bound to the relay) sends them all at once
// through the relay's public fetch. Requests from Node arrive spread out by
// its sockets, often far enough apart that one finishes before the next
// starts; a race needs them together.
import { token } from "./admin.mjs";

const HOST = "burst.hookrelay.test";

/** The extra worker; pass it to startRelay({ extraWorkers: [BURST_WORKER] }). */
export const BURST_WORKER = {
  name: "hookrelay-test-burst",
  modules: true,
  compatibilityDate: "2024-09-23",
  serviceBindings: { RELAY: "hookrelay" },
  routes: [`${HOST}/*`],
  script: `export default {
    async fetch(request, env) {
      const { requests, authorization } = await request.json();
      const one = async ({ path, body }) => {
        const res = await env.RELAY.fetch("http://relay.local" + path, { method: "POST", headers: { authorization, "content-type": "application/json" }, body: JSON.stringify(body) });
        return { status: res.status, json: await res.json() };
      };
      return Response.json(await Promise.all(requests.map(one)));
    },
  };`,
};

/** POSTs each of `requests` (`{path, body}`, path under /api/v1/admin/) with an admin token, all at once; answers `[{status, json}]` in order. */
export async function burst(relay, requests) {
  const call = { authorization: `Bearer ${token()}`, requests: requests.map((r) => ({ ...r, path: `/api/v1/admin/${r.path}` })) };
  const res = await relay.mf.dispatchFetch(`http://${HOST}/`, { method: "POST", body: JSON.stringify(call) });
  if (!res.ok) throw new Error(`the burst worker answered ${res.status}: ${await res.text()}`);
  return res.json();
}
