#!/usr/bin/env bash
# Runs every fuzz target in the module for $1 each: a duration (30s) or an
# execution count (20000x). CI uses counts: with a duration, go1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" at the
# deadline on a loaded machine (golang/go#75804, fixed in go1.27); a count
# has no deadline to race. A real finding always writes a reproducer under
# testdata/fuzz, and fails either way.
set -euo pipefail
t=${1:-30s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $f"
    go test -run='^$' -fuzz="^$f\$" -fuzztime="$t" "$pkg"
  done
done
