#!/usr/bin/env bash
# Builds and deploys both workers to Cloudflare. See README "Deploying" for
# the one-time set-up (D1, queues, migrations, secrets).
#
# The workers bind each other (the relay forwards the admin API to the DLQ
# worker; the DLQ worker hands replays back to the relay), and a service
# binding needs its target to exist. On the very first deploy the DLQ worker
# therefore goes out once without its RELAY binding, then the relay, then
# the DLQ worker again with the binding.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
bash scripts/setup.sh
bash scripts/build.sh
if ! npx wrangler deploy -c dlq/wrangler.toml "$@"; then
  echo "[deploy] hookrelay-dlq failed; if this is the first deploy, the relay does not exist yet: bootstrapping without the RELAY binding"
  bootstrap=dlq/wrangler.bootstrap.toml
  trap 'rm -f "$bootstrap"' EXIT
  awk '/^\[\[services\]\]/{skip=1; next} skip && /^(binding|service) =/{next} {skip=0; print}' dlq/wrangler.toml > "$bootstrap"
  npx wrangler deploy -c "$bootstrap" "$@"
fi
npx wrangler deploy -c wrangler.toml "$@"
npx wrangler deploy -c dlq/wrangler.toml "$@"
