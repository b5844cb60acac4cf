# Sourced by scripts/*.sh: puts cargo-lambda (PyPI package, cached venv) on PATH.
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
