//! Business calendars through the API: create, a job using one, an edit that re-plans only
//! later fires, the audit trail, delete refused while in use, tenant isolation, preview with
//! reasons, validation naming the entry.

use crate::common::{at, Harness};
use serde_json::{json, Value};

async fn put(
    h: &Harness,
    tenant: &str,
    id: &str,
    body: &Value,
    if_match: Option<&str>,
) -> crate::common::Answer {
    let mut headers = vec![("content-type", "application/json")];
    if let Some(m) = if_match {
        headers.push(("if-match", m));
    }
    h.call(tenant, "PUT", &format!("/v1/calendars/{id}"), Some(&body.to_string()), &headers).await
}

fn job(id: &str, roll: &str) -> Value {
    json!({
        "jobId": id,
        "schedule": {
            "expression": "0 0 9 * * *",
            "timezone": "Asia/Shanghai",
            "businessCalendar": {"calendar": "cn-holidays", "roll": roll},
        },
        "target": {"type": "http", "url": "https://hooks.example.com/run"},
    })
}

#[tokio::test]
async fn a_calendar_edit_replans_only_later_fires_and_is_audited() {
    // GIVEN 2026-09-28 (Monday, 10:00 Shanghai) and cn-holidays v1 with National Day 10-01/02
    let h = Harness::new("cal-edit", at("2026-09-28T02:00:00Z")).await;
    let a = put(&h, "acme", "cn-holidays", &json!({"holidays": ["2026-10-01", "2026-10-02"]}), None).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.header("etag"), Some("\"1\""));
    // AND a daily 09:00 job rolling 'following' onto it
    let a = h.post("acme", "/v1/jobs", &job("settle", "following")).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.body["job"]["calendarVersions"], json!([{"calendar": "cn-holidays", "version": 1}]));
    let fires: Vec<&str> = a.body["nextFires"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    // 09-29, 09-30, then 10-01/02 roll to Monday 10-05 (after the weekend), 10-06, 10-07
    assert_eq!(
        fires,
        [
            "2026-09-29T01:00:00.000Z",
            "2026-09-30T01:00:00.000Z",
            "2026-10-05T01:00:00.000Z",
            "2026-10-06T01:00:00.000Z",
            "2026-10-07T01:00:00.000Z"
        ]
    );

    // WHEN, a day later, the calendar is edited without If-Match
    h.clock.set(at("2026-09-29T02:00:00Z"));
    let edit = json!({"holidays": ["2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-07"], "workingDays": ["2026-10-10"]});
    let a = put(&h, "acme", "cn-holidays", &edit, None).await;
    // THEN it is refused: editing needs the ETag
    assert_eq!((a.status, a.error_field()), (409, Some("If-Match")), "{}", a.body);
    // WHEN with a stale one
    let a = put(&h, "acme", "cn-holidays", &edit, Some("\"7\"")).await;
    assert_eq!(a.status, 412, "{}", a.body);
    // WHEN with the current one
    let a = put(&h, "acme", "cn-holidays", &edit, Some("\"1\"")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["calendar"]["version"], 2);
    assert_eq!(a.body["replannedJobs"], json!(["settle"]));
    // THEN the job records v2, and its next fires after the edit follow it: the week off rolls
    // to 10-08, and the make-up Saturday 10-10 fires
    let j = h.get("acme", "/v1/jobs/settle").await;
    assert_eq!(j.body["calendarVersions"], json!([{"calendar": "cn-holidays", "version": 2}]));
    assert_eq!(j.body["nextFireAt"], "2026-09-30T01:00:00.000Z");
    let p = h
        .post(
            "acme",
            "/v1/preview",
            &json!({"schedule": job("x", "following")["schedule"], "after": "2026-09-30T02:00:00Z", "count": 3}),
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.body);
    assert_eq!(
        p.body["fires"],
        json!(["2026-10-08T01:00:00.000Z", "2026-10-09T01:00:00.000Z", "2026-10-10T01:00:00.000Z"])
    );
    assert_eq!(p.body["skipped"].as_array().map(Vec::len), Some(7), "{}", p.body);
    assert!(p.body["skipped"][0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("holiday 2026-10-01 in cn-holidays v2; following"));
    // AND both versions stay readable
    let v1 = h.get("acme", "/v1/calendars/cn-holidays/versions/1").await;
    assert_eq!(v1.body["definition"]["holidays"], json!(["2026-10-01", "2026-10-02"]));
    // AND the operations log has the calendar edit and the job's re-plan
    let ops = h.get("acme", "/v1/operations").await;
    let actions: Vec<(String, String, Option<String>)> = ops.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or_default().to_string(),
                e["jobId"].as_str().unwrap_or_default().to_string(),
                e["detail"].as_str().map(str::to_string),
            )
        })
        .collect();
    assert!(actions.contains(&("calendar_update".into(), "cn-holidays".into(), None)), "{actions:?}");
    assert!(actions.contains(&("calendar_create".into(), "cn-holidays".into(), None)), "{actions:?}");
    assert!(
        actions.contains(&("update".into(), "settle".into(), Some("calendar cn-holidays v2".into()))),
        "{actions:?}"
    );

    // WHEN the calendar is deleted while the job uses it
    let d = h.call("acme", "DELETE", "/v1/calendars/cn-holidays", None, &[]).await;
    // THEN 409 names the job
    assert_eq!((d.status, d.body["error"]["code"].as_str()), (409, Some("calendar_in_use")), "{}", d.body);
    assert!(d.body["error"]["message"].as_str().unwrap().contains("settle"));
    // AND after the job is deleted, so is the calendar
    let a = h.call("acme", "DELETE", "/v1/jobs/settle", None, &[]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let d = h.call("acme", "DELETE", "/v1/calendars/cn-holidays", None, &[]).await;
    assert_eq!(d.status, 200, "{}", d.body);
    assert_eq!(h.get("acme", "/v1/calendars/cn-holidays").await.status, 404);
    assert_eq!(h.get("acme", "/v1/calendars").await.body["items"], json!([]));
    // AND its versions are gone with it, and its id is not reused
    assert_eq!(h.get("acme", "/v1/calendars/cn-holidays/versions/1").await.status, 404);
    let again = put(&h, "acme", "cn-holidays", &json!({"holidays": ["2026-10-01"]}), None).await;
    assert_eq!(
        (again.status, again.body["error"]["code"].as_str()),
        (409, Some("calendar_deleted")),
        "{}",
        again.body
    );
}

