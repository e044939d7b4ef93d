#!/usr/bin/env bash
# Installs the system packages warden needs, on Debian and Ubuntu.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v git >/dev/null 2>&1 || need+=(git)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)  # the demo installs OpenCode from npm
if ((${#need[@]})); then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "installing: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v go >/dev/null 2>&1 || { echo "warden needs Go 1.26+ to build (https://go.dev/dl)"; exit 1; }
echo "deps: $(bwrap --version), $(go version | cut -d' ' -f3)"
