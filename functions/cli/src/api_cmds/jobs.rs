//! `sundial jobs ...`.

use super::job_spec::{definition, JobSpec};
use super::output::{items, next_hint, print_json, render_execution, s, table, to_json};
use super::paging::{list, Paging};
use crate::client::{ApiArgs, Output};
use anyhow::Context;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sundial_client::{BackfillRequest, Client, CreateJob, ListJobs, UpcomingFires};

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
        /// Replay the fires the pause skipped: none (default), all, or last (the latest only).
        #[arg(long, value_parser = ["none", "all", "last"])]
        catch_up: Option<String>,
        /// Seconds between two replayed fires' starts (default 0).
        #[arg(long)]
        pace_secs: Option<u32>,
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
        /// Per-run parameters (JSON), merged over the job's (RFC 7396).
        #[arg(long)]
        params: Option<String>,
    },
    /// What the job's fires wait for (its upstreams) and which jobs wait for its runs.
    Deps {
        /// Job id.
        job_id: String,
    },
    /// Send an event to a job that takes events (docs/dependencies.md, "Event triggers").
    Event {
        /// Job id.
        job_id: String,
        #[command(flatten)]
        event: EventFields,
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
        /// Per-run parameters (JSON) for every backfilled execution, merged over the job's.
        #[arg(long)]
        params: Option<String>,
    },
}

