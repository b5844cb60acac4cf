# Sourced by scripts/*.sh: puts cargo-lambda (PyPI package, cached venv) on PATH and installs
# Schemathesis (PyPI, the API fuzzing test runs it; SUNDIAL_SCHEMATHESIS names its CLI) and
# openapi-python-client (PyPI, the generated-clients test runs it and runs the generated Python
# client with its venv's Python; SUNDIAL_OPENAPI_PYTHON_CLIENT names its CLI) and mypy (PyPI,
# the same test type-checks its Python program; SUNDIAL_MYPY).
# `cargo lambda watch` emulates the Lambda Runtime API locally; the tests that run the
# functions through it need it.

# _pip_tool <venv name> <package> <version> <executable>: installs the pinned package into its
# cached venv unless the executable is there already.
_pip_tool() {
  local venv="${SUNDIAL_CACHE:-$HOME/.cache/sundial}/$1"
  if [ ! -x "$venv/bin/$4" ]; then
    echo "installing $2==$3 into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "$2==$3" || {
      echo "could not install $2==$3 from PyPI (is the package index reachable?)" >&2
      return 1
    }
  fi
}
CARGO_LAMBDA_VERSION="1.9.2"
_pip_tool "venv-tools-$CARGO_LAMBDA_VERSION" cargo-lambda "$CARGO_LAMBDA_VERSION" cargo-lambda
export PATH="${SUNDIAL_CACHE:-$HOME/.cache/sundial}/venv-tools-$CARGO_LAMBDA_VERSION/bin:$PATH"
SCHEMATHESIS_VERSION="4.32.5"  # also in tests/src/lib.rs
_pip_tool "venv-schemathesis-$SCHEMATHESIS_VERSION" schemathesis "$SCHEMATHESIS_VERSION" st
export SUNDIAL_SCHEMATHESIS="${SUNDIAL_CACHE:-$HOME/.cache/sundial}/venv-schemathesis-$SCHEMATHESIS_VERSION/bin/st"
OPENAPI_PYTHON_CLIENT_VERSION="0.29.1"  # also in functions/api/tests/api/clients.rs
_pip_tool "venv-openapi-python-client-$OPENAPI_PYTHON_CLIENT_VERSION" openapi-python-client "$OPENAPI_PYTHON_CLIENT_VERSION" openapi-python-client
export SUNDIAL_OPENAPI_PYTHON_CLIENT="${SUNDIAL_CACHE:-$HOME/.cache/sundial}/venv-openapi-python-client-$OPENAPI_PYTHON_CLIENT_VERSION/bin/openapi-python-client"
MYPY_VERSION="2.4.1"  # also in functions/api/tests/api/clients.rs
_pip_tool "venv-mypy-$MYPY_VERSION" mypy "$MYPY_VERSION" mypy
export SUNDIAL_MYPY="${SUNDIAL_CACHE:-$HOME/.cache/sundial}/venv-mypy-$MYPY_VERSION/bin/mypy"
