#!/usr/bin/env bash
# Installs the pinned toolchain hookrelay builds with, from the package
# registries only. Each step is skipped when the right version is present,
# so a second run takes a second or two.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKER_BUILD_VERSION=0.8.7
# wasm-bindgen-cli must match the wasm-bindgen crate in Cargo.lock exactly.
WASM_BINDGEN_VERSION=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$CARGO_BIN:$PATH"

step() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if ! worker-build --version 2>/dev/null | grep -q "$WORKER_BUILD_VERSION"; then
  step "installing worker-build $WORKER_BUILD_VERSION (takes several minutes once)"
  cargo install worker-build --version "$WORKER_BUILD_VERSION"
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
  step "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (takes several minutes once)"
  # No --locked: one of its locked dependencies is missing from the index.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "installing npm packages"
  npm ci --no-audit --no-fund
fi
