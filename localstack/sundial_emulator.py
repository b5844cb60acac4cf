"""Sundial's local AWS emulator: moto's server behind one lock.

Why a wrapper and not plain `moto_server`: moto's backends are plain Python objects with no
locking, and werkzeug serves each request on its own thread. Two clients doing read-then-CAS on
one DynamoDB item both see the old value and both "win" their conditional write, and two SQS
consumers can receive the same message. Real AWS never does that, and Sundial's correctness tests
would then be testing the emulator. So every request runs under one process-wide lock
(measured in DESIGN.md section 5: it also made the emulator faster, by removing GIL thrash).

SQS long polls (`WaitTimeSeconds > 0`) must not hold that lock while they wait, or one idle
consumer would stall every other client for up to 20 s. A long poll is therefore rewritten into
short polls (`WaitTimeSeconds = 0`), each taken under the lock, with the waiting done outside it
until a message arrives or the requested wait has passed.

`SUNDIAL_EMULATOR_UNLOCKED=1` turns the lock off. It exists only so the emulator fitness test can
show that the lock is what makes the emulator fit (see README, "Emulator fitness").
"""

from __future__ import annotations

import argparse
import io
import json
import os
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
