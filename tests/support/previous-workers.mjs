// The rollback test's fixture (tests/fixtures/previous-workers/): the
// previous release's two workers, built, with their own wrangler files and
// a stand-in for the console folder its DLQ worker names. Made once per release, from this
// checkout's git history, with
//
//   node tests/support/previous-workers.mjs <commit>
//
// which extracts that commit into a temporary folder, builds it there with
// its own scripts/build.sh (sharing this checkout's cargo target folder, so
// only the workspace crates compile again) and copies the output here.
// tests/upgrade-rollback.test.mjs then runs those builds over the rows and
// messages today's release leaves.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const FIXTURE = path.join(ROOT, "tests/fixtures/previous-workers");
// What a worker needs at run time: worker-build's output (no shim, no stamps).
const BUILD_FILES = /^(index\.js|index_bg\.wasm|glue\.mjs|read_body\.mjs)$/;

const commit = process.argv[2];
if (!commit) {
  console.error("usage: node tests/support/previous-workers.mjs <commit of the previous release>");
  process.exit(2);
}
const sha = execFileSync("git", ["rev-parse", "--verify", `${commit}^{commit}`], { cwd: ROOT, encoding: "utf8" }).trim();
const dir = mkdtempSync(path.join(os.tmpdir(), "hookrelay-previous-"));
try {
  execFileSync("bash", ["-c", `git archive ${sha} | tar -x -C "${dir}"`], { cwd: ROOT, stdio: "inherit" });
  symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  execFileSync("bash", ["scripts/build.sh"], { cwd: dir, stdio: "inherit", env: { ...process.env, CARGO_TARGET_DIR: path.join(ROOT, "target") } });
  rmSync(FIXTURE, { recursive: true, force: true });
  for (const [name, from] of [["relay", "."], ["dlq", "dlq"]]) {
    const out = path.join(FIXTURE, name);
    mkdirSync(path.join(out, "build"), { recursive: true });
    cpSync(path.join(dir, from, "wrangler.toml"), path.join(out, "wrangler.toml"));
    cpSync(path.join(dir, from, "build"), path.join(out, "build"), { recursive: true, filter: (src) => src.endsWith("/build") || BUILD_FILES.test(path.basename(src)) });
  }
  // The DLQ worker's [assets] folder must exist; the test never opens the
  // console, so only a note stands in for it (its files would duplicate dlq/console).
  mkdirSync(path.join(FIXTURE, "dlq/console"), { recursive: true });
  writeFileSync(path.join(FIXTURE, "dlq/console/README.txt"), "The previous DLQ worker's wrangler.toml serves [assets] from here; the rollback test never opens the console, so its files are left out (they would only duplicate dlq/console).\n");
  writeFileSync(path.join(FIXTURE, "COMMIT"), `${sha}\n`);
  console.log(`tests/fixtures/previous-workers: built from ${sha}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
