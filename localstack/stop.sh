#!/usr/bin/env bash
# Stops exactly the emulator that start.sh started on this port (by its pid file), nothing else.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/env.sh"
port="$SUNDIAL_EMULATOR_PORT"
pid_file="$here/.run/emulator-$port.pid"
kind_file="$here/.run/emulator-$port.kind"
if [ "${SUNDIAL_EMULATOR:-}" = "localstack" ]; then
  docker compose -f "$here/docker-compose.yml" down; exit 0
fi
if [ ! -f "$pid_file" ]; then echo "no emulator started from here on port $port"; exit 0; fi
pid="$(cat "$pid_file")"
if kill -0 "$pid" 2>/dev/null && grep -qE "sundial_emulator.py|ministack" "/proc/$pid/cmdline" 2>/dev/null; then
  kill "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  echo "stopped $(cat "$kind_file" 2>/dev/null || echo sundial) emulator (pid $pid)"
else
  echo "emulator pid $pid is not running (stale pid file removed)"
fi
rm -f "$pid_file" "$kind_file"
