// What `npm run provision` decides, as pure functions: wrangler's outputs
// parsed defensively, the resources and secrets both configs need, and the
// plan of what is missing. No I/O here: scripts/provision.mjs runs wrangler
// and applies the plan; tests/provision.test.mjs feeds canned outputs.
import { ScriptError } from "./fail.mjs";

/** 14 days, the longest a queue keeps a message: a dead letter waits for triage, never expires first. */
export const DLQ_RETENTION_S = 14 * 24 * 3600;

/** The secrets the project generates itself, and which worker reads each. */
export const OWN_SECRETS = [
  { name: "ADMIN_JWT_SECRET", workers: ["relay", "dlq"], why: "signs admin and pull tokens (npm run admin-token); the DLQ worker checks admin tokens with it and the relay pull tokens (its pull API); the same value in both" },
  { name: "RELAY_INTERNAL_SECRET", workers: ["relay", "dlq"], why: "proves the DLQ worker's calls to the relay; the same value in both" },
  { name: "DOWNSTREAM_SIGNING_SECRET", workers: ["relay"], why: "signs downstream deliveries and alerts" },
];

const unreadable = (what, text) =>
  new ScriptError(`could not read the output of \`${what}\` (${JSON.stringify(String(text).trim().slice(0, 160))}); check that wrangler works (npx wrangler whoami) and run again`);

