#!/usr/bin/env bash
# Runs the test suite as an unprivileged user: sandboxing behaves differently
# without root (user namespaces are the only way in), and most users are not
# root. Needs root to create the user; the repository is copied so that the
# user owns its working tree and caches.
set -euo pipefail
user=${WARDEN_TEST_USER:-warden-ci}
target=${1:-test}
if [ "$(id -u)" != 0 ]; then
  echo "test-unpriv: already unprivileged; running make $target"; exec make "$target"
fi
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
work="$home/warden-src"
rm -rf "$work"
mkdir -p "$work"
git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "$work"/ 2>/dev/null || cp -r . "$work"
chown -R "$user": "$home"
gopath=$(command -v go); goroot=$(go env GOROOT)
# Share the module cache read-only is not possible (go locks files), so the
# user downloads through the same proxy configuration as root.
su - "$user" -c "cd '$work' && export PATH='$goroot/bin:/usr/local/bin:/usr/bin:/bin' GOFLAGS='$(go env GOFLAGS)' GOPROXY='$(go env GOPROXY)' GONOSUMDB='$(go env GONOSUMDB)' GOSUMDB='$(go env GOSUMDB)' && id && make $target"
