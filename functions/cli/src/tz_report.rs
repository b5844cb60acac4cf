//! `sundial tz-report`: which jobs fire at other instants under the API's compiled tz database
//! release than under the release their position was computed with (`GET /v1/tz-report`;
//! docs/schedule.md, "tz database upgrades").

use crate::api_cmds::table;
use crate::client::{ApiArgs, Output};
use anyhow::Context;
use serde_json::{json, Value};
use std::path::PathBuf;
use sundial_client::{Job, JobState, ListJobs, TzReport, TzReportRequest};
use sundial_schedule::tzdb::{self, Tzdb};

/// `sundial tz-report` arguments.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct TzReportArgs {
    /// Next fires of each job to compare (1-1000; the API's default is 50).
    #[arg(long)]
    fires: Option<u32>,
    /// Jobs examined per page (1-100; the API's default is 50).
    #[arg(long)]
    limit: Option<u32>,
    /// Continue from this cursor (the `nextCursor` of the previous page).
    #[arg(long)]
    cursor: Option<String>,
    /// Every page from the cursor on, as one report.
    #[arg(long)]
    all: bool,
    /// Compare here instead of on the server: the rules of the release the jobs are recorded
    /// under, read from this zoneinfo tree (`zic -d DIR` output of that release's tzdata),
    /// against this CLI's own compiled release. Run the upgraded CLI against the deployed API
    /// before deploying the upgrade. Needs --release.
    #[arg(long, requires = "release")]
    zoneinfo: Option<PathBuf>,
    /// The version of the --zoneinfo rules (`2025b`): jobs recorded under it are compared.
    #[arg(long, requires = "zoneinfo")]
    release: Option<String>,
    /// Exit with status 3 when some job's fires change or cannot be compared (for a
    /// pre-deployment check in CI).
    #[arg(long)]
    fail_on_change: bool,
}

/// The exit status of `--fail-on-change` when the report lists a job.
pub(crate) const CHANGED_EXIT: u8 = 3;

/// Runs the report; `Ok(true)` when it lists a job.
pub(crate) async fn run(api: &ApiArgs, args: TzReportArgs) -> anyhow::Result<bool> {
    let c = api.client().await?;
    if let (Some(dir), Some(version)) = (&args.zoneinfo, &args.release) {
        let old = Tzdb::from_zoneinfo(version.clone(), dir)
            .with_context(|| format!("reading the zoneinfo tree of {version}"))?;
        let req = ListJobs { include_deleted: false, limit: args.limit, cursor: args.cursor.clone() };
        let (jobs, next) = if args.all {
            (c.all(req).await?, None)
        } else {
            let p = c.page(&req).await?;
            (p.items, p.next_cursor)
        };
        let report = local_report(&jobs, next, args.fires.unwrap_or(50), &old, &Tzdb::compiled())?;
        return print(api, &report, args.fail_on_change);
    }
    let mut req = TzReportRequest { fires: args.fires, limit: args.limit, cursor: args.cursor.clone() };
    let mut report = c.tz_report(&req).await?;
    while let (true, Some(next)) = (args.all, report.next_cursor.clone()) {
        req.cursor = Some(next.clone());
        let page = c.tz_report(&req).await?;
        report.examined += page.examined;
        report.items.extend(page.items);
        // A server that answers a cursor with itself would loop forever: stop instead.
        report.next_cursor = page.next_cursor.filter(|n| *n != next);
    }
    print(api, &report, args.fail_on_change)
}

fn print(api: &ApiArgs, report: &TzReport, fail_on_change: bool) -> anyhow::Result<bool> {
    if api.output == Output::Json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", render(report));
    }
    Ok(fail_on_change && !report.items.is_empty())
}

