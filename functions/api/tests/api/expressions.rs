//! A schedule of several expressions through the API: a wrong or duplicate further expression
//! is 400 naming `schedule.expressions[i]`; upcoming fires, the preview and the executions the
//! tick makes are the union, one fire per instant, each naming the expression that made it.

use crate::common::{at, job_body, Harness};
use serde_json::{json, Value};
use sundial_core::trigger::scan::ScanOptions;
use sundial_tests::trigger::scan;

/// Weekdays at 09:00, Saturdays at 12:00, and Mondays at 09:00 (which the first already makes).
fn body(extra: &[&str]) -> Value {
    let mut b = job_body("dual", "0 0 9 * * MON-FRI");
    b["schedule"]["expressions"] = json!(extra);
    b
}

fn fire_expressions(v: &Value) -> Vec<(i64, String)> {
    v["fireExpressions"]
        .as_array()
        .unwrap_or_else(|| panic!("fireExpressions in {v}"))
        .iter()
        .map(|f| {
            (f["expressionIndex"].as_i64().unwrap_or(-1), f["expression"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

#[tokio::test]
async fn several_expressions_fire_at_their_union_and_name_the_expression_of_each_fire() {
    // GIVEN Friday 2026-12-04 10:00
    let h = Harness::new("expressions", at("2026-12-04T10:00:00Z")).await;
    // WHEN the second further expression is not one, or spells the first again
    let bad = h.post("acme", "/v1/jobs", &body(&["0 0 12 * * SAT", "0 0 25 * * *"])).await;
    // THEN 400 names it by its index in the list
    assert_eq!((bad.status, bad.error_field()), (400, Some("schedule.expressions[1]")), "{}", bad.body);
    let dup = h.post("acme", "/v1/jobs", &body(&["0 0 12 * * SAT", "0 9 * * 1-5"])).await;
    assert_eq!((dup.status, dup.error_field()), (400, Some("schedule.expressions[1]")), "{}", dup.body);
    assert_eq!(h.get("acme", "/v1/jobs/dual").await.status, 404, "nothing was created");

    // WHEN the job is created with two further expressions
    let sat = "0 0 12 * * SAT";
    let created = h.post("acme", "/v1/jobs", &body(&[sat, "0 0 9 * * MON"])).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["job"]["definition"]["schedule"]["expressions"], json!([sat, "0 0 9 * * MON"]));
    // THEN its upcoming fires are the union, Monday 09:00 once, each naming its expression
    let u = h.get("acme", "/v1/jobs/dual/upcoming?days=7").await;
    assert_eq!(u.status, 200, "{}", u.body);
    assert_eq!(
        u.body["fires"],
        json!([
            "2026-12-05T12:00:00.000Z",
            "2026-12-07T09:00:00.000Z",
            "2026-12-08T09:00:00.000Z",
            "2026-12-09T09:00:00.000Z",
            "2026-12-10T09:00:00.000Z",
            "2026-12-11T09:00:00.000Z",
        ])
    );
    let weekdays = (0, "0 0 9 * * MON-FRI".to_string());
    assert_eq!(
        fire_expressions(&u.body),
        vec![
            (1, sat.to_string()),
            weekdays.clone(),
            weekdays.clone(),
            weekdays.clone(),
            weekdays.clone(),
            weekdays.clone()
        ]
    );
    // AND a draft's preview says the same
    let p = h
        .post(
            "acme",
            "/v1/preview",
            &json!({"schedule": body(&[sat])["schedule"], "after": "2026-12-04T10:00:00Z", "count": 2}),
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.body);
    assert_eq!(p.body["fires"], json!(["2026-12-05T12:00:00.000Z", "2026-12-07T09:00:00.000Z"]));
    assert_eq!(fire_expressions(&p.body), vec![(1, sat.to_string()), weekdays.clone()]);
    // AND a schedule of one expression says nothing of it
    let one =
        h.post("acme", "/v1/preview", &json!({"schedule": job_body("x", sat)["schedule"], "count": 1})).await;
    assert_eq!((one.status, one.body.get("fireExpressions")), (200, None), "{}", one.body);

    // WHEN a job fires daily at 12:00, Saturdays at 12:05 and Saturdays at 12:00 (the first
    // makes that one), and the tick runs at 12:00 and 12:05 on Saturday
    h.clock.set(at("2026-12-05T11:59:00Z"));
    let mut pair = job_body("pair", "0 0 12 * * *");
    pair["schedule"]["expressions"] = json!(["0 5 12 * * SAT", "0 0 12 * * SAT"]);
    let a = h.post("acme", "/v1/jobs", &pair).await;
    assert_eq!(a.status, 201, "{}", a.body);
    for t in ["2026-12-05T12:00:30Z", "2026-12-05T12:05:30Z"] {
        scan(&h.env, at(t), &ScanOptions::default()).await.expect("scan");
    }
    // THEN one execution per instant, each naming the expression that made it
    let list = h.get("acme", "/v1/jobs/pair/executions?order=asc").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let items = list.body["items"].as_array().unwrap_or_else(|| panic!("{}", list.body));
    let seen: Vec<(&Value, &Value, &Value)> =
        items.iter().map(|e| (&e["scheduledAt"], &e["expressionIndex"], &e["expression"])).collect();
    assert_eq!(
        seen,
        vec![
            (&json!("2026-12-05T12:00:00.000Z"), &json!(0), &json!("0 0 12 * * *")),
            (&json!("2026-12-05T12:05:00.000Z"), &json!(1), &json!("0 5 12 * * SAT")),
        ],
        "{}",
        list.body
    );
    let id = items[1]["executionId"].as_str().unwrap_or_default();
    let one = h.get("acme", &format!("/v1/executions/{id}")).await;
    assert_eq!(
        (&one.body["expression"], &one.body["expressionIndex"]),
        (&json!("0 5 12 * * SAT"), &json!(1)),
        "{}",
        one.body
    );
}
