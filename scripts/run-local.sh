#!/usr/bin/env bash
# Runs Sundial locally: starts the emulator, creates tables and queues, prints a health line.
# (The control plane issue extends this into the full local run: tick, workers, API, demo job.)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
. localstack/env.sh
localstack/start.sh
cargo build -q -p sundial-cli
"$CARGO_TARGET_DIR/debug/sundial" provision --pools default
"$CARGO_TARGET_DIR/debug/sundial" health --pools default
