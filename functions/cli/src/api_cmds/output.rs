//! Printing the API's answers: JSON for scripts, left-aligned tables and an execution's
//! timeline for people.

use serde::Serialize;
use serde_json::Value;

pub(crate) fn to_json(v: &impl Serialize) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(v)?)
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

pub(crate) fn exec_rows(items: &[Value]) -> Vec<Vec<String>> {
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

pub(crate) const EXEC_HEADERS: [&str; 8] =
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
    push_calendar_and_waits(e, &mut out);
    push_family(e, &mut out);
    out.push(String::new());
    out.push(timeline_table(e));
    out.join("\n")
}

/// An execution's timeline, one row per transition.
fn timeline_table(e: &Value) -> String {
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
    table(&["AT", "TRANSITION", "ATTEMPT", "TOKEN", "ACTOR", "CODE"], &rows)
}

/// The lines of what the business calendar did to the fire, and of the upstream runs it waits for.
fn push_calendar_and_waits(e: &Value, out: &mut Vec<String>) {
    // What the job's business calendar did to this fire (issue 34's roll marks, as text).
    let cal = &e["businessCalendar"];
    if let Some(from) = cal["rolledFrom"].as_str() {
        out.push(format!("rolled     from {from} ({})", s(&cal["reason"])));
    }
    if let Some(n) = cal["skippedBeforeCount"].as_u64().filter(|n| *n > 0) {
        out.push(format!(
            "removed    {n} instant(s) of the schedule since the previous fire, by the calendar"
        ));
    }
    if let Some(ups) = e["waitingFor"].as_array() {
        let since = e["waitingSince"].as_str().map(|t| format!(" since {t}")).unwrap_or_default();
        out.push(format!("waits for  {} upstream run(s){since}", ups.len()));
        for u in ups {
            let run = u["executionId"].as_str().unwrap_or("(no fire for the period)");
            let st = u["status"].as_str().unwrap_or("not put yet");
            let met = if u["met"] == Value::Bool(true) { "met" } else { "waiting" };
            out.push(format!("           {} {run}: {st} ({met})", s(&u["job"])));
        }
    }
}

/// The lines of the execution's parent, its children's tally and its children.
fn push_family(e: &Value, out: &mut Vec<String>) {
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
}

pub(crate) fn next_hint(v: &Value) {
    if let Some(c) = v["nextCursor"].as_str() {
        println!("(more: --cursor {c})");
    }
}

pub(crate) fn items(v: &Value) -> &[Value] {
    v["items"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_execution_names_what_the_business_calendar_did_to_it() {
        let e = json!({
            "executionId": "close@1", "status": "SUCCEEDED", "timeline": [],
            "businessCalendar": {"rolledFrom": "2026-11-30T12:00:00.000Z", "reason": "holiday 2026-11-30 in h v1; following",
                                 "skippedBefore": [], "skippedBeforeCount": 2},
        });
        let text = render_execution(&e);
        assert!(
            text.contains("rolled     from 2026-11-30T12:00:00.000Z (holiday 2026-11-30 in h v1; following)"),
            "{text}"
        );
        assert!(text.contains("removed    2 instant(s)"), "{text}");
        let plain = render_execution(&json!({"executionId": "x@1", "status": "READY", "timeline": []}));
        assert!(!plain.contains("rolled") && !plain.contains("removed"), "{plain}");
    }
}
