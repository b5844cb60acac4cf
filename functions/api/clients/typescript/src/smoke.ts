// Smoke test of the generated TypeScript client (functions/api/tests/api/clients.rs runs it
// against the local server): create a job, get it, find it in the list, and read two typed
// errors. Every call goes through openapi-fetch typed by the generated `paths`, so a request or
// response that does not match openapi.json fails `tsc --strict` before it fails here.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema.js";

type ApiError = components["schemas"]["Error"];

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

function check(ok: boolean, what: string, detail?: unknown): asserts ok {
  if (!ok) throw new Error(`${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
}

const jobId = env("SUNDIAL_SMOKE_JOB_ID");
// The local server takes the tenant from this header; a deployment takes it from the
// authorizer (pass `Authorization` instead).
const sundial = createClient<paths>({
  baseUrl: env("SUNDIAL_API_URL"),
  headers: { "X-Sundial-Tenant": env("SUNDIAL_TENANT") },
});

// Create: a cron job with a webhook target.
const created = await sundial.POST("/v1/jobs", {
  body: {
    jobId,
    schedule: { expression: "0 30 2 * * *", timezone: "Europe/London" },
    target: { type: "http", url: "https://hooks.example.com/run" },
    params: { client: "typescript" },
  },
});
check(created.response.status === 201 && created.data !== undefined, "create is 201", created.error);
check(created.data.job.jobId === jobId && created.data.job.state === "ENABLED", "the created job", created.data);
check(created.data.nextFires.length === 5, "create returns the next 5 fires", created.data.nextFires);
check(created.response.headers.get("ETag") === created.data.job.etag, "ETag is the job's etag");

// Get: the target comes back as the discriminated union, narrowed by `type`.
const got = await sundial.GET("/v1/jobs/{jobId}", { params: { path: { jobId } } });
check(got.data !== undefined, "get is 200", got.error);
const target = got.data.definition.target;
check(target.type === "http", "the target is a webhook", target);
check(target.url === "https://hooks.example.com/run", "the webhook URL", target);
check(got.data.definition.schedule.expression === "0 30 2 * * *", "the schedule", got.data.definition);

// List: page through the tenant's jobs until ours appears.
let found: components["schemas"]["Job"] | undefined;
let cursor: string | undefined;
do {
  const page = await sundial.GET("/v1/jobs", { params: { query: { limit: 100, cursor } } });
  check(page.data !== undefined, "list is 200", page.error);
  found = page.data.items.find((j) => j.jobId === jobId);
  cursor = page.data.nextCursor ?? undefined;
} while (!found && cursor);
check(found !== undefined, `${jobId} is listed`);

// Typed errors: a bad cron expression names its field; an unknown job is 404.
const bad = await sundial.POST("/v1/jobs", {
  body: {
    jobId: `${jobId}-bad-cron`,
    schedule: { expression: "61 * * * *", timezone: "UTC" },
    target: { type: "http", url: "https://hooks.example.com/run" },
  },
});
const badError: ApiError | undefined = bad.error;
check(bad.response.status === 400, "a bad cron is 400", bad.error ?? bad.data);
check(badError?.error.field === "schedule.expression", "the 400 names schedule.expression", badError);

const missing = await sundial.GET("/v1/jobs/{jobId}", { params: { path: { jobId: "no-such-job" } } });
check(missing.response.status === 404, "an unknown job is 404", missing.data);
check(missing.error?.error.code === "not_found", "the 404 is not_found", missing.error);

console.log(`typescript client: created, got and listed ${jobId}; 400 on schedule.expression and 404 are typed`);
