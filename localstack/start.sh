#!/usr/bin/env bash
# Starts the local AWS emulator on 127.0.0.1:${SUNDIAL_EMULATOR_PORT:-4566} and waits until it answers.
#
#   SUNDIAL_EMULATOR=moto        (default without a Docker engine, and what the tests use)
#       pinned moto[server] from PyPI in a cached venv, behind sundial_emulator.py's lock.
#   SUNDIAL_EMULATOR=localstack  (default when a Docker engine answers)
#       LocalStack via docker-compose.yml. Its DynamoDB is Amazon's DynamoDB Local jar, which this
#       project's own tests do not use: `.ci/run` and `scripts/test.sh` always pick moto.
#
# Idempotent: if our emulator already answers on the port, it says so and exits 0.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/env.sh"
port="$SUNDIAL_EMULATOR_PORT"
MOTO_VERSION="5.2.5"
run_dir="$here/.run"
pid_file="$run_dir/emulator-$port.pid"
log_file="$run_dir/emulator-$port.log"
mkdir -p "$run_dir"

health() { python3 - "$port" <<'PY'
import json, sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/_sundial/health", timeout=1) as r:
        print(json.load(r)["pid"])
except Exception:
    sys.exit(1)
PY
}

kind="${SUNDIAL_EMULATOR:-}"
if [ -z "$kind" ]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then kind=localstack; else kind=moto; fi
fi

if [ "$kind" = "localstack" ]; then
  docker compose -f "$here/docker-compose.yml" up -d
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/_localstack/health" >/dev/null 2>&1; then
      echo "localstack answering on http://127.0.0.1:$port"; exit 0
    fi
    sleep 1
  done
  echo "localstack did not answer on port $port within 120 s" >&2; exit 1
fi

if pid="$(health)"; then
  echo "sundial emulator already running on http://127.0.0.1:$port (pid $pid)"
  exit 0
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "port $port is taken by something that is not Sundial's emulator; set SUNDIAL_EMULATOR_PORT" >&2
  exit 1
fi

venv="$SUNDIAL_CACHE/venv-moto-$MOTO_VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import moto, flask; assert moto.__version__ == '$MOTO_VERSION'" 2>/dev/null; then
  echo "installing moto[server]==$MOTO_VERSION into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "moto[server]==$MOTO_VERSION"
fi

# Its own session (setsid): a Ctrl-C or a kill aimed at the caller's process group must not
# take the shared emulator down with it.
launcher=""; command -v setsid >/dev/null 2>&1 && launcher="setsid"
$launcher nohup "$venv/bin/python" "$here/sundial_emulator.py" --port "$port" >"$log_file" 2>&1 < /dev/null &
echo $! >"$pid_file"
for _ in $(seq 1 150); do
  if pid="$(health)"; then
    echo "sundial emulator (moto $MOTO_VERSION) on http://127.0.0.1:$port (pid $pid, log $log_file)"
    exit 0
  fi
  if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "emulator exited during start; log:" >&2; cat "$log_file" >&2; exit 1
  fi
  sleep 0.2
done
echo "emulator did not answer on port $port within 30 s; log: $log_file" >&2
exit 1
