#!/usr/bin/env bash
# Builds the Rust functions for Lambda (provided.al2023, arm64) into the layout SundialScheduler
# reads: $OUT/{tick,worker,api,ingest,worker-ecs}/bootstrap, plus the ECS worker's Dockerfile.
#
#   infra/scripts/build-assets.sh [OUT]        (default OUT: infra/build/assets)
#   cd infra && npx cdk deploy -c sundial:assetsDir=build/assets
#
# Needs cargo-lambda (PyPI `cargo-lambda`, which brings zig: glibc stays at AL2023's level).
#
# This is the prebuilt-assets path (SundialCode.fromAssets / assetsDir), used by CI and by ECS
# pools (the worker-ecs image context). For Lambda-only deployments the construct can build the
# same binaries itself at synth with cargo-lambda-cdk's RustFunction:
#   cd infra && npx cdk deploy -c sundial:manifestPath=../Cargo.toml   (SundialCode.fromSource)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
infra="$(dirname "$here")"
root="$(dirname "$infra")"
out="$(realpath -m "${1:-$infra/build/assets}")"
mkdir -p "$out"
cd "$root"
cargo lambda build --release --arm64 --bin tick --bin worker --bin api --bin ingest --lambda-dir "$out"
if grep -q 'name = "worker-ecs"' functions/worker/Cargo.toml 2>/dev/null; then
  cargo lambda build --release --arm64 --bin worker-ecs --lambda-dir "$out"
  cp "$infra/assets/worker-ecs/Dockerfile" "$out/worker-ecs/Dockerfile"
else
  echo "no worker-ecs binary yet: ECS pools keep the placeholder image context" >&2
  mkdir -p "$out/worker-ecs"
  cp "$infra/assets/worker-ecs/Dockerfile" "$infra/assets/worker-ecs/bootstrap" "$out/worker-ecs/"
fi
echo "assets in $out"
