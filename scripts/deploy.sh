#!/usr/bin/env bash
# Builds and deploys both workers to Cloudflare. The DLQ worker goes first:
# the relay's service binding needs it to exist. See README "Deploying" for
# the one-time set-up (D1, queues, migrations, secrets).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
bash scripts/setup.sh
bash scripts/build.sh
npx wrangler deploy -c dlq/wrangler.toml "$@"
npx wrangler deploy -c wrangler.toml "$@"
