# Environment for Sundial's tests and tools against the local emulator. Source it:
#   . localstack/env.sh
# Dummy credentials only: nothing here can reach real AWS, the endpoint is loopback.
export SUNDIAL_EMULATOR_PORT="${SUNDIAL_EMULATOR_PORT:-4566}"
export AWS_ENDPOINT_URL="${AWS_ENDPOINT_URL:-http://127.0.0.1:${SUNDIAL_EMULATOR_PORT}}"
export AWS_REGION="${AWS_REGION:-us-east-1}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-$AWS_REGION}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_EC2_METADATA_DISABLED=true
# The cached venv of the emulator and the Cargo target dir live outside the clone so a fresh
# clone (CI) reuses them.
export SUNDIAL_CACHE="${SUNDIAL_CACHE:-$HOME/.cache/sundial}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sundial-target}"