// Strips ANSI colours, in case a terminal forced them on.
// eslint-disable-next-line no-control-regex
const plain = (text) => String(text ?? "").replace(/\x1b\[[0-9;]*m/g, "");

/** The first JSON value in `text` (wrangler may print a banner before it, or a notice after it). */
function firstJson(text, what) {
  const t = plain(text);
  const at = t.search(/[[{]/);
  if (at < 0) throw unreadable(what, text);
  const close = t[at] === "[" ? "]" : "}";
  // The longest slice that parses, from the last closing bracket back.
  for (let end = t.lastIndexOf(close); end > at; end = t.lastIndexOf(close, end - 1)) {
    try {
      return JSON.parse(t.slice(at, end + 1));
    } catch {
      // not valid up to there: try the previous closing bracket
    }
  }
  throw unreadable(what, text);
}

/** `wrangler whoami --json`: `{loggedIn}`; anything unreadable counts as not logged in. */
export function parseWhoami({ code, stdout }) {
  try {
    const who = firstJson(stdout, "wrangler whoami --json");
    return { loggedIn: code === 0 && who.loggedIn === true, email: who.email, accounts: (who.accounts ?? []).map((a) => a.name) };
  } catch {
    return { loggedIn: false };
  }
}

/** `wrangler d1 list --json`: `[{name, uuid}]`. */
export function parseD1List(stdout) {
  const list = firstJson(stdout, "wrangler d1 list --json");
  if (!Array.isArray(list) || !list.every((d) => typeof d?.name === "string" && typeof d?.uuid === "string")) throw unreadable("wrangler d1 list --json", stdout);
  return list.map(({ name, uuid }) => ({ name, uuid }));
}

/**
 * The cells of a cli-table3 table (what `wrangler queues list` prints), as
 * objects keyed by the header row. An empty list prints no rows at all.
 */
export function parseTable(stdout, what) {
  const rows = plain(stdout)
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("│") && l.endsWith("│"))
    .map((l) => l.slice(1, -1).split("│").map((c) => c.trim()));
  if (rows.length === 0) {
    // No table: fine when wrangler printed nothing else that looks like data.
    if (plain(stdout).split("\n").some((l) => /\S/.test(l) && !/^[┌┐└┘─┬┴┼├┤\s]*$/.test(l) && !/^\s*(⛅️|─|Listing|wrangler)/.test(l))) throw unreadable(what, stdout);
    return [];
  }
  const [head, ...body] = rows;
  return body.map((cells) => Object.fromEntries(head.map((h, i) => [h, cells[i] ?? ""])));
}

/** `wrangler queues list [--page n]`: the queue names on that page. */
export function parseQueuesList(stdout) {
  const rows = parseTable(stdout, "wrangler queues list");
  if (rows.length && !("name" in rows[0])) throw unreadable("wrangler queues list", stdout);
  return rows.map((r) => r.name).filter(Boolean);
}

/** `wrangler r2 bucket list`: labelled blocks, `name:  <bucket>` then `creation_date: …`. */
export function parseR2List(stdout) {
  const text = plain(stdout);
  const names = [...text.matchAll(/^\s*name:\s+(\S+)\s*$/gm)].map((m) => m[1]);
  const dates = [...text.matchAll(/^\s*creation_date:/gm)].length;
  if (names.length !== dates) throw unreadable("wrangler r2 bucket list", stdout);
  return names;
}

/**
 * `wrangler secret list` (JSON by default): `{exists, names}`. A Worker that
 * was never deployed has no secrets: wrangler says it is "not found".
 */
export function parseSecretList({ code, stdout, stderr }, worker) {
  const what = `wrangler secret list (${worker})`;
  if (code === 0) {
    const list = firstJson(stdout, what);
    if (!Array.isArray(list) || !list.every((s) => typeof s?.name === "string")) throw unreadable(what, stdout);
    return { exists: true, names: list.map((s) => s.name) };
  }
  if (/Worker "[^"]+"(?: \(env: [^)]*\))? not found/.test(plain(`${stdout}\n${stderr}`))) return { exists: false, names: [] };
  throw unreadable(what, `${stderr}${stdout}`);
}

/** A JSON var given as a TOML table, or as a JSON string; `{}` when absent. */
export function jsonVar(vars, key, file) {
  const value = vars?.[key];
  if (value == null || value === "") return {};
  if (typeof value === "object") return value;
  try {
    const parsed = JSON.parse(value);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed;
  } catch {
    // fall through to the error below
  }
  throw new ScriptError(`${file} [vars] ${key} is neither a table nor a JSON object; fix it (npm run build checks its schema)`);
}

/** The secret named `prefix` + the name upper-cased, `-` becoming `_` (core/src/receive/sources.rs). */
export const secretFor = (prefix, name) => `${prefix}${name.toUpperCase().replaceAll("-", "_")}`;

/**
 * Every resource the two configs bind, once each: databases by name (with
 * the bindings that use them), queues (a dead-letter queue keeps 14 days),
 * buckets.
 */
export function neededResources(relay, dlq) {
  const databases = new Map();
  const queues = new Map();
  const buckets = new Map();
  for (const cfg of [relay, dlq]) {
    for (const d of cfg.d1_databases ?? []) {
      const db = databases.get(d.database_name) ?? { name: d.database_name, binding: d.binding, ids: new Map() };
      db.ids.set(cfg.file, d.database_id ?? "");
      databases.set(d.database_name, db);
    }
    for (const p of cfg.queues?.producers ?? []) queues.set(p.queue, queues.get(p.queue) ?? { name: p.queue });
    for (const c of cfg.queues?.consumers ?? []) {
      queues.set(c.queue, queues.get(c.queue) ?? { name: c.queue });
      if (c.dead_letter_queue) queues.set(c.dead_letter_queue, { name: c.dead_letter_queue, retentionS: DLQ_RETENTION_S });
    }
    for (const b of cfg.r2_buckets ?? []) buckets.set(b.bucket_name, { name: b.bucket_name, jurisdiction: b.jurisdiction });
  }
  // The DLQ worker consumes the dead-letter queue, so a queue it consumes that another config dead-letters into is one entry.
  return { databases: [...databases.values()], queues: [...queues.values()], buckets: [...buckets.values()] };
}

/** The providers' secrets the user sets by hand: `[{name, worker, optional}]`. */
export function providerSecrets(relay) {
  const out = [];
  for (const [name, spec] of Object.entries(jsonVar(relay.vars, "SOURCES", relay.file))) {
    // A public-key scheme carries its key in the source itself.
    if (spec && typeof spec === "object" && spec.public_key) continue;
    out.push({ name: secretFor("WEBHOOK_SECRET_", name), worker: "relay", why: `source ${name}` });
  }
  for (const [name, spec] of Object.entries(jsonVar(relay.vars, "DESTINATIONS", relay.file))) {
    if (spec && typeof spec === "object" && spec.auth) out.push({ name: secretFor("DESTINATION_SECRET_", name), worker: "relay", why: `destination ${name} (auth ${spec.auth})` });
  }
  out.push({ name: "ALERT_WEBHOOK_URL", worker: "relay", why: "where alerts go (optional: without it alarms are still recorded and listed)", optional: true });
  return out;
}

const envArgs = (env) => (env ? ["--env", env] : []);

/**
 * The plan: what to create, write, set and apply, given the account as read
 * (`account` null: it could not be read, so everything is listed as to do
 * "if missing"). Each step is `{kind, say, args?}`; `args` are wrangler's.
 */
export function provisionPlan({ relay, dlq, env, account }) {
  const known = account != null;
  const need = neededResources(relay, dlq);
  const configs = { relay, dlq };
  const steps = [];
  const maybe = known ? "" : " (if missing)";
  for (const db of need.databases) {
    const found = known ? account.databases.find((d) => d.name === db.name) : undefined;
    if (!found) steps.push({ kind: "create-database", name: db.name, say: `create the D1 database ${db.name}${maybe}`, args: ["d1", "create", db.name] });
    const stale = [...db.ids].filter(([, id]) => !found || id !== found.uuid).map(([file]) => file);
    if (stale.length) steps.push({ kind: "write-database-id", name: db.name, files: stale, say: `write ${db.name}'s database_id into ${stale.join(" and ")}${env ? ` ([env.${env}])` : ""}${known && found ? ` (${found.uuid})` : ""}` });
  }
  for (const q of need.queues) {
    const exists = known && account.queues.includes(q.name);
    const retention = q.retentionS ? ["--message-retention-period-secs", String(q.retentionS)] : [];
    if (!exists) steps.push({ kind: "create-queue", name: q.name, say: `create the queue ${q.name}${q.retentionS ? " with a 14-day retention" : ""}${maybe}`, args: ["queues", "create", q.name, ...retention] });
    // The retention of an existing queue cannot be read with wrangler; setting it again to 14 days is a no-op when it is already.
    else if (q.retentionS) steps.push({ kind: "set-retention", name: q.name, say: `keep ${q.name}'s messages 14 days (queues update; a no-op when it is already)`, args: ["queues", "update", q.name, ...retention] });
  }
  for (const b of need.buckets) {
    if (!(known && account.buckets.includes(b.name))) steps.push({ kind: "create-bucket", name: b.name, say: `create the R2 bucket ${b.name}${maybe}`, args: ["r2", "bucket", "create", b.name, ...(b.jurisdiction ? ["--jurisdiction", b.jurisdiction] : [])] });
  }
  for (const s of OWN_SECRETS) {
    const missing = s.workers.filter((w) => !(known && account.secrets[w].names.includes(s.name)));
    if (!missing.length) continue;
    // RELAY_INTERNAL_SECRET must be equal in both workers, and a secret cannot be read back: when one lacks it, both get a new value.
    const targets = s.workers.length > 1 ? s.workers : missing;
    const rotates = targets.length > missing.length ? ` (set on ${targets.find((w) => !missing.includes(w)) === "relay" ? relay.name : dlq.name} only, which cannot be read back, so both get a new value)` : "";
    // `wrangler secret put` on a worker never deployed creates an empty one to hold the secret.
    const drafts = known ? targets.filter((w) => !account.secrets[w].exists).map((w) => configs[w].name) : [];
    const draft = drafts.length ? ` (wrangler first creates an empty ${drafts.join(" and ")} to hold it; npm run deploy replaces it)` : "";
    steps.push({
      kind: "put-secret",
      name: s.name,
      workers: targets.map((w) => ({ worker: w, config: configs[w].file, script: configs[w].name })),
      say: `generate ${s.name} (32 random bytes) and set it on ${targets.map((w) => configs[w].name).join(" and ")}${maybe}${rotates}${draft}: ${s.why}`,
    });
  }
  steps.push({ kind: "migrate", name: relay.d1_databases?.[0]?.binding ?? "DB", say: "apply the D1 migrations remotely (only those not applied yet)", args: ["d1", "migrations", "apply", relay.d1_databases?.[0]?.binding ?? "DB", "--remote", "-c", relay.file, ...envArgs(env)] });
  const toSet = providerSecrets(relay)
    .filter((s) => !(known && account.secrets[s.worker].names.includes(s.name)))
    .map((s) => ({ ...s, command: `npx wrangler secret put ${s.name} -c ${configs[s.worker].file}${env ? ` --env ${env}` : ""}` }));
  return { known, steps, toSet };
}

/** The plan as the lines `npm run provision` prints. */
export function describePlan({ known, steps, toSet }, { dryRun }) {
  const lines = [];
  if (!known) lines.push("could not read the account (no CLOUDFLARE_API_TOKEN and no `wrangler login`): this is the whole plan, each step as if its resource were missing");
  lines.push(dryRun ? "would do, in order (--dry-run: nothing is changed):" : "will do, in order:");
  steps.forEach((s, i) => lines.push(`  ${i + 1}. ${s.say}`));
  if (toSet.length) {
    lines.push(known ? "secrets still to set by you (the providers' keys; none is ever printed):" : "secrets you set yourself (the providers' keys), unless already set:");
    for (const s of toSet) lines.push(`  ${s.command}   # ${s.why}`);
  } else lines.push("every provider secret is set");
  return lines;
}

/**
 * `text` (a wrangler.toml) with `database_id` of the database named
 * `databaseName` set to `id`, in the top-level `[[d1_databases]]` tables, or
 * in `[[env.<env>.d1_databases]]` when `env` is given. Comments and layout
 * are kept. `{text, changed}`; a throw when no such table is found (an
 * inline-table layout, say), naming the id to set by hand.
 */
export function setDatabaseId(text, { databaseName, id, env, file }) {
  const header = env ? `[[env.${env}.d1_databases]]` : "[[d1_databases]]";
  const lines = text.split("\n");
  // Each table: its header's line and the line after its last key.
  const tables = [];
  lines.forEach((l, i) => {
    if (!l.trim().startsWith("[")) return;
    if (tables.length && tables.at(-1).end === undefined) tables.at(-1).end = i;
    if (l.trim() === header) tables.push({ start: i });
  });
  if (tables.length && tables.at(-1).end === undefined) tables.at(-1).end = lines.length;
  const isName = new RegExp(`^\\s*database_name\\s*=\\s*["']${escapeRe(databaseName)}["']\\s*(#.*)?$`);
  let found = false;
  let changed = false;
  // Last table first, so an inserted line never shifts a table still to do.
  for (const { start, end } of tables.reverse()) {
    const body = [...Array(end - start - 1).keys()].map((k) => start + 1 + k);
    const nameAt = body.find((i) => isName.test(lines[i]));
    if (nameAt === undefined) continue;
    found = true;
    const idAt = body.find((i) => /^\s*database_id\s*=/.test(lines[i]));
    if (idAt === undefined) {
      lines.splice(nameAt + 1, 0, `database_id = "${id}"`);
      changed = true;
    } else {
      const next = lines[idAt].replace(/^(\s*)database_id\s*=\s*("[^"]*"|'[^']*')/, `$1database_id = "${id}"`);
      changed ||= next !== lines[idAt];
      lines[idAt] = next;
    }
  }
  if (!found) throw new ScriptError(`${file} has no ${header} table with database_name = "${databaseName}"; set its database_id to ${id} by hand`);
  return { text: lines.join("\n"), changed };
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
