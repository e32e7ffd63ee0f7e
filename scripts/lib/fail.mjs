// How every user-run script ends a failure: one line on stderr that says
// what went wrong and what to do, never a stack trace. `run(name, main)` is
// the one place that turns an error into that line and an exit code.
import { pathToFileURL } from "node:url";

/** A failure the user can act on: `message` says what went wrong and what to do. */
export class ScriptError extends Error {
  constructor(message, { exitCode = 1 } = {}) {
    super(message);
    this.name = "ScriptError";
    this.exitCode = exitCode;
  }
}

/** Throws a ScriptError (exit code 2 for bad usage, 1 otherwise). */
export function fail(message, exitCode = 1) {
  throw new ScriptError(message, { exitCode });
}

/** One line: newlines and runs of spaces in `text` become single spaces. */
export const oneLine = (text) => String(text).replace(/\s*\n\s*/g, "; ").replace(/\s+/g, " ").trim();

/**
 * What a failed `fetch(url)` means to the user. Node's fetch reports a
 * refused connection as `TypeError: fetch failed` with the reason in `cause`.
 */
export function fetchFailure(e, url, hint) {
  const code = e?.cause?.code ?? e?.code;
  const origin = (() => {
    try {
      return new URL(url).origin;
    } catch {
      return String(url);
    }
  })();
  const why =
    code === "ECONNREFUSED" ? `no relay answers at ${origin} (connection refused)`
    : code === "ENOTFOUND" || code === "EAI_AGAIN" ? `the host of ${origin} is not found (DNS)`
    : e?.name === "TimeoutError" || code === "UND_ERR_CONNECT_TIMEOUT" ? `${origin} did not answer in time`
    : `the request to ${origin} failed (${e?.cause?.message ?? e?.message ?? e})`;
  return new ScriptError(`${why}; ${hint}`);
}

/** True when `metaUrl` is the module node was started with. */
export const isMain = (metaUrl) => Boolean(process.argv[1]) && metaUrl === pathToFileURL(process.argv[1]).href;

/**
 * Runs `main()`; a failure prints `<name>: <one line>` to stderr and sets
 * the exit code. An unexpected error keeps its message (still one line);
 * HOOKRELAY_DEBUG=1 prints its stack as well, for a bug report.
 */
export async function run(name, main) {
  try {
    await main();
  } catch (e) {
    const expected = e instanceof ScriptError;
    const message = oneLine(e?.message ?? e);
    console.error(`${name}: ${expected ? message : `${message} (unexpected error; rerun with HOOKRELAY_DEBUG=1 for the stack trace and report it)`}`);
    if (!expected && process.env.HOOKRELAY_DEBUG === "1") console.error(e?.stack);
    process.exitCode = expected ? e.exitCode : 1;
  }
}
