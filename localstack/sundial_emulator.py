"""Sundial's local AWS emulator: moto's server behind one lock.

Why a wrapper and not plain `moto_server`: moto's backends are plain Python objects with no
locking, and werkzeug serves each request on its own thread. Two clients doing read-then-CAS on
one DynamoDB item both see the old value and both "win" their conditional write, and two SQS
consumers can receive the same message. Real AWS never does that, and Sundial's correctness tests
would then be testing the emulator. So every request runs under one process-wide lock
(measured, docs/emulators.md: it also made the emulator faster, by removing GIL thrash).

SQS long polls (`WaitTimeSeconds > 0`) must not hold that lock while they wait, or one idle
consumer would stall every other client for up to 20 s. A long poll is therefore rewritten into
short polls (`WaitTimeSeconds = 0`), each taken under the lock, with the waiting done outside it
until a message arrives or the requested wait has passed.

`SUNDIAL_EMULATOR_UNLOCKED=1` turns the lock off. It exists only so the emulator fitness test can
show that the lock is what makes the emulator fit (see README, "Emulator fitness").

ECS tasks follow Sundial's emulated-container convention (`patch_ecs`), as the simulator's do.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import signal
import sys
import threading
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

from werkzeug.serving import run_simple

from moto.core.config import default_user_config
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

HEALTH_PATH = "/_sundial/health"
POLL_INTERVAL_S = 0.05


class LockedApp:
    """A WSGI app that runs the wrapped app under one lock and turns long polls into short ones."""

    def __init__(self, inner: Any, locked: bool) -> None:
        self.inner = inner
        self.locked = locked
        self.lock = threading.Lock()
        self.started = time.time()
        self.requests = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == HEALTH_PATH:
            body = json.dumps(
                {
                    "emulator": "sundial-moto",
                    "pid": os.getpid(),
                    "locked": self.locked,
                    "uptime_s": round(time.time() - self.started, 1),
                    "requests": self.requests,
                }
            ).encode()
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(body)))])
            return [body]

        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        wait_s, short_body = long_poll_rewrite(environ, body)
        if wait_s <= 0:
            return self.call_once(environ, body, start_response)

        deadline = time.monotonic() + wait_s
        while True:
            status, headers, payload = self.call_buffered(environ, short_body)
            if not status.startswith("200") or has_messages(payload) or time.monotonic() >= deadline:
                start_response(status, headers)
                return [payload]
            time.sleep(min(POLL_INTERVAL_S, max(0.0, deadline - time.monotonic())))

    def call_once(self, environ: dict[str, Any], body: bytes, start_response: Any) -> Any:
        status, headers, payload = self.call_buffered(environ, body)
        start_response(status, headers)
        return [payload]

    def call_buffered(self, environ: dict[str, Any], body: bytes) -> tuple[str, list, bytes]:
        """Runs the inner app to completion (body included) while holding the lock."""
        env = dict(environ)
        env["wsgi.input"] = io.BytesIO(body)
        env["CONTENT_LENGTH"] = str(len(body))
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list, exc_info: Any = None) -> Any:
            captured["status"] = status
            captured["headers"] = headers
            return lambda _data: None

        if self.locked:
            with self.lock:
                payload = self.run(env, capture)
        else:
            payload = self.run(env, capture)
        headers = [(k, v) for (k, v) in captured["headers"] if k.lower() != "content-length"]
        headers.append(("Content-Length", str(len(payload))))
        return captured["status"], headers, payload

    def run(self, env: dict[str, Any], capture: Any) -> bytes:
        self.requests += 1
        result = self.inner(env, capture)
        try:
            return b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()


class PlainApp:
    """Plain moto plus the health path: what "the lock removed" means for check-lock.sh."""

    def __init__(self, inner: Any, health: LockedApp) -> None:
        self.inner = inner
        self.health = health

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == HEALTH_PATH:
            return self.health(environ, start_response)
        return self.inner(environ, start_response)


def long_poll_rewrite(environ: dict[str, Any], body: bytes) -> tuple[float, bytes]:
    """Returns (seconds to wait, body with WaitTimeSeconds=0) for an SQS long poll, else (0, body)."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target == "AmazonSQS.ReceiveMessage":  # JSON protocol (current SDKs)
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            return 0, body
        wait = float(req.get("WaitTimeSeconds") or 0)
        if wait <= 0:
            return 0, body
        req["WaitTimeSeconds"] = 0
        return wait, json.dumps(req).encode()
    ctype = environ.get("CONTENT_TYPE", "")
    if "x-www-form-urlencoded" in ctype and b"ReceiveMessage" in body:  # query protocol
        pairs = parse_qsl(body.decode(), keep_blank_values=True)
        form = dict(pairs)
        if form.get("Action") != "ReceiveMessage":
            return 0, body
        wait = float(form.get("WaitTimeSeconds") or 0)
        if wait <= 0:
            return 0, body
        pairs = [(k, "0" if k == "WaitTimeSeconds" else v) for (k, v) in pairs]
        return wait, urlencode(pairs).encode()
    return 0, body


