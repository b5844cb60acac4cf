#!/usr/bin/env bash
# The local run: the whole of Sundial on one machine, with nothing but Rust and Python 3.
#
#   scripts/run-local.sh            # tick on the real minute
#   scripts/run-local.sh --fast     # tick every 10 s (demos); any `sundial dev` option works
#
# Builds the `sundial` CLI and runs `sundial dev`: the emulator (started through
# localstack/start.sh, which installs its pinned venv on first use, unless one already answers),
# tables and queues, the tick, a worker per pool, the API on http://127.0.0.1:8080 (the same
# router as the Lambda) and a demo job that fires every 10 s against a local target, with one
# line per execution. Ctrl-C stops everything it started, the emulator included if it started
# it. docs/api.md has the details.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
. localstack/env.sh
command -v cargo >/dev/null 2>&1 || { echo "cargo is missing: install Rust from https://rustup.rs" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "python3 is missing (the emulator runs on it)" >&2; exit 1; }
echo "building sundial (the first build takes a few minutes)"
cargo build -q -p sundial-cli
export SUNDIAL_ROOT="$root"
exec "$CARGO_TARGET_DIR/debug/sundial" dev "$@"
