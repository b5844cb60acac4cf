"""Schemathesis hooks for Sundial's API fuzzing test (functions/api/tests/api/fuzz.rs).

One extra check beyond Schemathesis' own: a refused request (any 4xx) writes nothing. Before
every request that is not a GET the hook reads a digest of everything stored (both DynamoDB
tables, every item, and the pool queues' message counts) from the test's side endpoint
(SUNDIAL_DIGEST_URL); after a 4xx it reads it again and fails if anything changed.
"""

import os
import urllib.request

import schemathesis

DIGEST_URL = os.environ["SUNDIAL_DIGEST_URL"]
_before = {}


def _digest():
    with urllib.request.urlopen(DIGEST_URL, timeout=60) as r:
        return r.read().decode()


@schemathesis.hook
def before_call(ctx, case, kwargs):
    _before[id(case)] = _digest() if case.method.upper() != "GET" else None


@schemathesis.check
def refused_requests_write_nothing(ctx, response, case):
    before = _before.pop(id(case), None)
    if before is None or not (400 <= response.status_code < 500):
        return None
    after = _digest()
    if after != before:
        raise AssertionError(
            f"{case.method} {case.formatted_path} was refused with {response.status_code} "
            f"but changed stored data: {before} -> {after}"
        )
    return None
