// The console's browser tests share this: Debian's Chromium driven by
// puppeteer-core (never a downloaded build) on the relay's origin, every
// request URL the pages make recorded, and the steps an engineer takes
// (sign in, click a link or button by its visible text, type a reason).
import assert from "node:assert/strict";
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import puppeteer from "puppeteer-core";
import { ROOT } from "../../scripts/miniflare-workers.mjs";
import { token } from "./admin.mjs";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = path.join(ROOT, "tests/screenshots");
/** Where the console keeps the token (dlq/console/admin/api.js). */
export const TOKEN_KEY = "hookrelay.adminToken";

/**
 * Launches Chromium for `relay` with one 1280x800 page. Answers
 * `{browser, page, origin, token, requested, newPage, close}`; `requested`
 * holds every URL any of its pages requested.
 */
export async function openConsole(relay) {
  const userDir = await mkdtemp(path.join(tmpdir(), "console-chromium-"));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: userDir,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const requested = [];
  /** A page whose every request URL is recorded, with the 1280x800 viewport. */
  const newPage = async (context) => {
    const p = await context.newPage();
    await p.setViewport({ width: 1280, height: 800 });
    p.on("request", (r) => requested.push(r.url()));
    p.on("pageerror", (e) => assert.fail(`the page threw: ${e.message}`));
    return p;
  };
  const page = await newPage(browser.defaultBrowserContext());
  return {
    browser, page, requested, newPage,
    origin: relay.url.origin,
    token: token(),
    async close() {
      await browser.close();
      await rm(userDir, { recursive: true, force: true });
    },
  };
}

/** Clicks the enabled, visible link or button whose visible text is exactly `text`. */
export async function click(p, text, within = "body") {
  const el = await p.waitForFunction((t, w) => [...document.querySelector(w).querySelectorAll("a, button")]
    .find((e) => e.textContent.trim() === t && !e.disabled && e.offsetParent !== null), { timeout: 15_000 }, text, within);
  await el.asElement().click();
}

/** Waits until `fn` (run in the page) is truthy, and answers its value. */
export const until = (p, fn, ...args) => p.waitForFunction(fn, { timeout: 30_000, polling: 50 }, ...args).then((h) => h.jsonValue());

/**
 * The next admin API answer to `method /api/v1/admin/<path>` (query
 * included) as the page received it: `{status, data, error}`. Call it
 * before the step that makes the request.
 */
export async function answerTo(p, path, method = "GET") {
  const want = new URL(`/api/v1/admin/${path}`, "http://x");
  // The same parameters however the page encoded them.
  const params = (u) => JSON.stringify([...u.searchParams].sort());
  const res = await p.waitForResponse((r) => {
    const u = new URL(r.url());
    return r.request().method() === method && u.pathname === want.pathname && params(u) === params(want);
  });
  const json = await res.json();
  return { status: res.status(), data: json.data, error: json.error };
}

/** Opens the console on `p`, pastes `tok` into the token field, and answers the time just before the Sign in click. */
export async function signIn(c, p = c.page, tok = c.token) {
  await p.goto(`${c.origin}/admin`);
  const input = await p.waitForSelector("input[name=token]");
  // Pasted, as an engineer would: typing 200 characters one key at a time
  // would dominate the measured time.
  await input.evaluate((el, t) => { el.value = t; }, tok);
  const at = Date.now();
  await click(p, "Sign in");
  return at;
}

/** Replaces the text of the page's reason field with `text`, typed. */
export async function reason(p, text) {
  const input = await p.waitForSelector("main input[name=reason]");
  await input.click({ count: 3 });
  await input.type(text);
}

/** The texts of each body row of the table captioned `caption`. */
export const tableRows = (p, caption) => p.$$eval("table", (tables, c) => {
  const t = tables.find((x) => x.caption?.textContent === c);
  return t ? [...t.tBodies[0].rows].map((r) => [...r.cells].map((td) => td.textContent)) : null;
}, caption);

/**
 * Saves `tests/screenshots/<name>-1280.png` and `-390.png` (the whole
 * page), after checking that neither width scrolls sideways.
 */
export async function screenshot(p, name) {
  await mkdir(SHOTS, { recursive: true });
  for (const width of [1280, 390]) {
    await p.setViewport({ width, height: width === 1280 ? 800 : 844 });
    const sideways = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(sideways <= 0, `${name} at ${width} px scrolls sideways by ${sideways} px`);
    await p.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await p.setViewport({ width: 1280, height: 800 });
}

/**
 * The token (the session's, signed in on `p`) is in no URL any page
 * requested, not in localStorage, and not in any log line of the workers.
 */
export async function assertTokenKept(c, relay, p = c.page) {
  assert.equal(await p.evaluate(() => localStorage.length), 0, "nothing in localStorage");
  assert.equal(await p.evaluate((k, t) => sessionStorage.getItem(k) === t, TOKEN_KEY, c.token), true, "the token is in sessionStorage");
  assert.ok(c.requested.length > 10, `the pages made their calls: ${c.requested.length}`);
  const signature = c.token.split(".")[2];
  assert.deepEqual(c.requested.filter((u) => u.includes(c.token) || u.includes(signature)), [], "the token is in no requested URL");
  assert.ok(relay.logs.length > 0, "the workers logged");
  assert.deepEqual(relay.logs.filter((l) => l.includes(signature)), [], "the token is in no log line");
}
