#!/usr/bin/env bash
# warden's benchmarks, each side by side with the peer its issue names, in
# one run. Results go to stdout; docs/benchmarks.md records them with this
# command. Usage: scripts/bench.sh [bin/warden]
set -euo pipefail
warden=$(realpath "${1:-bin/warden}")
command -v hyperfine >/dev/null || { echo "bench: needs hyperfine (apt-get install hyperfine)"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/warden-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q .

echo "== sandbox start-up: warden run -- true vs raw bubblewrap"
hyperfine -N --warmup 10 --runs "${RUNS:-100}" \
  "$warden run -- true" \
  "bwrap --ro-bind / / --unshare-all true" \
  "bwrap --ro-bind / / --unshare-all --dev /dev --proc /proc --new-session --die-with-parent --cap-drop ALL true"

echo
echo "== policy and compiler micro-benchmarks"
cd - >/dev/null
go test -run '^$' -bench . -benchmem ./internal/policy/ ./internal/sandbox/bwrap/ 2>/dev/null | grep -E '^(Benchmark|ok)' || true
