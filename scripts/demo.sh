#!/usr/bin/env bash
# The main job on the embedded default: no download, no dataset.
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/demo
mkdir -p "$out"
target/release/examples/dllogger_demo --json "$out/dllogger_demo.json"
echo "--- JSON stream written to $out/dllogger_demo.json:"
head -n 4 "$out/dllogger_demo.json"
echo "--- modelzoo --help:"
target/release/modelzoo --help
