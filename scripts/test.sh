#!/usr/bin/env bash
# Every test, in the order that fails fastest: format, lints, native unit
# tests, the wasm build, then the integration tests on the compiled workers
# in Miniflare (workerd) with local D1 and local queues.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

bash scripts/setup.sh
# The console's browser test drives Debian's Chromium (never a downloaded build).
command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

echo "[test] cargo fmt --check"
cargo fmt --all -- --check
echo "[test] cargo clippy (native, whole workspace, with tests) -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "[test] cargo clippy (wasm32, both workers; the native CLI excluded) -D warnings"
cargo clippy --workspace --exclude hookrelay-cli --target wasm32-unknown-unknown -- -D warnings
echo "[test] cargo test (native: core, and the platform's pure helpers)"
cargo test -p hookrelay-core -p hookrelay-platform
echo "[test] cargo test and build (native: the hookrelay CLI, run by the integration tests as target/debug/hookrelay)"
cargo test -p hookrelay-cli
cargo build -p hookrelay-cli
echo "[test] wasm build"
bash scripts/build.sh
echo "[test] integration tests (Miniflare)"
WRANGLER_SEND_METRICS=false node --test --test-concurrency=1 tests/
