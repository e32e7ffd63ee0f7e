#!/usr/bin/env bash
# Runs hookrelay locally: both workers in one `wrangler dev` (so local queues
# reach across them), local D1 with migrations applied, at
# http://127.0.0.1:8787. Arguments are passed to `wrangler dev` unchanged;
# every --var also reaches the DLQ worker (through dlq/.dev.vars), and
# --persist-to also holds the migrated D1.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false

bash scripts/setup.sh
bash scripts/build.sh

# .dev.vars (created from .dev.vars.example when missing) and dlq/.dev.vars,
# which carries every --var to the DLQ worker too: wrangler gives --var to
# the first config's worker only.
node scripts/start-dev-vars.mjs "$@"

args=("$@")
has() { local f; for f in "${args[@]}"; do [[ "$f" == "$1" || "$f" == "$1="* ]] && return 0; done; return 1; }

# The migrations go where wrangler dev will look for D1: a fresh
# --persist-to directory must have its tables too.
persist=()
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --) break ;;
    --persist-to) persist=(--persist-to "${args[i + 1]:?--persist-to needs a directory}") ;;
    --persist-to=*) persist=(--persist-to "${args[i]#--persist-to=}") ;;
  esac
done
echo "[start] applying D1 migrations locally${persist[1]:+ (in ${persist[1]})}"
npx wrangler d1 migrations apply DB --local -c wrangler.toml "${persist[@]}"

defaults=()
has --port || defaults+=(--port 8787)
has --ip || defaults+=(--ip 127.0.0.1)

exec npx wrangler dev -c wrangler.toml -c dlq/wrangler.toml "${defaults[@]}" "${args[@]}"
