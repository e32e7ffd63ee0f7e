// The command line of `npm run provision` and `npm run deploy`: the same
// two options, `--env <name>` and `--dry-run`, read in one place.
import { fail } from "./fail.mjs";

/** `{env, dryRun}` from `argv`; anything else is refused, naming `usage`. */
export function envArgs(argv, usage) {
  const out = { env: undefined, dryRun: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--dry-run") out.dryRun = true;
    else if (a === "--env" || a === "-e") out.env = argv[++i] ?? fail(`--env needs a name; ${usage}`, 2);
    else if (a.startsWith("--env=")) out.env = a.slice("--env=".length);
    else fail(`unknown argument ${JSON.stringify(a)}; ${usage}`, 2);
  }
  return out;
}
