#!/usr/bin/env bash
# Runs hookrelay locally: both workers in one `wrangler dev` (so local queues
# reach across them), local D1 with migrations applied, at
# http://127.0.0.1:8787. Arguments are passed to `wrangler dev`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false

bash scripts/setup.sh
bash scripts/build.sh

if [ ! -f .dev.vars ]; then
  echo "[start] creating .dev.vars from .dev.vars.example (development secrets)"
  cp .dev.vars.example .dev.vars
else
  # A .dev.vars from an older checkout may lack a secret added since.
  while IFS= read -r line; do
    key="${line%%=*}"
    case "$line" in ''|'#'*) continue ;; esac
    if ! grep -q "^${key}=" .dev.vars; then
      echo "[start] adding missing ${key} to .dev.vars from .dev.vars.example"
      printf '%s\n' "$line" >> .dev.vars
    fi
  done < .dev.vars.example
fi
# wrangler reads .dev.vars beside each config; the DLQ worker shares the relay's.
[ -e dlq/.dev.vars ] || ln -s ../.dev.vars dlq/.dev.vars

echo "[start] applying D1 migrations locally"
npx wrangler d1 migrations apply DB --local -c wrangler.toml

args=("$@")
has() { local f; for f in "${args[@]}"; do [[ "$f" == "$1" || "$f" == "$1="* ]] && return 0; done; return 1; }
defaults=()
has --port || defaults+=(--port 8787)
has --ip || defaults+=(--ip 127.0.0.1)

exec npx wrangler dev -c wrangler.toml -c dlq/wrangler.toml "${defaults[@]}" "${args[@]}"
