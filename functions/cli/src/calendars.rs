//! `sundial calendars put|get|list|delete|versions`: business calendars through the API.

use crate::api_cmds::{items, list, next_hint, print_json, s, table, to_json, Paging};
use crate::client::{ApiArgs, Output};
use anyhow::Context;
use serde_json::Value;
use sundial_client::{BusinessCalendarSpec, Error, ListCalendars};

/// `sundial calendars ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum CalendarsCmd {
    /// Create a calendar, or edit it with --version (the ETag read): a new version, audited;
    /// the jobs using it are re-planned.
    Put {
        /// Calendar id.
        calendar_id: String,
        /// JSON file with the definition (`-` for stdin): {"holidays": [...], "restDays": [...],
        /// "workingDays": [...], "parent": "..."}.
        #[arg(long)]
        file: String,
        /// The version being edited (If-Match); omit to create.
        #[arg(long)]
        version: Option<u64>,
    },
    /// Show a calendar (its current version).
    Get {
        /// Calendar id.
        calendar_id: String,
    },
    /// List calendars.
    List {
        #[command(flatten)]
        paging: Paging,
    },
    /// Delete a calendar (refused while a job or another calendar uses it).
    Delete {
        /// Calendar id.
        calendar_id: String,
        /// Only if still at this version.
        #[arg(long)]
        version: Option<u64>,
    },
    /// A calendar's versions, newest first (or one with --version).
    Versions {
        /// Calendar id.
        calendar_id: String,
        /// Only this version.
        #[arg(long)]
        version: Option<u64>,
    },
}

fn read_spec(file: &str) -> anyhow::Result<BusinessCalendarSpec> {
    let text = if file == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading the definition from stdin")?
    } else {
        std::fs::read_to_string(file).with_context(|| format!("--file: reading {file}"))?
    };
    serde_json::from_str(&text).with_context(|| format!("--file: {file} is not a calendar definition"))
}

fn row(c: &Value) -> Vec<String> {
    let d = &c["definition"];
    let count = |k: &str| d[k].as_array().map_or(0, Vec::len).to_string();
    let rest = d["restDays"].as_array().map_or("(inherited or sat, sun)".to_string(), |r| {
        r.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(",")
    });
    vec![
        s(&c["calendarId"]),
        s(&c["version"]),
        s(&d["parent"]),
        count("holidays"),
        count("workingDays"),
        rest,
        s(&c["updatedAt"]),
    ]
}

const HEADERS: [&str; 7] =
    ["CALENDAR", "VERSION", "PARENT", "HOLIDAYS", "WORKING DAYS", "REST DAYS", "UPDATED"];

/// Runs `sundial calendars ...`.
pub(crate) async fn calendars(args: &ApiArgs, cmd: CalendarsCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    let show = |v: &Value, rows: Vec<Vec<String>>| {
        if args.output == Output::Json {
            print_json(v);
        } else {
            println!("{}", table(&HEADERS, &rows));
        }
    };
    match cmd {
        CalendarsCmd::Put { calendar_id, file, version } => {
            let spec = read_spec(&file)?;
            let v = to_json(&c.put_calendar(&calendar_id, &spec, version).await?)?;
            show(&v, vec![row(&v["calendar"])]);
            if args.output != Output::Json {
                if let Some(jobs) = v["replannedJobs"].as_array().filter(|j| !j.is_empty()) {
                    let ids: Vec<&str> = jobs.iter().filter_map(Value::as_str).collect();
                    println!("re-planned: {}", ids.join(", "));
                }
            }
        }
        CalendarsCmd::Get { calendar_id } => {
            let v = to_json(&c.get_calendar(&calendar_id).await?)?;
            if args.output == Output::Json {
                print_json(&v);
            } else {
                println!("{}", table(&HEADERS, &[row(&v)]));
                println!("{}", serde_json::to_string_pretty(&v["definition"])?);
            }
        }
        CalendarsCmd::List { paging } => {
            let req = ListCalendars { limit: paging.limit, cursor: paging.cursor };
            let v = list(&c, req, paging.all).await?;
            show(&v, items(&v).iter().map(row).collect());
            if args.output != Output::Json {
                next_hint(&v);
            }
        }
        CalendarsCmd::Delete { calendar_id, version } => {
            let v = to_json(&c.delete_calendar(&calendar_id, version).await?)?;
            if args.output == Output::Json {
                print_json(&v);
            } else {
                println!("deleted {calendar_id} (tombstone version {})", s(&v["version"]));
            }
        }
        CalendarsCmd::Versions { calendar_id, version } => {
            let versions: Vec<u64> = match version {
                Some(v) => vec![v],
                None => (1..=c.get_calendar(&calendar_id).await?.version).rev().collect(),
            };
            let mut out = Vec::new();
            for v in versions {
                match c.get_calendar_version(&calendar_id, v).await {
                    Ok(cal) => out.push(to_json(&cal)?),
                    Err(Error::Api(e)) if e.status == 404 && version.is_none() => {}
                    Err(e) => return Err(e.into()),
                }
            }
            let v = Value::Array(out);
            show(&v, v.as_array().map(|a| a.iter().map(row).collect()).unwrap_or_default());
        }
    }
    Ok(())
}
