#!/usr/bin/env bash
# Builds both workers to build/index.js + build/index_bg.wasm with
# worker-build, pointed at registry-installed tools instead of its own
# downloads. Skips a worker whose build output is newer than every source.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$CARGO_BIN:$PATH"

# One build at a time: `npm start` in one terminal and `npm test` in
# another both run this script on the same build/ folders, and two
# worker-build runs interleaving there can leave one's copied entry over the
# other's glue (workerd then fails with "Cannot access 'Relay' before
# initialization"). The second waits here, then finds the first's output up
# to date.
mkdir -p target
exec 9>target/.build.lock
if ! flock -n 9; then
  echo "[build] another build is running in this checkout; waiting for it"
  flock 9
fi

ESBUILD_PLATFORM=$(node -p 'process.platform + "-" + process.arch')
# The wasm-bindgen that setup.sh checked, wherever it is installed.
WASM_BINDGEN_BIN=$(command -v wasm-bindgen) || { echo "[build] wasm-bindgen not found; run: bash scripts/setup.sh" >&2; exit 1; }
export WASM_BINDGEN_BIN
export ESBUILD_BIN="$ROOT/node_modules/@esbuild/$ESBUILD_PLATFORM/bin/esbuild"
export WASM_OPT_BIN="$ROOT/node_modules/binaryen/bin/wasm-opt"
export WRANGLER_SEND_METRICS=false

# Sources that feed a worker: its own crate plus the shared crates. The
# stamp is written only after wasm-opt finished, so a build interrupted
# half-way (Ctrl-C during `npm start`) is never taken as up to date.
up_to_date() {
  local stamp="$1/build/.optimized"; shift
  [ -f "$stamp" ] || return 1
  [ -z "$(find "$@" Cargo.toml Cargo.lock -newer "$stamp" -type f 2>/dev/null | head -1)" ]
}

# The features rustc's wasm32 target emits, as worker-build enables them, so
# binaryen never emits an encoding workerd does not support yet.
WASM_FEATURES=(--enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int
  --enable-bulk-memory --enable-multivalue --enable-reference-types --enable-exception-handling)

build() {
  local dir="$1"; shift
  if up_to_date "$dir" "$@"; then
    echo "[build] $dir: up to date"
    return
  fi
  echo "[build] $dir"
  rm -f "$dir/build/.optimized"
  # The stamp keeps the time the build *started*: a source edited while it
  # runs is newer than the stamp, so the next build takes it.
  mkdir -p "$dir/build"
  touch "$dir/build/.started"
  (cd "$dir" && worker-build --release)
  # Optimize for size and drop the names section (see Cargo.toml). -Os
  # with --converge gzips smaller than -Oz here (measured on the relay:
  # 233.3 -> 231.0 KB). --low-memory-unused is sound because rustc's wasm
  # layout puts the stack first: data starts at 1 MiB and the stack grows
  # down from there, so no live address is below 1 KiB.
  "$WASM_OPT_BIN" -Os --low-memory-unused --converge --strip-debug "${WASM_FEATURES[@]}" \
    "$dir/build/index_bg.wasm" -o "$dir/build/index_bg.opt.wasm"
  mv "$dir/build/index_bg.opt.wasm" "$dir/build/index_bg.wasm"
  # A worker with its own module entry (src/entry.js): worker-build's
  # output is its glue, imported as build/glue.mjs, once its shape is checked.
  # The entry reads bodies with platform's one body reader, copied beside it.
  if [ -f "$dir/src/entry.js" ]; then
    mv "$dir/build/index.js" "$dir/build/glue.mjs"
    node scripts/check-glue.mjs "$dir/build/glue.mjs"
    cp platform/src/read_body.js "$dir/build/read_body.mjs"
    cp "$dir/src/entry.js" "$dir/build/index.js.tmp"
    mv "$dir/build/index.js.tmp" "$dir/build/index.js"
  fi
  mv "$dir/build/.started" "$dir/build/.optimized"
}

build . src build.rs wrangler.toml core/src platform/src migrations .dev.vars.example
build dlq dlq/src dlq/Cargo.toml core/src platform/src
