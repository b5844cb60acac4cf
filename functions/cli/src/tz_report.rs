//! `sundial tz-report`: which jobs fire at other instants under the API's compiled tz database
//! release than under the release their position was computed with (`GET /v1/tz-report`;
//! docs/schedule.md, "tz database upgrades").

use crate::api_cmds::table;
use crate::client::{ApiArgs, Output};
use sundial_client::{TzReport, TzReportRequest};

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
    if api.output == Output::Json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(args.fail_on_change && !report.items.is_empty())
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
            let why = j.reason.clone().unwrap_or_else(|| j.status.clone());
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
