#!/usr/bin/env bash
# Shows that the emulator's lock is what makes it fit for Sundial's tests: starts a second
# emulator WITHOUT the lock on another port, runs the fitness test against it (it must FAIL),
# then stops that emulator. Exit 0 means "the fitness test caught the unlocked emulator".
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${CHECK_LOCK_PORT:-4599}"
export SUNDIAL_EMULATOR=moto SUNDIAL_EMULATOR_PORT="$port" AWS_ENDPOINT_URL="http://127.0.0.1:$port"
SUNDIAL_EMULATOR_UNLOCKED=1 "$root/localstack/start.sh" || exit 2
trap '"$root/localstack/stop.sh"' EXIT
failures=0
runs="${CHECK_LOCK_RUNS:-6}"
for run in $(seq 1 "$runs"); do
  if cargo test -q -p sundial-tests --test emulator_fitness >"/tmp/sundial-check-lock-$run.log" 2>&1; then
    echo "run $run: fitness test PASSED against the unlocked emulator"
  else
    echo "run $run: fitness test FAILED against the unlocked emulator (as it should):"
    grep -E "lost updates|duplicates|panicked" "/tmp/sundial-check-lock-$run.log" | head -3
    failures=$((failures + 1))
  fi
done
# Races are probabilistic: one failing run is proof that plain moto is unfit (the same test never
# fails against the locked emulator).
echo "$failures of $runs runs against the unlocked emulator failed"
[ "$failures" -ge 1 ]