/// An event's fields, as `jobs event` and `events send` take them (docs/events.md).
#[derive(clap::Args, Debug)]
pub(crate) struct EventFields {
    /// Deduplication key (a file name, a message id; default: none through the API, the
    /// message's id through a queue).
    #[arg(long)]
    pub(crate) key: Option<String>,
    /// Per-run parameters (JSON), merged over the job's.
    #[arg(long)]
    pub(crate) params: Option<String>,
    /// When the event happened (RFC 3339; default: its arrival, or its sending).
    #[arg(long)]
    pub(crate) at: Option<String>,
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
        JobsCmd::List { include_deleted, paging } => list_jobs(&c, out, include_deleted, paging).await?,
        JobsCmd::Get { job_id } => show_job(&to_json(&c.get_job(&job_id).await?)?),
        JobsCmd::Versions { job_id, limit, all } => versions(&c, out, &job_id, limit, all).await?,
        JobsCmd::Upcoming { job_id, days, from } => {
            let u = c.upcoming_fires(&job_id, from, Some(days)).await?;
            if out == Output::Json {
                print_json(&to_json(&u)?);
            } else {
                print_upcoming(&u);
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
        JobsCmd::Resume { job_id, catch_up: None, pace_secs: None } => {
            show_change(&to_json(&c.resume_job(&job_id, None).await?)?)
        }
        JobsCmd::Resume { job_id, catch_up, pace_secs } => {
            let req = sundial_client::types::ResumeRequest { catch_up, pace_secs };
            resume_with(&c, out, &job_id, &req).await?
        }
        JobsCmd::Delete { job_id } => show_change(&to_json(&c.delete_job(&job_id, None).await?)?),
        JobsCmd::Trigger { job_id, params } => {
            let req =
                sundial_client::types::TriggerRequest { params: json_flag("--params", params.as_deref())? };
            trigger(&c, out, &job_id, &req).await?
        }
        JobsCmd::Backfill { job_id, from, to, pace_secs, params } => {
            let params = json_flag("--params", params.as_deref())?;
            backfill(&c, out, &job_id, (&from, &to), pace_secs, params).await?
        }
        JobsCmd::Deps { job_id } => {
            let g = c.job_dependencies(&job_id).await?;
            if out == Output::Json {
                print_json(&to_json(&g)?)
            } else {
                print_dependencies(&job_id, &to_json(&g)?)
            }
        }
        JobsCmd::Event { job_id, event: EventFields { key, params, at } } => {
            let req = sundial_client::types::EventRequest {
                key,
                params: json_flag("--params", params.as_deref())?,
                at: at.as_deref().map(|a| instant("--at", a)).transpose()?,
            };
            event(&c, out, &job_id, &req).await?
        }
    }
    Ok(())
}

/// `jobs resume` with a catch-up policy or pace: the resumed job, and what the catch-up created.
async fn resume_with(
    c: &Client,
    out: Output,
    job_id: &str,
    req: &sundial_client::types::ResumeRequest,
) -> anyhow::Result<()> {
    let v = to_json(&c.resume_job_with(job_id, None, req).await?)?;
    if let Some(r) = v.get("catchUp").filter(|_| out != Output::Json) {
        println!(
            "caught up: {} fires of the paused window, {} created, {} released from the pause, {} existing",
            r["fires"], r["created"], r["released"], r["existing"]
        );
    }
    if out == Output::Json {
        print_json(&v)
    } else {
        print_change(&v)
    }
    Ok(())
}

/// `jobs trigger`: the manual run it created.
async fn trigger(
    c: &Client,
    out: Output,
    job_id: &str,
    req: &sundial_client::types::TriggerRequest,
) -> anyhow::Result<()> {
    let v = to_json(&c.trigger_job_with(job_id, req).await?)?;
    if out == Output::Json {
        print_json(&v)
    } else {
        println!("{}", render_execution(&v))
    }
    Ok(())
}

/// `jobs event`: the execution the event created, or the one it was deduplicated onto.
async fn event(
    c: &Client,
    out: Output,
    job_id: &str,
    req: &sundial_client::types::EventRequest,
) -> anyhow::Result<()> {
    let r = c.post_job_event(job_id, req).await?;
    if out == Output::Json {
        print_json(&to_json(&r)?)
    } else {
        let what = if r.created { "created" } else { "deduplicated onto" };
        println!("event {what} {}", render_execution(&to_json(&r.execution)?));
    }
    Ok(())
}

/// `jobs list`: one page (or every page) of jobs.
async fn list_jobs(c: &Client, out: Output, include_deleted: bool, paging: Paging) -> anyhow::Result<()> {
    let req = ListJobs { include_deleted, limit: paging.limit, cursor: paging.cursor };
    let v = list(c, req, paging.all).await?;
    if out == Output::Json {
        print_json(&v);
    } else {
        let headers = ["JOB", "STATE", "VERSION", "SCHEDULE", "ZONE", "POOL", "NEXT FIRE"];
        println!("{}", table(&headers, &job_rows(items(&v))));
        next_hint(&v);
    }
    Ok(())
}

/// `jobs versions`: a job's definition versions, newest first, `limit` of them unless `all`.
async fn versions(c: &Client, out: Output, job_id: &str, limit: u64, all: bool) -> anyhow::Result<()> {
    let versions = c.job_versions(job_id, (!all).then_some(limit)).await?;
    let v = json!({ "items": versions });
    if out == Output::Json {
        print_json(&v);
    } else {
        let headers = ["VERSION", "STATE", "SCHEDULE", "ZONE", "POOL", "TARGET", "PARAMS", "WRITTEN"];
        println!("{}", table(&headers, &version_rows(items(&v))));
        if !all && versions.last().is_some_and(|j| j.version > 1) && versions.len() as u64 == limit {
            println!("(older versions: --limit or --all)");
        }
    }
    Ok(())
}

fn version_rows(items: &[Value]) -> Vec<Vec<String>> {
    items
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
        .collect()
}

/// `jobs upcoming` as text: each fire in the job's zone and in UTC, noted where it meets a
/// daylight-saving transition, then each transition and what happened to the fires it affects.
fn print_upcoming(u: &UpcomingFires) {
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

/// `jobs backfill`: creates the missing executions of the past fires in `[from, to]`, paced.
async fn backfill(
    c: &Client,
    out: Output,
    job_id: &str,
    (from, to): (&str, &str),
    pace_secs: u32,
    params: Option<Value>,
) -> anyhow::Result<()> {
    let req = BackfillRequest {
        from: instant("--from", from)?,
        to: instant("--to", to)?,
        pace_secs: Some(pace_secs),
        params,
    };
    let v = to_json(&c.backfill_job(job_id, &req).await?)?;
    if out == Output::Json {
        print_json(&v)
    } else {
        println!(
            "{} fires in range: {} created, {} released from a pause, {} already had an execution; last starts at {}",
            s(&v["fires"]),
            s(&v["created"]),
            s(&v["released"]),
            s(&v["existing"]),
            s(&v["lastStartAt"])
        );
    }
    Ok(())
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

/// `sundial jobs deps`: one line per edge, `upstream → job` then `job → downstream`.
fn print_dependencies(job_id: &str, g: &Value) {
    let line = |e: &Value| {
        let d = &e["dependency"];
        let period = match (d["period"].as_str(), d["offsetSecs"].as_i64()) {
            (Some("offset"), Some(o)) => format!("offset {o} s"),
            (Some(p), _) => p.to_string(),
            _ => "same".into(),
        };
        let state = e["state"].as_str().unwrap_or("missing");
        format!("{} ({period}, {}; {state})", s(&e["job"]), d["status"].as_str().unwrap_or("succeeded"))
    };
    let ups = g["upstreams"].as_array().cloned().unwrap_or_default();
    let downs = g["downstreams"].as_array().cloned().unwrap_or_default();
    if ups.is_empty() && downs.is_empty() {
        println!("{job_id} waits for no job and no job waits for it");
    }
    for u in &ups {
        println!("{} → {job_id}", line(u));
    }
    for d in &downs {
        println!("{job_id} → {}", line(d));
    }
    if g["downstreamsComplete"] == Value::Bool(false) {
        println!("(more jobs than one lookup reads: some downstreams may be missing)");
    }
}

/// A JSON flag's value, if given; the error names the flag.
fn json_flag(flag: &str, v: Option<&str>) -> anyhow::Result<Option<Value>> {
    v.map(|s| serde_json::from_str(s).with_context(|| format!("{flag} is not JSON: {s}"))).transpose()
}

fn instant(flag: &str, s: &str) -> anyhow::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .with_context(|| format!("{flag} {s}: not an RFC 3339 instant"))
}
