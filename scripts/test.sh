#!/usr/bin/env bash
# Runs every Sundial test on a fresh machine: installs what it needs (MiniStack, moto and
# cargo-lambda from PyPI into cached venvs, the CDK's npm packages), then runs rustfmt, clippy,
# and the Rust tests (unit, property, integration against the emulator, the `cargo lambda watch`
# tests) twice: once against MiniStack, once against moto (docs/emulators.md: a test that
# passes on only one of them is a finding). The CDK tests run during the moto pass (their
# CloudFormation deployment test needs moto). Stops every emulator it started.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The tests never use LocalStack's DynamoDB (Amazon's jar): MiniStack first, then moto, each on
# its own loopback port.
ministack_port="${SUNDIAL_TEST_MINISTACK_PORT:-4566}"
moto_port="${SUNDIAL_TEST_MOTO_PORT:-4567}"
unset AWS_ENDPOINT_URL SUNDIAL_EMULATOR_PORT SUNDIAL_EMULATOR
. localstack/env.sh
start=$(date +%s)
step() { echo; echo "==> [$(( $(date +%s) - start ))s] $*"; }

step "tools: rustfmt, clippy, cargo-lambda"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
. scripts/tools.sh

step "tools: chromium and chromedriver (the console's browser test, functions/cli/tests/console.rs)"
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "present: $(chromium --version 2>/dev/null | head -1)"
elif [ "${CONSOLE_BROWSER_TESTS:-}" = skip ]; then
  echo "missing, and CONSOLE_BROWSER_TESTS=skip: the browser test skips itself"
else
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  if command -v apt-get >/dev/null && $sudo true 2>/dev/null; then
    $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "error: the console's browser test needs Chromium and chromedriver, and they could not be installed here." >&2
    echo "       Install Debian's 'chromium' and 'chromium-driver' (apt-get install -y chromium chromium-driver)," >&2
    echo "       or set CONSOLE_BROWSER_TESTS=skip to run every other test without it." >&2
    exit 1
  fi
fi

step "tools: axe-core (the console's accessibility audit, functions/cli/tests/a11y)"
(cd functions/cli/tests/a11y && npm ci --no-audit --no-fund --loglevel=error)

# use_emulator <kind> <port>: points this shell at it, starting it if it does not answer.
stops=()
use_emulator() {
  export SUNDIAL_EMULATOR="$1" SUNDIAL_EMULATOR_PORT="$2" AWS_ENDPOINT_URL="http://127.0.0.1:$2"
  local before; before="$(curl -fsS -o /dev/null -w '%{http_code}' "$AWS_ENDPOINT_URL" 2>/dev/null || true)"
  localstack/start.sh
  if [ -z "$before" ] || [ "$before" = "000" ]; then stops+=("$1:$2"); fi
}
stop_started() {
  for s in "${stops[@]}"; do SUNDIAL_EMULATOR="${s%%:*}" SUNDIAL_EMULATOR_PORT="${s##*:}" localstack/stop.sh || true; done
}
trap stop_started EXIT

# Every AWS call the functions make in the Rust tests is recorded (sundial_core::access) and
# checked against their CDK roles by infra/test/iam.test.ts in the CDK step.
export SUNDIAL_IAM_RECORD="$CARGO_TARGET_DIR/sundial-iam-calls.jsonl"
mkdir -p "$CARGO_TARGET_DIR"
: > "$SUNDIAL_IAM_RECORD"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "emulator 1 of 2: MiniStack on $ministack_port"
use_emulator ministack "$ministack_port"

step "cargo test on MiniStack (unit, property, integration, cargo lambda watch)"
cargo test --workspace --no-fail-fast --exclude sundial-sim

# The simulator needs no emulator, and runs optimised (`profile.sim`: a seed runs about fifty
# times faster than in the dev profile): fresh seeds, the regression seeds, the replay; then the
# planted-bug catalog, in a build that carries the mutants (docs/simulation.md).
step "the simulator (profile sim): fresh seeds, regression seeds, replay"
cargo test -p sundial-sim --profile sim --no-fail-fast

step "the simulator kills every planted bug (functions/sim/tests/mutants.rs)"
cargo test -p sundial-sim --profile sim --features mutants --test mutants -- --nocapture

step "emulator 2 of 2: moto on $moto_port"
use_emulator moto "$moto_port"

step "cargo test on moto (the same suite; the simulator ran above)"
cargo test --workspace --no-fail-fast --exclude sundial-sim

step "CDK tests (infra/, with the CloudFormation deployment on moto)"
if [ -f infra/package.json ]; then
  (cd infra && npm ci --no-audit --no-fund --loglevel=error && npm test)
fi

step "all tests passed in $(( $(date +%s) - start ))s"
