//! `sundial jobs|executions|dlq|ops ...`: the API from the command line.
//!
//! Every command is one or two calls of the typed client (`sundial-client`); `--output json`
//! prints the API's JSON for scripts, the default prints tables. `jobs update` reads the job,
//! applies the flags to its definition and saves it with `If-Match: <the version read>`, so a
//! concurrent edit makes it fail (412) rather than be overwritten. Every list takes `--limit`,
//! `--cursor` and `--all` (every page, following the cursor); `--all` prints the items of every
//! page as one page without a cursor.

use crate::client::{ApiArgs, Output};
use anyhow::Context;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Map, Value};
use sundial_client::{
    BackfillRequest, Client, CreateJob, ExecStatus, JobDefinition, ListDeadLetters, ListExecutions,
    ListJobExecutions, ListJobs, ListOperations, ListRequest,
};

/// `--limit`, `--cursor`, `--all` of every list.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Paging {
    /// Page size (1-100; the API's default is 50).
    #[arg(long)]
    pub(crate) limit: Option<u32>,
    /// Continue from this cursor (the `nextCursor` of the previous page).
    #[arg(long)]
    pub(crate) cursor: Option<String>,
    /// Every page from the cursor on, following `nextCursor` to the end.
    #[arg(long)]
    pub(crate) all: bool,
}

/// `sundial jobs ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum JobsCmd {
    /// Create a job (prints it and its next 5 fires).
    Create(Box<JobSpec>),
    /// List jobs.
    List {
        /// Include deleted jobs (kept for the retention period).
        #[arg(long)]
        include_deleted: bool,
        #[command(flatten)]
        paging: Paging,
    },
    /// Show a job.
    Get {
        /// Job id.
        job_id: String,
    },
    /// List a job's definition versions, newest first (one read per version).
    Versions {
        /// Job id.
        job_id: String,
        /// Most versions to show.
        #[arg(long, default_value_t = 20)]
        limit: u64,
        /// Every version.
        #[arg(long)]
        all: bool,
    },
    /// A job's upcoming fires, with the daylight-saving transitions they cross and what its
    /// gap / overlap policy does at each.
    Upcoming {
        /// Job id.
        job_id: String,
        /// Days ahead (1-90).
        #[arg(long, default_value_t = 28)]
        days: u32,
        /// Start of the window (RFC 3339; default now, or the schedule's start when later).
        #[arg(long)]
        from: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// Show one definition version of a job.
    Version {
        /// Job id.
        job_id: String,
        /// Version number.
        version: u64,
    },
    /// Change a job's definition (only the given flags change).
    Update(Box<JobSpec>),
    /// Stop triggering (cancels executions queued for later fires).
    Pause {
        /// Job id.
        job_id: String,
    },
    /// Trigger again from the next fire.
    Resume {
        /// Job id.
        job_id: String,
    },
    /// Soft-delete (kept for the retention period).
    Delete {
        /// Job id.
        job_id: String,
    },
    /// Run now.
    Trigger {
        /// Job id.
        job_id: String,
    },
    /// Run the past fires in a range that have no execution, paced.
    Backfill {
        /// Job id.
        job_id: String,
        /// First instant (RFC 3339).
        #[arg(long)]
        from: String,
        /// Last instant (RFC 3339).
        #[arg(long)]
        to: String,
        /// Seconds between two backfilled executions.
        #[arg(long, default_value_t = 1)]
        pace_secs: u32,
    },
}

