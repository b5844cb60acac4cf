#!/usr/bin/env bash
# Runs every Sundial test on a fresh machine: installs what it needs (moto and cargo-lambda from
# PyPI into cached venvs, the CDK's npm packages), starts the local emulator, then runs
# rustfmt, clippy, the Rust tests (unit, property, integration against the emulator, and the
# `cargo lambda watch` tests) and the CDK tests. Stops the emulator it started.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export SUNDIAL_EMULATOR=moto   # the tests never use LocalStack's DynamoDB (Amazon's jar)
. localstack/env.sh
start=$(date +%s)
step() { echo; echo "==> [$(( $(date +%s) - start ))s] $*"; }

step "tools: rustfmt, clippy, cargo-lambda"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
. scripts/tools.sh

step "emulator"
started_here=0
if ! curl -fsS "$AWS_ENDPOINT_URL/_sundial/health" >/dev/null 2>&1; then started_here=1; fi
localstack/start.sh
if [ "$started_here" = 1 ]; then trap 'localstack/stop.sh' EXIT; fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (unit, property, integration against the emulator)"
cargo test --workspace --no-fail-fast

step "CDK tests (infra/)"
if [ -f infra/package.json ]; then
  (cd infra && npm ci --no-audit --no-fund --loglevel=error && npm test)
fi

step "all tests passed in $(( $(date +%s) - start ))s"