/// The report of `jobs` (as the API lists them) computed here: each enabled job recorded
/// under `old`'s version has its next `fires` fires from its position compared under `old`
/// and `compiled`, exactly as the API's report does; a job recorded under a third release is
/// listed as `rulesUnavailable`.
pub(crate) fn local_report(
    jobs: &[Job],
    next_cursor: Option<String>,
    fires: u32,
    old: &Tzdb,
    compiled: &Tzdb,
) -> anyhow::Result<TzReport> {
    let time = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut items = Vec::new();
    for j in jobs {
        let Some(next) = j.next_fire_at.filter(|_| j.state == JobState::Enabled) else { continue };
        if j.tzdb_version == compiled.version() {
            continue;
        }
        let entry = |status: &str, reason: Option<String>, changes: Vec<Value>| {
            json!({"jobId": j.job_id, "timezone": j.definition.schedule.timezone,
                   "recordedTzdbVersion": j.tzdb_version, "status": status, "reason": reason, "changes": changes})
        };
        if j.tzdb_version != old.version() {
            let why = format!("recorded under {}, not the --release {}", j.tzdb_version, old.version());
            items.push(entry("rulesUnavailable", Some(why), Vec::new()));
            continue;
        }
        // The anchor only places rate() fires, which are compared by instant under both
        // releases alike: the creation instant (or start) serves.
        let anchor = j.definition.schedule.start.unwrap_or(j.created_at);
        let after = next - chrono::Duration::nanoseconds(1);
        match tzdb::compare(&j.definition.schedule, anchor, after, fires as usize, old, compiled) {
            Ok(changes) if changes.is_empty() => {}
            Ok(changes) => {
                let changes = changes
                    .iter()
                    .map(|c| {
                        json!({"localTime": c.local_time.format("%Y-%m-%dT%H:%M:%S").to_string(),
                               "oldAt": c.old_at.map(time), "newAt": c.new_at.map(time), "shiftSecs": c.shift_secs()})
                    })
                    .collect();
                items.push(entry("changed", None, changes));
            }
            Err(e) => items.push(entry("rulesUnavailable", Some(e.to_string()), Vec::new())),
        }
    }
    let v = json!({"compiledTzdbVersion": compiled.version(), "fires": fires, "examined": jobs.len(),
                   "items": items, "nextCursor": next_cursor});
    Ok(serde_json::from_value(v)?)
}

