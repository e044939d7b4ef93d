#!/usr/bin/env bash
# Runs the keychain tests against a real Secret Service: gnome-keyring in a
# private D-Bus session, unlocked with a throw-away password, in a
# throw-away $HOME. Needs dbus-run-session and gnome-keyring-daemon
# (apt-get install dbus gnome-keyring). Fails if the test skips.
set -euo pipefail
for c in dbus-run-session gnome-keyring-daemon; do
  command -v "$c" >/dev/null || { echo "test-keyring: needs $c (apt-get install dbus gnome-keyring)"; exit 1; }
done
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)"
status=0
HOME="$home" XDG_RUNTIME_DIR="$home" dbus-run-session -- sh -c '
  printf %s warden-ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  go test -count=1 -v -run "Native|Keyring" ./internal/secrets/keychain/
' >"$home/out" 2>&1 || status=$?
grep -E "^(--- |ok|FAIL|PASS)|SKIP" "$home/out" || true
if [ "$status" != 0 ] || ! grep -q -- "--- PASS: TestNativeKeyring" "$home/out"; then
  echo "test-keyring: the Secret Service test did not pass"; tail -20 "$home/out"; exit 1
fi