#[tokio::test]
async fn another_tenant_cannot_see_or_use_a_calendar() {
    let h = Harness::new("cal-tenancy", at("2026-09-28T02:00:00Z")).await;
    assert_eq!(put(&h, "acme", "cn-holidays", &json!({"holidays": ["2026-10-01"]}), None).await.status, 201);
    // WHEN globex reads it or names it in a job
    assert_eq!(h.get("globex", "/v1/calendars/cn-holidays").await.status, 404);
    assert_eq!(h.get("globex", "/v1/calendars/cn-holidays/versions/1").await.status, 404);
    assert_eq!(h.get("globex", "/v1/calendars").await.body["items"], json!([]));
    let a = h.post("globex", "/v1/jobs", &job("j", "skip")).await;
    // THEN not found for it: a 400 on the reference, nothing stored
    assert_eq!((a.status, a.error_field()), (400, Some("schedule.businessCalendar.calendar")), "{}", a.body);
    assert_eq!(h.get("globex", "/v1/jobs/j").await.status, 404);
}

#[tokio::test]
async fn bad_calendars_are_refused_naming_the_field() {
    let h = Harness::new("cal-bad", at("2026-09-28T02:00:00Z")).await;
    for (body, field) in [
        (json!({"holidays": ["2026-10-01", "2026-02-30"]}), "holidays[1]"),
        (json!({"holidays": ["2026-10-01", "2026-10-01"]}), "holidays[1]"),
        (json!({"holidays": ["2101-01-01"]}), "holidays[0]"),
        (json!({"restDays": ["sat", "caturday"]}), "restDays[1]"),
        (json!({"holidays": ["2026-10-10"], "workingDays": ["2026-10-10"]}), "workingDays[0]"),
        (json!({"parent": "nope"}), "parent"),
        (json!({"holiday": []}), "holiday"),
    ] {
        let a = put(&h, "acme", "c", &body, None).await;
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{body}: {}", a.body);
    }
    assert_eq!(h.get("acme", "/v1/calendars/c").await.status, 404, "nothing stored");
    // A parent chain: b extends a; a cannot then extend b (cycle), nor itself.
    assert_eq!(put(&h, "acme", "a", &json!({}), None).await.status, 201);
    assert_eq!(put(&h, "acme", "b", &json!({"parent": "a"}), None).await.status, 201);
    let a = put(&h, "acme", "a", &json!({"parent": "b"}), Some("\"1\"")).await;
    assert_eq!((a.status, a.error_field()), (400, Some("parent")), "{}", a.body);
    let a = put(&h, "acme", "a", &json!({"parent": "a"}), Some("\"1\"")).await;
    assert_eq!((a.status, a.error_field()), (400, Some("parent")), "{}", a.body);
    // And a parent in use by a child cannot be deleted.
    let d = h.call("acme", "DELETE", "/v1/calendars/a", None, &[]).await;
    assert_eq!(d.status, 409, "{}", d.body);
    // A job naming rate() with a roll other than skip is a 400 on the reference.
    let mut j = job("r", "following");
    j["schedule"]["expression"] = json!("rate(1 hour)");
    j["schedule"]["businessCalendar"]["calendar"] = json!("a");
    let a = h.post("acme", "/v1/jobs", &j).await;
    assert_eq!((a.status, a.error_field()), (400, Some("schedule.businessCalendar")), "{}", a.body);
}
