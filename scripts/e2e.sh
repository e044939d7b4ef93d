#!/usr/bin/env bash
# make e2e: installs the four agent harnesses from npm (pinned; cached between
# runs) and runs each under `warden start` against the scripted mock model
# (test/e2e). No API key and no traffic beyond loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${WARDEN_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/warden-e2e}
# The versions harnesses.md verified; bump deliberately, with a re-run.
pins="@anthropic-ai/claude-code@2.1.197 opencode-ai@1.18.33 @openai/codex@0.169.0 @google/gemini-cli@0.61.0"
if [ "$(cat "$cache/.pins" 2>/dev/null)" != "$pins" ]; then
  echo "e2e: installing $pins into $cache"
  mkdir -p "$cache"
  # --ignore-scripts: the native binaries come in the platform packages;
  # warden starts them directly, so no postinstall needs to run.
  # shellcheck disable=SC2086
  npm install --prefix "$cache" --no-audit --no-fund --ignore-scripts --loglevel=error $pins
  echo "$pins" > "$cache/.pins"
fi
go vet -tags e2e ./test/e2e/
WARDEN_E2E_BIN="$cache/node_modules/.bin" go test -tags e2e -count=1 -timeout 20m -v ./test/e2e/ "$@"
