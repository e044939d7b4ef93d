#!/usr/bin/env bash
# warden's benchmarks, each side by side with the peer its issue names, in
# one run. docs/benchmarks.md records the results with this command.
# Usage: scripts/bench.sh [bin/warden]   (RUNS=N to change hyperfine's count)
set -euo pipefail
warden=$(realpath "${1:-bin/warden}")
root=$(pwd)
command -v hyperfine >/dev/null || { echo "bench: needs hyperfine (apt-get install hyperfine)"; exit 1; }
runs=${RUNS:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/warden-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q .

echo "== 1. sandbox start-up: warden run -- true (all layers) vs raw bubblewrap"
hyperfine -N --warmup 10 --runs "$runs" \
  "bwrap --ro-bind / / --unshare-all true" \
  "$warden run -- true" \
  "$warden run --backend landlock -- true"

echo
echo "== 2. git status in a 5,000-file repository: native vs inside warden"
mkdir -p "$work/repo" && cd "$work/repo"
git init -q .
for d in $(seq 1 50); do mkdir -p "d$d"; for f in $(seq 1 100); do echo "$d $f" > "d$d/f$f.txt"; done; done
git add -A && git -c user.name=b -c user.email=b@b commit -qm files
echo "-- git status itself, timed by hyperfine natively and inside one warden sandbox:"
hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/native.json" "git status --porcelain" >/dev/null
"$warden" run --allow-write "$work" -- hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/inside.json" "git status --porcelain" >/dev/null
python3 - "$work/native.json" "$work/inside.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))["results"][0]
i = json.load(open(sys.argv[2]))["results"][0]
print(f"  native:        {n['mean']*1e3:6.2f} ms ± {n['stddev']*1e3:.2f}")
print(f"  inside warden: {i['mean']*1e3:6.2f} ms ± {i['stddev']*1e3:.2f}   ratio {i['mean']/n['mean']:.2f}x")
PY
echo "-- and one git status per sandbox (start-up included):"
hyperfine -N --warmup 5 --runs "$runs" \
  "git status --porcelain" \
  "$warden run -- git status --porcelain"

echo
echo "== 3. start to first skill request: one sidecar (examples/skills/echo, in its own sandbox), encrypted-file keyring"
make -C "$root/examples/skills/echo" >/dev/null
for kdf in keyfile passphrase; do
  state=$(mktemp -d)
  printf 'ECHO_TOKEN=bench\n' > "$state/echo.env"
  if [ "$kdf" = keyfile ]; then
    "$warden" secret keyfile "$state/keyring.key" 2>/dev/null
    keyenv=(WARDEN_KEYRING_KEYFILE="$state/keyring.key")
  else
    keyenv=(WARDEN_KEYRING_PASSPHRASE=bench)   # scrypt N=2^15 at every start
  fi
  env XDG_STATE_HOME="$state" XDG_DATA_HOME="$state" WARDEN_KEYRING_BACKEND=file "${keyenv[@]}" \
    "$warden" skill register "$root/examples/skills/echo" --secrets-from "$state/echo.env" --yes 2>/dev/null
  echo "-- keyring unlocked by a $kdf:"
  env XDG_STATE_HOME="$state" XDG_DATA_HOME="$state" WARDEN_KEYRING_BACKEND=file "${keyenv[@]}" \
    hyperfine -N --warmup 3 --runs 20 \
    "$warden run -- curl -sS --version" \
    "$warden run --skill echo -- curl -sS --unix-socket /run/warden/facade.sock http://warden/echo/status"
  chmod -R u+w "$state"; rm -rf "$state"
done

echo
echo "== 4. egress: HTTPS fetches direct vs warden (CONNECT, intercepted) vs srt's proxy, one client, one run"
cd "$root"
srt_dir=${SRT_DIR:-$(npm root -g 2>/dev/null)/@anthropic-ai/sandbox-runtime}
if [ ! -f "$srt_dir/dist/sandbox/http-proxy.js" ]; then
  npm i -g @anthropic-ai/sandbox-runtime@0.0.83 >/dev/null
  srt_dir=$(npm root -g)/@anthropic-ai/sandbox-runtime
fi
# srt's proxy runs until its stdin closes: hold it open on a fifo.
fifo="$work/srt.stdin"; mkfifo "$fifo"
SRT_DIR="$srt_dir" node "$root/scripts/bench/srt-proxy.mjs" bench.test,127.0.0.1 bench.test=127.0.0.1 <"$fifo" >"$work/srt.url" &
srt_pid=$!
exec 9>"$fifo"
for _ in $(seq 50); do [ -s "$work/srt.url" ] && break; sleep 0.1; done
go run ./scripts/bench/egress -n "${EGRESS_RUNS:-300}" -srt "$(cat "$work/srt.url")"
exec 9>&-; wait "$srt_pid" || true
echo "-- rule evaluation and in-process proxy micro-benchmarks (go test -bench)"
go test -run '^$' -bench 'Decide10kRules|Connect|Intercept' -benchtime=200x ./internal/egress/ 2>/dev/null | grep -E '^(Benchmark|ok)' || true
go test -run '^$' -bench . -benchtime=2000x ./internal/facade/ 2>/dev/null | grep -E '^(Benchmark|ok)' || true

echo
echo "== 5. warden start HARNESS -- --version vs the harness alone (the harnesses make e2e installs)"
cache=${WARDEN_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/warden-e2e}
[ -x "$cache/node_modules/.bin/claude" ] || "$root/scripts/e2e.sh" -run XXX >/dev/null
proj="$work/harness-proj"; mkdir -p "$proj" && cd "$proj" && git init -q .
export PATH="$cache/node_modules/.bin:$PATH"
for h in claude opencode codex gemini; do
  # The harness alone, started the way warden starts it (the native binary,
  # or node and the bundle), so only warden's own cost is compared.
  alone=$("$warden" start "$h" --print-plan 2>/dev/null | sed -n 's/^binary *//p')
  hyperfine -N --warmup 3 --runs "${HARNESS_RUNS:-20}" -n "$h alone" "$alone --version" -n "warden start $h" "$warden start $h -- --version"
done
