// The admin API client. The token lives in sessionStorage only (a new tab
// or browser starts signed out) and travels only in the Authorization
// header: never in a URL, localStorage, a cookie or a log line.

const KEY = "hookrelay.adminToken";
const BASE = "/api/v1/admin/";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

/** Called with the API's error when it refuses the token (401/403). */
let onRefused = () => {};
export function whenRefused(fn) {
  onRefused = fn;
}

/**
 * One admin call. Answers `{ok, status, data, error}`: `data` on success,
 * `error` as the API's `{code, message}` otherwise (or a NETWORK error).
 */
export async function call(method, path, body) {
  const headers = { authorization: `Bearer ${token.get() ?? ""}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  let res;
  try {
    res = await fetch(BASE + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
    });
  } catch (e) {
    return { ok: false, status: 0, error: { code: "NETWORK", message: `the API did not answer: ${e.message}` } };
  }
  let json;
  try {
    json = await res.json();
  } catch {
    return { ok: false, status: res.status, error: { code: "BAD_ANSWER", message: `HTTP ${res.status} with a body that is not the API's JSON` } };
  }
  if (res.ok && json?.status === "success") return { ok: true, status: res.status, data: json.data };
  const error = json?.error ?? { code: "BAD_ANSWER", message: `HTTP ${res.status}` };
  const result = { ok: false, status: res.status, error };
  if (res.status === 401 || res.status === 403) onRefused(result);
  return result;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body ?? {});

/** A query string from an object, leaving out empty values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}