/// A job definition from flags (and/or a JSON file).
#[derive(clap::Args, Debug)]
pub(crate) struct JobSpec {
    /// Job id.
    job_id: String,
    /// A JSON definition to start from (the API's JobDefinition).
    #[arg(long)]
    file: Option<std::path::PathBuf>,
    /// Schedule: cron ('0 30 2 * * *' or '30 2 * * *'), 'rate(10 seconds)' or 'at(...)'.
    #[arg(long)]
    schedule: Option<String>,
    /// IANA time zone.
    #[arg(long)]
    tz: Option<String>,
    /// Worker pool.
    #[arg(long)]
    pool: Option<String>,
    /// Webhook target URL.
    #[arg(long, conflicts_with_all = ["lambda", "sqs", "handler"])]
    url: Option<String>,
    /// Lambda target (function name or ARN).
    #[arg(long, conflicts_with_all = ["sqs", "handler"])]
    lambda: Option<String>,
    /// SQS target (queue URL).
    #[arg(long, conflicts_with = "handler")]
    sqs: Option<String>,
    /// In-process handler name (ECS pools).
    #[arg(long)]
    handler: Option<String>,
    /// Parameters (JSON).
    #[arg(long)]
    params: Option<String>,
    /// Attempts in all (1 = no retry).
    #[arg(long, allow_hyphen_values = true)]
    max_attempts: Option<i64>,
    /// Run timeout per attempt (seconds).
    #[arg(long)]
    timeout_secs: Option<u32>,
    /// Report a fire not started this many seconds after its scheduled instant (a FireMissed
    /// event, once per fire).
    #[arg(long)]
    start_deadline_secs: Option<u32>,
    /// Concurrency policy: ALLOW, FORBID, SERIALIZE, REPLACE.
    #[arg(long)]
    concurrency: Option<String>,
    /// A resource limit its runs use (repeat for several; replaces the list on update).
    #[arg(long = "resource")]
    resources: Vec<String>,
    /// Priority within the pool: high, normal, low (low is deferred first when the pool is
    /// busy; docs/priority.md).
    #[arg(long)]
    priority: Option<String>,
    /// Sharded job: each fire runs as this many children, each given shardIndex/shardTotal
    /// (docs/children.md).
    #[arg(long, conflicts_with = "broadcast")]
    shards: Option<u32>,
    /// Broadcast job: each fire runs once per member (comma-separated, e.g. regions); never for
    /// work that must happen once (docs/children.md).
    #[arg(long, value_delimiter = ',')]
    broadcast: Option<Vec<String>>,
    /// Map-reduce job (needs --handler, a map-reduce handler of the ECS worker): its map emits
    /// items, each run as its own execution, then one reduce; the value is the most items one
    /// fire may emit (docs/mapreduce.md).
    #[arg(long, value_name = "MAX_ITEMS", conflicts_with_all = ["shards", "broadcast"])]
    map_reduce: Option<u32>,
}

impl JobSpec {
    /// Applies the flags over `base` (a definition object).
    fn apply(&self, mut def: Map<String, Value>) -> anyhow::Result<Map<String, Value>> {
        if let Some(f) = &self.file {
            let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            let v: Value =
                serde_json::from_str(&text).with_context(|| format!("{} is not JSON", f.display()))?;
            let obj = v.as_object().with_context(|| format!("{} is not a JSON object", f.display()))?;
            def.extend(obj.clone());
        }
        def.remove("jobId");
        let sched = def.entry("schedule").or_insert_with(|| json!({"timezone": "UTC"}));
        if let Some(s) = &self.schedule {
            sched["expression"] = json!(s);
        }
        if let Some(tz) = &self.tz {
            sched["timezone"] = json!(tz);
        }
        if let Some(p) = &self.pool {
            def.insert("pool".into(), json!(p));
        }
        let target = match (&self.url, &self.lambda, &self.sqs, &self.handler) {
            (Some(u), ..) => Some(json!({"type": "http", "url": u})),
            (_, Some(f), ..) => Some(json!({"type": "lambda", "function": f})),
            (_, _, Some(q), _) => Some(json!({"type": "sqs", "queueUrl": q})),
            (_, _, _, Some(h)) => Some(json!({"type": "inProcess", "handler": h})),
            _ => None,
        };
        if let Some(t) = target {
            def.insert("target".into(), t);
        }
        if let Some(p) = &self.params {
            let v: Value = serde_json::from_str(p).context("--params is not JSON")?;
            def.insert("params".into(), v);
        }
        if let Some(n) = self.max_attempts {
            def.entry("retry").or_insert_with(|| json!({}))["maxAttempts"] = json!(n);
        }
        if let Some(t) = self.timeout_secs {
            def.insert("timeoutSecs".into(), json!(t));
        }
        if let Some(d) = self.start_deadline_secs {
            def.insert("startDeadlineSecs".into(), json!(d));
        }
        if let Some(c) = &self.concurrency {
            def.insert("concurrency".into(), json!(c.to_uppercase()));
        }
        if !self.resources.is_empty() {
            def.insert("resources".into(), json!(self.resources));
        }
        if let Some(p) = &self.priority {
            def.insert("priority".into(), json!(p.to_lowercase()));
        }
        if let Some(n) = self.shards {
            def.remove("broadcast");
            def.insert("shards".into(), json!(n));
        }
        if let Some(m) = &self.broadcast {
            def.remove("shards");
            def.insert("broadcast".into(), json!({ "members": m }));
        }
        if let Some(n) = self.map_reduce {
            def.insert("mapReduce".into(), json!({ "maxItems": n }));
        }
        Ok(def)
    }
}

