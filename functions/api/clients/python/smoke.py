"""Smoke test of the generated Python client (functions/api/tests/api/clients.rs runs it against
the local server): create a job, get it, find it in the list, and read two typed errors. Every
call goes through the client openapi-python-client generated from openapi.json (`sundial_client`,
next to this file), whose parsers fail on a response that does not match the document.
"""

import os
import sys
from typing import NoReturn

from sundial_client import Client
from sundial_client.api.jobs import create_job, get_job, list_jobs
from sundial_client.models import (
    CreateJob,
    Error,
    HttpTarget,
    HttpTargetType,
    Job,
    JobChange,
    JobState,
    JobPage,
    Schedule,
)
from sundial_client.types import UNSET, Unset


def fail(what: str, detail: object = None) -> NoReturn:
    sys.exit(f"{what}: {detail!r}" if detail is not None else what)


def check(ok: bool, what: str, detail: object = None) -> None:
    if not ok:
        fail(what, detail)


job_id = os.environ["SUNDIAL_SMOKE_JOB_ID"]
# The local server takes the tenant from this header; against a deployment use
# AuthenticatedClient(base_url=..., token=<JWT>) instead.
client = Client(
    base_url=os.environ["SUNDIAL_API_URL"],
    headers={"X-Sundial-Tenant": os.environ["SUNDIAL_TENANT"]},
    # A status the document does not list for the operation raises errors.UnexpectedStatus.
    raise_on_unexpected_status=True,
)
webhook = "https://hooks.example.com/run"

# Create: a cron job with a webhook target.
created = create_job.sync_detailed(
    client=client,
    body=CreateJob(
        job_id=job_id,
        schedule=Schedule(expression="0 30 2 * * *", timezone="Europe/London"),
        target=HttpTarget(type_=HttpTargetType.HTTP, url=webhook),
        params={"client": "python"},
    ),
)
if created.status_code != 201 or not isinstance(created.parsed, JobChange):
    fail("create is 201", created.content)
check(created.parsed.job.job_id == job_id and created.parsed.job.state == JobState.ENABLED, "the created job", created.parsed)
check(len(created.parsed.next_fires) == 5, "create returns the next 5 fires", created.parsed.next_fires)
check(created.headers.get("etag") == created.parsed.job.etag, "ETag is the job's etag", created.headers)

# Get: the target comes back as the discriminated union, parsed into its class.
got = get_job.sync(job_id, client=client)
if not isinstance(got, Job):
    fail("get is 200", got)
target = got.definition.target
if not isinstance(target, HttpTarget):
    fail("the target is a webhook", target)
check(target.url == webhook, "the webhook URL", target)
check(got.definition.schedule.expression == "0 30 2 * * *", "the schedule", got.definition.schedule)

# List: page through the tenant's jobs until ours appears.
found: Job | None = None
cursor: str | Unset = UNSET
while True:
    page = list_jobs.sync(client=client, limit=100, cursor=cursor)
    if not isinstance(page, JobPage):
        fail("list is 200", page)
    found = next((j for j in page.items if j.job_id == job_id), None)
    if found is not None or page.next_cursor is None:
        break
    cursor = page.next_cursor
check(found is not None, f"{job_id} is listed")

# Typed errors: a bad cron expression names its field; an unknown job is 404.
bad = create_job.sync_detailed(
    client=client,
    body=CreateJob(
        job_id=f"{job_id}-bad-cron",
        schedule=Schedule(expression="61 * * * *", timezone="UTC"),
        target=HttpTarget(type_=HttpTargetType.HTTP, url=webhook),
    ),
)
if bad.status_code != 400 or not isinstance(bad.parsed, Error):
    fail("a bad cron is 400", bad.content)
check(bad.parsed.error.field == "schedule.expression", "the 400 names schedule.expression", bad.parsed)

missing = get_job.sync_detailed("no-such-job", client=client)
if missing.status_code != 404 or not isinstance(missing.parsed, Error):
    fail("an unknown job is 404", missing.content)
check(missing.parsed.error.code == "not_found", "the 404 is not_found", missing.parsed)

print(f"python client: created, got and listed {job_id}; 400 on schedule.expression and 404 are typed")
