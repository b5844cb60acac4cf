#!/usr/bin/env bash
# Starts the local AWS emulator on 127.0.0.1:${SUNDIAL_EMULATOR_PORT:-4566} and waits until it answers.
#
#   SUNDIAL_EMULATOR=ministack   (default without a Docker engine: the fast one)
#       pinned MiniStack from PyPI (MIT) in a cached venv, DynamoDB + SQS + Lambda + Secrets Manager + IAM + STS + EventBridge + SNS + Step Functions + ECS only. Safe
#       under concurrency as it is: one asyncio loop runs every request's handler to the end
#       (docs/emulators.md).
#   SUNDIAL_EMULATOR=moto
#       pinned moto[server] from PyPI (Apache-2.0) in a cached venv, behind sundial_emulator.py's
#       lock. Slower (its SQS send is O(queue depth)); kept for what only it does here: the
#       CloudFormation deployment of the CDK template (infra/test/emulator.test.ts).
#   SUNDIAL_EMULATOR=localstack  (default when a Docker engine answers)
#       LocalStack via docker-compose.yml. Its DynamoDB is Amazon's DynamoDB Local jar, which this
#       project's own tests do not use: `.ci/run` and `scripts/test.sh` pick the two above.
#
# Idempotent: if the same emulator already answers on the port, it says so and exits 0; if the
# other one does, it says which and fails (stop it, or choose another SUNDIAL_EMULATOR_PORT).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/env.sh"
port="$SUNDIAL_EMULATOR_PORT"
MOTO_VERSION="5.2.5"
MINISTACK_VERSION="1.5.33"
run_dir="$here/.run"
pid_file="$run_dir/emulator-$port.pid"
kind_file="$run_dir/emulator-$port.kind"
log_file="$run_dir/emulator-$port.log"
mkdir -p "$run_dir"

# Which emulator answers on the port: prints "moto <pid>" or "ministack", or fails.
answering() { python3 - "$port" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
try:
    with urllib.request.urlopen(f"{base}/_sundial/health", timeout=1) as r:
        print("moto", json.load(r)["pid"]); sys.exit(0)
except Exception:
    pass
try:
    with urllib.request.urlopen(f"{base}/_ministack/health", timeout=1) as r:
        json.load(r); print("ministack"); sys.exit(0)
except Exception:
    sys.exit(1)
PY
}

kind="${SUNDIAL_EMULATOR:-}"
if [ -z "$kind" ]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then kind=localstack; else kind=ministack; fi
fi

case "$kind" in
  localstack)
    docker compose -f "$here/docker-compose.yml" up -d
    for _ in $(seq 1 120); do
      if curl -fsS "http://127.0.0.1:$port/_localstack/health" >/dev/null 2>&1; then
        echo "localstack answering on http://127.0.0.1:$port"; exit 0
      fi
      sleep 1
    done
    echo "localstack did not answer on port $port within 120 s" >&2; exit 1 ;;
  moto|ministack) ;;
  *) echo "SUNDIAL_EMULATOR=$kind: expected ministack, moto or localstack" >&2; exit 2 ;;
esac

if found="$(answering)"; then
  if [ "${found%% *}" = "$kind" ]; then
    echo "$kind already running on http://127.0.0.1:$port"
    exit 0
  fi
  echo "port $port already serves ${found%% *}, not $kind: stop it (localstack/stop.sh) or set SUNDIAL_EMULATOR_PORT" >&2
  exit 1
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "port $port is taken by something that is not Sundial's emulator; set SUNDIAL_EMULATOR_PORT" >&2
  exit 1
fi

# A pinned venv per emulator and version, outside the clone (a fresh clone reuses it).
ensure_venv() { # <venv> <pip spec> <python check>
  if [ ! -x "$1/bin/python" ] || ! "$1/bin/python" -c "$3" 2>/dev/null; then
    echo "installing $2 into $1"
    rm -rf "$1"
    python3 -m venv "$1"
    "$1/bin/pip" install -q "$2"
  fi
}

# Its own session (setsid): a Ctrl-C or a kill aimed at the caller's process group must not
# take the shared emulator down with it.
launcher=""; command -v setsid >/dev/null 2>&1 && launcher="setsid"
if [ "$kind" = moto ]; then
  venv="$SUNDIAL_CACHE/venv-moto-$MOTO_VERSION"
  ensure_venv "$venv" "moto[server]==$MOTO_VERSION" "import moto, flask; assert moto.__version__ == '$MOTO_VERSION'"
  $launcher nohup "$venv/bin/python" "$here/sundial_emulator.py" --port "$port" >"$log_file" 2>&1 < /dev/null &
  label="moto $MOTO_VERSION"
else
  venv="$SUNDIAL_CACHE/venv-ministack-$MINISTACK_VERSION"
  ensure_venv "$venv" "ministack==$MINISTACK_VERSION" \
    "import importlib.metadata as m; assert m.version('ministack') == '$MINISTACK_VERSION'"
  # Only the services Sundial uses; loopback only; its own scratch dir per port.
  GATEWAY_PORT="$port" BIND_HOST=127.0.0.1 SERVICES=dynamodb,sqs,lambda,secretsmanager,iam,sts,events,sns,stepfunctions,ecs LOG_LEVEL=WARNING \
    TMPDIR="$run_dir" $launcher nohup "$venv/bin/ministack" >"$log_file" 2>&1 < /dev/null &
  label="MiniStack $MINISTACK_VERSION"
fi
echo $! >"$pid_file"
echo "$kind" >"$kind_file"
for _ in $(seq 1 150); do
  if found="$(answering)" && [ "${found%% *}" = "$kind" ]; then
    echo "sundial emulator ($label) on http://127.0.0.1:$port (pid $(cat "$pid_file"), log $log_file)"
    exit 0
  fi
  if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "emulator exited during start; log:" >&2; cat "$log_file" >&2; exit 1
  fi
  sleep 0.2
done
echo "emulator did not answer on port $port within 30 s; log: $log_file" >&2
exit 1
