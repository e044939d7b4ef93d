#!/usr/bin/env python3
"""Prints OpenCode's `run --format json` events as a readable transcript."""
import json
import sys

for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    part = ev.get("part") or {}
    if ev.get("type") == "tool_use":
        state = part.get("state") or {}
        cmd = (state.get("input") or {}).get("command", "")
        out = state.get("output") or state.get("error") or ""
        print(f"  agent $ {cmd}")
        for l in str(out).rstrip().splitlines()[:8]:
            print(f"          {l}")
    elif ev.get("type") == "text" and part.get("text"):
        print("  model: " + part["text"].splitlines()[0])
    elif ev.get("type") == "error":
        print("  error: " + json.dumps(ev.get("error")))
