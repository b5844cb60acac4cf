# Sourced by scripts/*.sh: puts cargo-lambda (PyPI package, cached venv) on PATH and installs
# Schemathesis (PyPI, the API fuzzing test runs it; SUNDIAL_SCHEMATHESIS names its CLI).
# `cargo lambda watch` emulates the Lambda Runtime API locally; the tests that run the
# functions through it need it.
CARGO_LAMBDA_VERSION="1.9.2"
_tools_venv="${SUNDIAL_CACHE:-$HOME/.cache/sundial}/venv-tools-$CARGO_LAMBDA_VERSION"
if [ ! -x "$_tools_venv/bin/cargo-lambda" ]; then
  echo "installing cargo-lambda==$CARGO_LAMBDA_VERSION into $_tools_venv"
  python3 -m venv "$_tools_venv"
  "$_tools_venv/bin/pip" install -q "cargo-lambda==$CARGO_LAMBDA_VERSION"
fi
export PATH="$_tools_venv/bin:$PATH"
SCHEMATHESIS_VERSION="4.32.5"  # also in tests/src/lib.rs
_st_venv="${SUNDIAL_CACHE:-$HOME/.cache/sundial}/venv-schemathesis-$SCHEMATHESIS_VERSION"
if [ ! -x "$_st_venv/bin/st" ]; then
  echo "installing schemathesis==$SCHEMATHESIS_VERSION into $_st_venv"
  python3 -m venv "$_st_venv"
  "$_st_venv/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION"
fi
export SUNDIAL_SCHEMATHESIS="$_st_venv/bin/st"