/// `sundial executions ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum ExecCmd {
    /// List executions of a job (any status), or across jobs by status (RETRY_WAIT, FAILED, DEAD, CANCELED).
    List {
        /// The job.
        #[arg(long)]
        job: Option<String>,
        /// Only this status (required without --job: RETRY_WAIT, FAILED, DEAD or CANCELED).
        #[arg(long)]
        status: Option<String>,
        /// Oldest first (with --job).
        #[arg(long, requires = "job")]
        oldest_first: bool,
        #[command(flatten)]
        paging: Paging,
    },
    /// Show one execution with its timeline (a parent: also its children).
    Get {
        /// Execution id (`job@ms`; a child's `job@ms.s3` or `job@ms.m-<member>`).
        execution_id: String,
    },
    /// List the children of a sharded or broadcast fire, with their status.
    Children {
        /// The parent's execution id (`job@ms`).
        execution_id: String,
    },
    /// Cancel an execution.
    Cancel {
        /// Execution id.
        execution_id: String,
    },
}

/// `sundial dlq ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum DlqCmd {
    /// List dead executions.
    List {
        #[command(flatten)]
        paging: Paging,
    },
    /// Replay dead executions (same execution ids; audited).
    Replay {
        /// Execution ids (up to 25).
        #[arg(required = true)]
        execution_ids: Vec<String>,
        /// Why (recorded in each replay's operations-log entry; at most 500 characters).
        #[arg(long)]
        reason: Option<String>,
    },
}

/// `sundial ops ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum OpsCmd {
    /// The operations audit log, newest first.
    List {
        /// Only this job.
        #[arg(long)]
        job: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
}

/// One page of `req`, or with `--all` every page as one; as the API's JSON.
pub(crate) async fn list<R: ListRequest>(c: &Client, req: R, all: bool) -> anyhow::Result<Value>
where
    R::Item: Serialize,
{
    if all {
        let items = c.all(req).await?;
        Ok(json!({"items": items, "nextCursor": null}))
    } else {
        Ok(serde_json::to_value(c.page(&req).await?)?)
    }
}

pub(crate) fn to_json(v: &impl Serialize) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(v)?)
}

/// A definition object as the API's typed definition; the error names the JSON path.
fn definition(def: Map<String, Value>) -> anyhow::Result<JobDefinition> {
    serde_path_to_error::deserialize(Value::Object(def))
        .map_err(|e| anyhow::anyhow!("the job definition is not valid at {}: {}", e.path(), e.inner()))
}

fn status(s: &str) -> anyhow::Result<ExecStatus> {
    ExecStatus::parse(&s.to_uppercase()).with_context(|| {
        let all: Vec<&str> = ExecStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("--status {s}: not one of {}", all.join(", "))
    })
}

fn instant(flag: &str, s: &str) -> anyhow::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .with_context(|| format!("{flag} {s}: not an RFC 3339 instant"))
}

pub(crate) fn s(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Prints rows as a left-aligned table.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![line(headers.iter().map(|h| h.to_string()).collect())];
    out.extend(rows.iter().map(|r| line(r.clone())));
    out.join("\n")
}