def has_messages(payload: bytes) -> bool:
    if payload.startswith(b"{"):
        try:
            return bool(json.loads(payload).get("Messages"))
        except ValueError:
            return True
    return b"<Message>" in payload


# ECS: there is no container runtime on this machine (no Docker), so moto 5.2.5 fakes one, in a
# way Sundial's ECS target cannot be tested against: a task walks RUNNING -> ... -> STOPPED one
# state per DescribeTasks call, its container reports exitCode 0 from the start (even while it
# runs), ListTasks without desiredStatus lists stopped tasks too, and RunTask ignores
# clientToken. `patch_ecs` makes each task follow the same emulated-container rules as the
# simulator (functions/simaws/src/ecs.rs; docs/simulation.md), by the wall clock, and gives
# RunTask AWS's clientToken idempotency. Nothing else of moto's ECS changes.
RUN_SECS_VAR = "SUNDIAL_EMULATED_RUN_SECS"  # seconds from RunTask to the exit (default 1)
EXIT_CODE_VAR = "SUNDIAL_EMULATED_EXIT_CODE"  # the exit code (default 0), or `none`: never starts
STARTUP_S = 1.0  # PROVISIONING, then RUNNING
SIGTERM_EXIT = 143  # what a container still running when its task stops reports (128 + 15)
TOKEN_TTL_S = 24 * 3600  # how long AWS remembers a RunTask clientToken


def emulated_run(env: dict[str, str]) -> tuple[float, int | None, str | None]:
    """A container's (seconds to its exit, exit code, why it never starts) from its environment."""
    secs = 1.0
    if RUN_SECS_VAR in env:
        raw = env[RUN_SECS_VAR]
        try:  # Rust's f64 parse, as the simulator reads it, takes no `_` separators
            secs = float(raw.strip()) if "_" not in raw else math.nan
        except ValueError:
            secs = math.nan
        if not (math.isfinite(secs) and secs >= 0):
            why = f"{RUN_SECS_VAR}={json.dumps(raw)} is not a non-negative number of seconds"
            return 1.0, None, f"CannotStartContainerError: emulated: {why}"
    code = env.get(EXIT_CODE_VAR, "0").strip()
    if code == "none":
        return secs, None, "CannotPullContainerError: emulated"
    if not re.fullmatch(r"[+-]?[0-9]+", code) or not -(2**31) <= int(code) < 2**31:
        why = f"{EXIT_CODE_VAR}={json.dumps(code)} is neither an integer nor none"
        return secs, None, f"CannotStartContainerError: emulated: {why}"
    return secs, int(code), None


class Course:
    """A task's course, decided at RunTask from its containers' effective environments."""

    def __init__(self, definitions: list[dict[str, Any]], overrides: dict[str, Any]) -> None:
        runs = {}  # name -> (essential, secs, code, why)
        for d in definitions:
            env = {e["name"]: e.get("value", "") for e in d.get("environment") or []}
            for o in overrides.get("containerOverrides") or []:
                if o.get("name") == d.get("name"):
                    env.update({e["name"]: e.get("value", "") for e in o.get("environment") or []})
            runs[d.get("name")] = (d.get("essential", True), *emulated_run(env))
        self.secs = {name: r[1] for name, r in runs.items()}
        failing = sorted((secs, why) for (_, secs, _, why) in runs.values() if why)
        if failing:  # a container that never starts fails the task: no exit code anywhere
            self.after, self.reason = failing[0]
            self.started, self.stop_code = False, "TaskFailedToStart"
            self.codes: dict[str, int | None] = {name: None for name in runs}
            return
        essential = [secs for (ess, secs, _, _) in runs.values() if ess] or list(self.secs.values())
        self.after, self.reason = min(essential), "Essential container in task exited"
        self.started, self.stop_code = True, "EssentialContainerExited"
        self.codes = {n: code if secs <= self.after else SIGTERM_EXIT
                      for n, (_, secs, code, _) in runs.items()}


