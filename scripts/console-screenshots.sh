#!/usr/bin/env bash
# Regenerates docs/console/*.png from the console's browser test (functions/cli/tests/console.rs),
# which checks every page it photographs (no `null`/`undefined` rendered, no serious or critical
# axe-core violation) before it writes the screenshot: the pictures in the docs are the pages the
# test passed on, never hand-made. The audit's counts per page go to docs/console/a11y.json.
# Needs what the test needs: an emulator (`. localstack/env.sh` after `localstack/start.sh`) and
# chromium + chromedriver (installed by `.ci/run`'s tool step).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/sundial-target}"
export CARGO_TARGET_DIR
[ -f functions/cli/tests/a11y/node_modules/axe-core/axe.min.js ] ||
  npm ci --prefix functions/cli/tests/a11y --no-audit --no-fund --loglevel=error
cargo test -q -p sundial-cli --test console
shots="$CARGO_TARGET_DIR/console-screenshots"
for png in docs/console/*.png; do
  name=$(basename "$png")
  if [ ! -f "$shots/$name" ]; then
    echo "the browser test no longer writes $name: remove it from docs/console or the test" >&2
    exit 1
  fi
  cp "$shots/$name" "$png"
done
cp "$shots/a11y.json" docs/console/a11y.json
echo "docs/console: $(ls docs/console/*.png | wc -l) screenshots regenerated from $shots"