pub(crate) fn print_json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

fn print_job(j: &Value) {
    println!("job        {}", s(&j["jobId"]));
    println!("state      {}", s(&j["state"]));
    println!("version    {}", s(&j["version"]));
    let d = &j["definition"];
    println!("schedule   {} ({})", s(&d["schedule"]["expression"]), s(&d["schedule"]["timezone"]));
    println!("pool       {}", s(&d["pool"]));
    println!("target     {}", d["target"]);
    println!("next fire  {}", s(&j["nextFireAt"]));
    println!("updated    {}", s(&j["updatedAt"]));
}

fn print_change(v: &Value) {
    print_job(&v["job"]);
    if let Some(f) = v["nextFires"].as_array().filter(|f| !f.is_empty()) {
        println!("next fires {}", f.iter().map(s).collect::<Vec<_>>().join(", "));
    }
    if let Some(c) = v["canceledExecutions"].as_array().filter(|c| !c.is_empty()) {
        println!(
            "cancelled  {} queued execution(s): {}",
            c.len(),
            c.iter().map(s).collect::<Vec<_>>().join(", ")
        );
    }
}

fn exec_rows(items: &[Value]) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|e| {
            vec![
                s(&e["executionId"]),
                s(&e["status"]),
                s(&e["scheduledAt"]),
                s(&e["startedAt"]),
                e["startLagMs"].as_i64().map(|l| format!("{l} ms")).unwrap_or_else(|| "-".into()),
                s(&e["attempt"]),
                s(&e["definitionVersion"]),
                e["lastError"]["code"].as_str().unwrap_or("-").to_string(),
            ]
        })
        .collect()
}

const EXEC_HEADERS: [&str; 8] =
    ["EXECUTION", "STATUS", "SCHEDULED", "STARTED", "LAG", "ATTEMPT", "VERSION", "ERROR"];