/// The report as text: a summary line, then one row per changed fire (and one per job whose
/// recorded release the API cannot read).
pub(crate) fn render(r: &TzReport) -> String {
    let mut out = format!(
        "compiled tz database {}; next {} fires compared per job; {} jobs examined, {} listed\n",
        r.compiled_tzdb_version,
        r.fires,
        r.examined,
        r.items.len()
    );
    let time = |t: &Option<chrono::DateTime<chrono::Utc>>| match t {
        Some(t) => t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        None => "-".into(),
    };
    let mut rows = Vec::new();
    for j in &r.items {
        if j.changes.is_empty() {
            let why = j.reason.clone().unwrap_or_else(|| j.status.as_str().to_string());
            rows.push(vec![
                j.job_id.clone(),
                j.timezone.clone(),
                j.recorded_tzdb_version.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                format!("unknown: {why}"),
            ]);
        }
        for f in &j.changes {
            let shift = match (f.shift_secs, f.old_at, f.new_at) {
                (Some(s), _, _) => format!("{s:+}s"),
                (None, None, _) => "added".into(),
                _ => "removed".into(),
            };
            rows.push(vec![
                j.job_id.clone(),
                j.timezone.clone(),
                j.recorded_tzdb_version.clone(),
                f.local_time.clone(),
                time(&f.old_at),
                time(&f.new_at),
                shift,
            ]);
        }
    }
    if !rows.is_empty() {
        out.push_str(&table(
            &["JOB", "ZONE", "RECORDED", "LOCAL TIME", "OLD (UTC)", "NEW (UTC)", "CHANGE"],
            &rows,
        ));
        out.push('\n');
    }
    if let Some(c) = &r.next_cursor {
        out.push_str(&format!("(more: --cursor {c})\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compared_here_the_mexico_city_job_moves_and_the_others_do_not() {
        // GIVEN jobs as the deployed API lists them, recorded under 2022a on 2023-03-30
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schedule/tests/fixtures/tzdb-2022a");
        let old = Tzdb::from_zoneinfo("2022a", &dir).unwrap();
        let job = |id: &str, zone: &str, next: &str, state: &str, tzdb: &str| -> Job {
            serde_json::from_value(json!({
                "jobId": id, "version": 1, "etag": "\"1\"", "state": state,
                "definition": {"schedule": {"expression": "0 9 * * *", "timezone": zone},
                               "target": {"type": "http", "url": "https://x.example.com"}},
                "nextFireAt": next, "createdAt": "2023-03-30T12:00:00.000Z",
                "updatedAt": "2023-03-30T12:00:00.000Z", "tzdbVersion": tzdb,
            }))
            .unwrap()
        };
        let jobs = vec![
            job("a-london", "Europe/London", "2023-03-31T08:00:00.000Z", "ENABLED", "2022a"),
            job("b-mexico", "America/Mexico_City", "2023-03-30T15:00:00.000Z", "ENABLED", "2022a"),
            job("c-paused", "America/Mexico_City", "2023-03-30T15:00:00.000Z", "PAUSED", "2022a"),
            job("d-older", "America/Mexico_City", "2023-03-30T15:00:00.000Z", "ENABLED", "2021a"),
        ];
        // WHEN this build compares them with its compiled release, 5 fires each
        let r = local_report(&jobs, None, 5, &old, &Tzdb::compiled()).unwrap();
        // THEN Mexico City's 04-02 and 04-03 fires move one hour later, and the job recorded
        // under another release is said to be unknown
        assert_eq!((r.examined, r.items.len()), (4, 2));
        assert_eq!(r.items[0].job_id, "b-mexico");
        let moved: Vec<_> =
            r.items[0].changes.iter().map(|c| (c.local_time.as_str(), c.shift_secs)).collect();
        assert_eq!(moved, vec![("2023-04-02T09:00:00", Some(3600)), ("2023-04-03T09:00:00", Some(3600))]);
        assert_eq!(
            (r.items[1].job_id.as_str(), r.items[1].status.as_str(), r.items[1].reason.as_deref()),
            ("d-older", "rulesUnavailable", Some("recorded under 2021a, not the --release 2022a"))
        );
    }

    #[test]
    fn the_report_reads_as_one_row_per_changed_fire() {
        let r: TzReport = serde_json::from_value(serde_json::json!({
            "compiledTzdbVersion": "2025b", "fires": 5, "examined": 3, "nextCursor": null,
            "items": [
                {"jobId": "b-mexico", "timezone": "America/Mexico_City", "recordedTzdbVersion": "2022a",
                 "status": "changed", "reason": null, "changes": [
                    {"localTime": "2023-04-02T09:00:00", "oldAt": "2023-04-02T14:00:00.000Z",
                     "newAt": "2023-04-02T15:00:00.000Z", "shiftSecs": 3600},
                    {"localTime": "2023-10-29T01:30:00", "oldAt": "2023-10-29T06:30:00.000Z",
                     "newAt": null, "shiftSecs": null}]},
                {"jobId": "c-utc", "timezone": "UTC", "recordedTzdbVersion": "2019c", "status": "rulesUnavailable",
                 "reason": "this deployment has no rules of tz database 2019c", "changes": []}]
        }))
        .unwrap();
        let text = render(&r);
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert_eq!(
            lines[0],
            "compiled tz database 2025b; next 5 fires compared per job; 3 jobs examined, 2 listed"
        );
        assert!(lines[2].starts_with("b-mexico"), "{text}");
        assert!(lines[2].contains("2023-04-02T09:00:00") && lines[2].ends_with("+3600s"), "{text}");
        assert!(lines[2].contains("2023-04-02T14:00:00Z") && lines[2].contains("2023-04-02T15:00:00Z"));
        assert!(lines[3].ends_with("removed"), "{text}");
        assert!(
            lines[4].starts_with("c-utc")
                && lines[4].ends_with("unknown: this deployment has no rules of tz database 2019c")
        );
    }
}