def patch_ecs() -> None:
    """Gives moto's ECS tasks the emulated containers and RunTask the clientToken (see above)."""
    from moto.core.responses import ActionResult
    from moto.ecs import models
    from moto.ecs.exceptions import ECSException
    from moto.ecs.responses import EC2ContainerServiceResponse

    class EmulatedTask(models.Task):
        """A moto task whose status, stop and exit codes are its emulated containers'."""

        # moto's model registry files a model by its module; and its serializer reads any
        # attribute named like a Task field (stopped_at, exit_code), hence the `_` methods.
        __module__ = models.__name__

        def __init__(self, cluster: Any, task_definition: Any, *args: Any, **kwargs: Any) -> None:
            self.created, self.user_stop, self.user_reason = time.time(), None, None
            super().__init__(cluster, task_definition, *args, **kwargs)
            self.course = Course(task_definition.container_definitions, self.overrides)

        def _end(self) -> float:
            natural = self.created + self.course.after
            return natural if self.user_stop is None else min(natural, self.user_stop)

        def _by_user(self) -> bool:
            return self.user_stop is not None and self.user_stop < self.created + self.course.after

        @property
        def last_status(self) -> str:
            now = time.time()
            if now >= self._end():
                return "STOPPED"
            running = self.course.started and now >= self.created + STARTUP_S
            return "RUNNING" if running else "PROVISIONING"

        @last_status.setter
        def last_status(self, value: str) -> None:  # moto's stop_task sets STOPPED: the StopTask
            if value == "STOPPED" and self.user_stop is None:
                self.user_stop = time.time()

        # Derived from the course. moto assigns them too (at creation, and in stop_task): its
        # desiredStatus is ignored, its stoppedReason kept as the StopTask's reason.
        desired_status = property(lambda t: "STOPPED" if t.last_status == "STOPPED" else "RUNNING",
                                  lambda t, v: None)
        stop_code = property(lambda t: None if t.last_status != "STOPPED"
                             else "UserInitiated" if t._by_user() else t.course.stop_code)
        stopped_reason = property(lambda t: None if t.last_status != "STOPPED"
                                  else t.user_reason if t._by_user() else t.course.reason,
                                  lambda t, v: setattr(t, "user_reason", v))

        def _exit_code(self, name: str) -> int | None:
            code = self.course.codes.get(name)
            own_end = self.created + self.course.secs.get(name, 0)
            if self._by_user() and self.course.started and own_end > self._end():
                return SIGTERM_EXIT  # still running at the StopTask
            return code

        @property
        def containers(self) -> list[Any]:
            status = self.last_status
            for c in self._containers:  # absent (None) until the task stopped, as on AWS
                c.last_status = "PENDING" if status == "PROVISIONING" else status
                c.exitCode = self._exit_code(c.name) if status == "STOPPED" else None
            return self._containers

        @containers.setter
        def containers(self, value: list[Any]) -> None:
            self._containers = value

    models.Task = EmulatedTask  # what run_task and start_task construct

    original_stop = models.EC2ContainerServiceBackend.stop_task

    def stop_task(backend: Any, cluster_str: str, task_str: str, reason: str) -> Any:
        cluster = backend._get_cluster(cluster_str)
        for arn, task in backend.tasks.get(cluster.name, {}).items():
            if arn.endswith(task_str.split("/")[-1]) and task.last_status == "STOPPED":
                return task  # AWS answers a stopped task unchanged
        return original_stop(backend, cluster_str, task_str, reason)

    original_list = models.EC2ContainerServiceBackend.list_tasks

    def list_tasks(backend: Any, cluster: Any = None, instance: Any = None, family: Any = None,
                   started_by: Any = None, service: Any = None, desired: str | None = None) -> Any:
        # AWS lists desiredStatus RUNNING when none is given; moto lists every task
        desired = desired or "RUNNING"
        return original_list(backend, cluster, instance, family, started_by, service, desired)

    original_run = EC2ContainerServiceResponse.run_task

    def run_task(response: Any) -> Any:
        token = response._get_param("clientToken")
        if not token:
            return original_run(response)
        backend = response.ecs_backend
        cluster = backend._get_cluster(response._get_param("cluster", "default"))
        params = json.loads(response.body or "{}")  # what the token is held to: all but itself
        params = {k: v for k, v in params.items() if k not in ("clientToken", "cluster")}
        tokens = backend.__dict__.setdefault("sundial_run_tokens", {})
        seen = tokens.get((cluster.arn, token))
        if seen and time.time() - seen["at"] < TOKEN_TTL_S:
            if seen["params"] != params:
                e = ECSException("ConflictException", "The request uses the same client token as "
                                 "a previous, but non-identical request.")
                e.resource_ids = seen["tasks"]
                raise e
            tasks = [backend.tasks[cluster.name][arn] for arn in seen["tasks"]]
            return ActionResult({"tasks": tasks, "failures": []})
        result = original_run(response)
        arns = [t.task_arn for t in result.result["tasks"]]
        tokens[(cluster.arn, token)] = {"params": params, "tasks": arns, "at": time.time()}
        return result

    models.EC2ContainerServiceBackend.stop_task = stop_task
    models.EC2ContainerServiceBackend.list_tasks = list_tasks
    EC2ContainerServiceResponse.run_task = run_task


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4566)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))

    def stop(_signum: int, _frame: Any) -> None:
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    # Step Functions executions run their states (moto's ASL interpreter) instead of staying
    # RUNNING forever with static history: the `stepFunctions` target tracks them to the end.
    default_user_config["stepfunctions"]["execute_state_machine"] = True
    patch_ecs()

    locked = os.environ.get("SUNDIAL_EMULATOR_UNLOCKED", "") not in ("1", "true", "yes")
    inner = DomainDispatcherApplication(create_backend_app)
    app = LockedApp(inner, locked=locked)
    if not locked:
        # Plain moto, exactly as `moto_server` serves it (only the health path added).
        app = PlainApp(inner, app)
    print(f"sundial emulator (moto, locked={locked}) on http://{args.host}:{args.port}", flush=True)
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