/// Renders an execution with its timeline as text.
pub(crate) fn render_execution(e: &Value) -> String {
    let mut out = vec![
        format!("execution  {}", s(&e["executionId"])),
        format!("status     {}", s(&e["status"])),
        format!("scheduled  {}", s(&e["scheduledAt"])),
        format!("fire at    {}", s(&e["fireAt"])),
        format!(
            "started    {}{}",
            s(&e["startedAt"]),
            e["startLagMs"].as_i64().map(|l| format!(" (lag {l} ms)")).unwrap_or_default()
        ),
        format!("finished   {}", s(&e["finishedAt"])),
        format!(
            "attempt    {}   token {}   version {}",
            s(&e["attempt"]),
            s(&e["fencingToken"]),
            s(&e["definitionVersion"])
        ),
    ];
    if !e["lastError"].is_null() {
        out.push(format!("error      {}: {}", s(&e["lastError"]["code"]), s(&e["lastError"]["message"])));
    }
    if let Some(p) = e["parentExecutionId"].as_str() {
        out.push(format!("parent     {p}   child {}", s(&e["child"]["tag"])));
    }
    if e["children"].is_object() {
        let k = &e["children"];
        out.push(format!(
            "children   {} of {} final, {} succeeded{}",
            s(&k["finished"]),
            s(&k["total"]),
            s(&k["succeeded"]),
            k["failed"]
                .as_array()
                .filter(|f| !f.is_empty())
                .map(|f| format!(", not succeeded: {}", f.iter().map(s).collect::<Vec<_>>().join(", ")))
                .unwrap_or_default()
        ));
    }
    if let Some(kids) = e["childExecutions"].as_array().filter(|k| !k.is_empty()) {
        out.push(String::new());
        out.push(table(&EXEC_HEADERS, &exec_rows(kids)));
    }
    out.push(String::new());
    let rows: Vec<Vec<String>> = e["timeline"]
        .as_array()
        .map(|tl| {
            tl.iter()
                .map(|ev| {
                    vec![
                        s(&ev["at"]),
                        format!("{} → {}", s(&ev["from"]), s(&ev["to"])),
                        s(&ev["attempt"]),
                        s(&ev["token"]),
                        s(&ev["actor"]),
                        s(&ev["code"]),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    out.push(table(&["AT", "TRANSITION", "ATTEMPT", "TOKEN", "ACTOR", "CODE"], &rows));
    out.join("\n")
}

pub(crate) fn next_hint(v: &Value) {
    if let Some(c) = v["nextCursor"].as_str() {
        println!("(more: --cursor {c})");
    }
}

fn job_rows(items: &[Value]) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|j| {
            vec![
                s(&j["jobId"]),
                s(&j["state"]),
                s(&j["version"]),
                s(&j["definition"]["schedule"]["expression"]),
                s(&j["definition"]["schedule"]["timezone"]),
                s(&j["definition"]["pool"]),
                s(&j["nextFireAt"]),
            ]
        })
        .collect()
}

pub(crate) fn items(v: &Value) -> &[Value] {
    v["items"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// Runs `sundial jobs ...`.
pub(crate) async fn jobs(args: &ApiArgs, cmd: JobsCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    let out = args.output;
    let show_change = |v: &Value| if out == Output::Json { print_json(v) } else { print_change(v) };
    let show_job = |v: &Value| if out == Output::Json { print_json(v) } else { print_job(v) };
    match cmd {
        JobsCmd::Create(spec) => {
            let definition = definition(spec.apply(Map::new())?)?;
            let v = c.create_job(&CreateJob { job_id: spec.job_id.clone(), definition }).await?;
            show_change(&to_json(&v)?);
        }
        JobsCmd::List { include_deleted, paging } => {
            let req = ListJobs { include_deleted, limit: paging.limit, cursor: paging.cursor };
            let v = list(&c, req, paging.all).await?;
            if out == Output::Json {
                print_json(&v);
            } else {
                let headers = ["JOB", "STATE", "VERSION", "SCHEDULE", "ZONE", "POOL", "NEXT FIRE"];
                println!("{}", table(&headers, &job_rows(items(&v))));
                next_hint(&v);
            }
        }
        JobsCmd::Get { job_id } => show_job(&to_json(&c.get_job(&job_id).await?)?),
        JobsCmd::Versions { job_id, limit, all } => {
            let versions = c.job_versions(&job_id, (!all).then_some(limit)).await?;
            let v = json!({ "items": versions });
            if out == Output::Json {
                print_json(&v);
            } else {
                let rows: Vec<Vec<String>> = items(&v)
                    .iter()
                    .map(|j| {
                        let d = &j["definition"];
                        vec![
                            s(&j["version"]),
                            s(&j["state"]),
                            s(&d["schedule"]["expression"]),
                            s(&d["schedule"]["timezone"]),
                            s(&d["pool"]),
                            d["target"].to_string(),
                            d["params"].to_string(),
                            s(&j["updatedAt"]),
                        ]
                    })
                    .collect();
                let headers = ["VERSION", "STATE", "SCHEDULE", "ZONE", "POOL", "TARGET", "PARAMS", "WRITTEN"];
                println!("{}", table(&headers, &rows));
                if !all && versions.last().is_some_and(|j| j.version > 1) && versions.len() as u64 == limit {
                    println!("(older versions: --limit or --all)");
                }
            }
        }
        JobsCmd::Upcoming { job_id, days, from } => {
            let u = c.upcoming_fires(&job_id, from, Some(days)).await?;
            if out == Output::Json {
                print_json(&to_json(&u)?);
            } else {
                let tz: chrono_tz::Tz = u.timezone.parse().unwrap_or(chrono_tz::UTC);
                let notes: std::collections::HashMap<_, _> = u
                    .transitions
                    .iter()
                    .flat_map(|t| t.affected.iter())
                    .filter_map(|a| a.at.map(|at| (at, a.note.clone())))
                    .collect();
                let rows: Vec<Vec<String>> = u
                    .fires
                    .iter()
                    .map(|f| {
                        vec![
                            f.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S").to_string(),
                            f.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                            notes.get(f).cloned().unwrap_or_default(),
                        ]
                    })
                    .collect();
                let local = format!("LOCAL ({})", u.timezone);
                println!("{}", table(&[local.as_str(), "UTC", "NOTE"], &rows));
                for t in &u.transitions {
                    println!("{}", t.note);
                    for a in t.affected.iter().filter(|a| a.at.is_none()) {
                        println!("  {}", a.note);
                    }
                }
                if u.truncated {
                    println!("(more fires: a shorter --days)");
                }
            }
        }
        JobsCmd::Version { job_id, version } => {
            show_job(&to_json(&c.get_job_version(&job_id, version).await?)?)
        }
        JobsCmd::Update(spec) => {
            let cur = c.get_job(&spec.job_id).await?;
            let base = to_json(&cur.definition)?.as_object().cloned().unwrap_or_default();
            let def = definition(spec.apply(base)?)?;
            show_change(&to_json(&c.update_job(&spec.job_id, &def, cur.version).await?)?);
        }
        JobsCmd::Pause { job_id } => show_change(&to_json(&c.pause_job(&job_id, None).await?)?),
        JobsCmd::Resume { job_id } => show_change(&to_json(&c.resume_job(&job_id, None).await?)?),
        JobsCmd::Delete { job_id } => show_change(&to_json(&c.delete_job(&job_id, None).await?)?),
        JobsCmd::Trigger { job_id } => {
            let v = to_json(&c.trigger_job(&job_id).await?)?;
            if out == Output::Json {
                print_json(&v)
            } else {
                println!("{}", render_execution(&v))
            }
        }
        JobsCmd::Backfill { job_id, from, to, pace_secs } => {
            let req = BackfillRequest {
                from: instant("--from", &from)?,
                to: instant("--to", &to)?,
                pace_secs: Some(pace_secs),
            };
            let v = to_json(&c.backfill_job(&job_id, &req).await?)?;
            if out == Output::Json {
                print_json(&v)
            } else {
                println!(
                    "{} fires in range: {} created, {} already had an execution; last starts at {}",
                    s(&v["fires"]),
                    s(&v["created"]),
                    s(&v["existing"]),
                    s(&v["lastStartAt"])
                );
            }
        }
    }
    Ok(())
}

/// Runs `sundial executions ...`.
pub(crate) async fn executions(args: &ApiArgs, cmd: ExecCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    let out = args.output;
    match cmd {
        ExecCmd::List { job, status: st, oldest_first, paging } => {
            let st = st.as_deref().map(status).transpose()?;
            let v = match job {
                Some(job_id) => {
                    let req = ListJobExecutions {
                        job_id,
                        status: st,
                        oldest_first,
                        limit: paging.limit,
                        cursor: paging.cursor,
                    };
                    list(&c, req, paging.all).await?
                }
                None => {
                    let st = st
                        .context("--status is required without --job (RETRY_WAIT, FAILED, DEAD, CANCELED)")?;
                    let req = ListExecutions { status: st, limit: paging.limit, cursor: paging.cursor };
                    list(&c, req, paging.all).await?
                }
            };
            if out == Output::Json {
                print_json(&v);
            } else {
                println!("{}", table(&EXEC_HEADERS, &exec_rows(items(&v))));
                next_hint(&v);
            }
        }
        ExecCmd::Get { execution_id } => {
            let v = to_json(&c.get_execution(&execution_id).await?)?;
            if out == Output::Json {
                print_json(&v)
            } else {
                println!("{}", render_execution(&v))
            }
        }
        ExecCmd::Children { execution_id } => {
            let v = to_json(&c.list_children(&execution_id).await?)?;
            if out == Output::Json {
                print_json(&v);
            } else {
                println!("{}", table(&EXEC_HEADERS, &exec_rows(items(&v))));
            }
        }
        ExecCmd::Cancel { execution_id } => {
            let v = to_json(&c.cancel_execution(&execution_id).await?)?;
            if out == Output::Json {
                print_json(&v)
            } else {
                println!(
                    "{} {}",
                    s(&v["executionId"]),
                    if v["status"] == "CANCELED" { "cancelled" } else { "cancel requested (running)" }
                )
            }
        }
    }
    Ok(())
}

/// Runs `sundial dlq ...`.
pub(crate) async fn dlq(args: &ApiArgs, cmd: DlqCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    match cmd {
        DlqCmd::List { paging } => {
            let req = ListDeadLetters { limit: paging.limit, cursor: paging.cursor };
            let v = list(&c, req, paging.all).await?;
            if args.output == Output::Json {
                print_json(&v);
            } else {
                println!("{}", table(&EXEC_HEADERS, &exec_rows(items(&v))));
                next_hint(&v);
            }
        }
        DlqCmd::Replay { execution_ids, reason } => {
            let v = to_json(&c.replay_dead_letters_because(&execution_ids, reason.as_deref()).await?)?;
            if args.output == Output::Json {
                print_json(&v);
            } else {
                let rows: Vec<Vec<String>> = v["results"]
                    .as_array()
                    .map(|r| r.iter().map(|x| vec![s(&x["executionId"]), s(&x["outcome"])]).collect())
                    .unwrap_or_default();
                println!("{}", table(&["EXECUTION", "OUTCOME"], &rows));
            }
        }
    }
    Ok(())
}

/// Runs `sundial ops ...`.
pub(crate) async fn ops(args: &ApiArgs, cmd: OpsCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    let OpsCmd::List { job, paging } = cmd;
    let req = ListOperations { job_id: job, limit: paging.limit, cursor: paging.cursor };
    let v = list(&c, req, paging.all).await?;
    if args.output == Output::Json {
        print_json(&v);
    } else {
        let rows: Vec<Vec<String>> = items(&v)
            .iter()
            .map(|o| {
                vec![
                    s(&o["at"]),
                    s(&o["actor"]),
                    s(&o["action"]),
                    s(&o["jobId"]),
                    format!("{} → {}", s(&o["fromVersion"]), s(&o["toVersion"])),
                    s(&o["executionId"]),
                    s(&o["detail"]),
                ]
            })
            .collect();
        println!("{}", table(&["AT", "ACTOR", "ACTION", "JOB", "VERSION", "EXECUTION", "DETAIL"], &rows));
        next_hint(&v);
    }
    Ok(())
}

#[cfg(test)]
mod children_flags {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        spec: JobSpec,
    }

    fn def(args: &[&str]) -> anyhow::Result<Map<String, Value>> {
        let t = T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))?;
        t.spec.apply(Map::new())
    }

    #[test]
    fn shards_and_broadcast_flags_set_the_fields_and_exclude_each_other() -> anyhow::Result<()> {
        assert_eq!(def(&["j", "--shards", "8"])?["shards"], json!(8));
        assert_eq!(
            def(&["j", "--broadcast", "eu-west-1,us-east-1"])?["broadcast"],
            json!({"members": ["eu-west-1", "us-east-1"]})
        );
        assert!(def(&["j", "--shards", "8", "--broadcast", "a"]).is_err());
        Ok(())
    }

    #[test]
    fn the_map_reduce_flag_sets_its_item_limit() -> anyhow::Result<()> {
        let d = def(&["j", "--handler", "settle-merchants", "--map-reduce", "20000"])?;
        assert_eq!(d["mapReduce"], json!({"maxItems": 20000}));
        assert_eq!(d["target"], json!({"type": "inProcess", "handler": "settle-merchants"}));
        assert!(def(&["j", "--shards", "8", "--map-reduce", "10"]).is_err());
        Ok(())
    }
}

#[cfg(test)]
mod priority_flag {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        spec: JobSpec,
    }

    #[test]
    fn priority_sets_the_definition_field_in_lower_case() {
        let cmd = Cmd::try_parse_from(["jobs-create", "j", "--priority", "LOW"]).expect("parses");
        let def = cmd.spec.apply(Map::new()).expect("applies");
        assert_eq!(def["priority"], json!("low"));
        let cmd = Cmd::try_parse_from(["jobs-create", "j"]).expect("parses");
        assert!(cmd.spec.apply(Map::new()).expect("applies").get("priority").is_none());
    }
}
