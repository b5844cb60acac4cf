//! The tzdb upgrade report through the API: jobs created by an API that computes under an
//! older release (2022a, a TZif fixture where Mexico City still has DST), then the report of
//! an API on the compiled release, which reads 2022a's rules, fire by fire.

use crate::common::*;
use serde_json::{json, Value};
use sundial_api::Api;
use sundial_core::control::{Control, ControlSettings};
use sundial_core::Ctx;
use sundial_schedule::tzdb::Tzdb;
use sundial_store::queue::PoolQueues;

fn release_2022a() -> Tzdb {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schedule/tests/fixtures/tzdb-2022a");
    Tzdb::from_zoneinfo("2022a", &dir).expect("the 2022a fixture")
}

fn body(job_id: &str, expr: &str, zone: &str) -> Value {
    json!({
        "jobId": job_id,
        "schedule": {"expression": expr, "timezone": zone},
        "target": {"type": "http", "url": "https://hooks.example.com/run"},
    })
}

/// The harness's API replaced by one over the same tables with `settings`.
fn switch(h: &mut Harness, settings: ControlSettings) {
    let ctx = Ctx {
        ddb: h.env.clients.ddb.clone(),
        cfg: h.env.cfg.clone(),
        queues: PoolQueues::new(h.env.clients.sqs.clone(), h.env.cfg.clone()),
    };
    h.api = Api::new(Control::new(ctx, settings), h.clock.clone(), crate::common::unthrottled());
}

#[tokio::test]
async fn the_report_lists_the_fires_that_move_when_mexico_city_drops_dst() {
    // GIVEN three jobs created on 2023-03-30 by an API computing under tz database 2022a
    let old = release_2022a();
    let settings = ControlSettings { tzdb: old.clone(), ..ControlSettings::default() };
    let mut h = Harness::with_settings("tzreport", &["default"], at("2023-03-30T12:00:00Z"), settings).await;
    for (id, zone) in [("a-london", "Europe/London"), ("b-mexico", "America/Mexico_City"), ("c-utc", "UTC")] {
        let a = h.post("acme", "/v1/jobs", &body(id, "0 9 * * *", zone)).await;
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!(a.body["job"]["tzdbVersion"], "2022a");
    }
    // (a zone 2022a did not have is refused by that API, naming the release)
    let a = h.post("acme", "/v1/jobs", &body("kyiv", "0 9 * * *", "Europe/Kyiv")).await;
    assert_eq!((a.status, a.error_field()), (400, Some("schedule.timezone")));
    assert_eq!(a.body["error"]["message"], "'Europe/Kyiv' is not a zone of tz database 2022a");

    // WHEN the API on the compiled release, which can read 2022a, reports 5 fires per job
    let compiled = sundial_schedule::tzdb_version();
    switch(&mut h, ControlSettings { tzdb_releases: vec![old.clone()], ..ControlSettings::default() });
    let a = h.get("acme", "/v1/tz-report?fires=5").await;
    assert_eq!(a.status, 200, "{}", a.body);
    // THEN only the Mexico City job is listed: 03-30..04-01 stay at 15:00Z, and 04-02 and 04-03
    // move from 14:00Z (2022a's CDT) to 15:00Z (CST), one hour later
    let change = |d: &str| {
        json!({"localTime": format!("2023-04-{d}T09:00:00"), "oldAt": format!("2023-04-{d}T14:00:00.000Z"),
               "newAt": format!("2023-04-{d}T15:00:00.000Z"), "shiftSecs": 3600})
    };
    assert_eq!(
        a.body,
        json!({
            "compiledTzdbVersion": compiled, "fires": 5, "examined": 3, "nextCursor": null,
            "items": [{"jobId": "b-mexico", "timezone": "America/Mexico_City", "recordedTzdbVersion": "2022a",
                       "status": "changed", "reason": null, "changes": [change("02"), change("03")]}],
        })
    );
    // AND the report pages like the job list: one job per page, the changed one on page 2
    // (DynamoDB gives a full last page a cursor, and the page after it examines nothing;
    // moto gives it none: both end the report)
    let mut cursor: Option<String> = None;
    let mut pages = Vec::new();
    for _ in 0..5 {
        let q = cursor.as_ref().map(|c| format!("&cursor={c}")).unwrap_or_default();
        let a = h.get("acme", &format!("/v1/tz-report?fires=5&limit=1{q}")).await;
        assert_eq!(a.status, 200, "{}", a.body);
        let listed = a.body["items"].as_array().map(|v| v.len()).unwrap_or(99);
        pages.push((a.body["examined"].as_u64().unwrap_or(99), listed));
        cursor = a.body["nextCursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    if pages.last() == Some(&(0, 0)) {
        pages.pop();
    }
    assert_eq!(pages, vec![(1, 0), (1, 1), (1, 0)]);
    // AND another tenant sees none of it
    let a = h.get("other", "/v1/tz-report").await;
    assert_eq!((a.status, a.body["examined"].as_u64(), a.body["fires"].as_u64()), (200, Some(0), Some(50)));

    // WHEN the Mexico City job is edited by the compiled API, its position is recomputed and
    // recorded under the compiled release, and it leaves the report
    let j = h.get("acme", "/v1/jobs/b-mexico").await;
    assert_eq!(j.body["tzdbVersion"], "2022a");
    let etag = j.header("etag").unwrap_or_default().to_string();
    let edit = json!({"schedule": {"expression": "0 9 * * *", "timezone": "America/Mexico_City"},
                      "target": {"type": "http", "url": "https://hooks.example.com/run"}});
    let a = h
        .call(
            "acme",
            "PUT",
            "/v1/jobs/b-mexico",
            Some(&edit.to_string()),
            &[("content-type", "application/json"), ("if-match", &etag)],
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["job"]["tzdbVersion"], compiled);
    let a = h.get("acme", "/v1/tz-report?fires=5").await;
    assert_eq!(a.body["items"], json!([]));

    // AND an API that cannot read 2022a says so for each job still recorded under it
    switch(&mut h, ControlSettings::default());
    let a = h.get("acme", "/v1/tz-report?fires=5").await;
    let unavailable: Vec<(&str, &str)> = a.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|j| (j["jobId"].as_str().unwrap_or_default(), j["status"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(unavailable, vec![("a-london", "rulesUnavailable"), ("c-utc", "rulesUnavailable")]);
    assert_eq!(a.body["items"][0]["reason"], "this deployment has no rules of tz database 2022a");
}

#[tokio::test]
async fn a_bad_fires_count_is_refused_naming_the_parameter() {
    let h = Harness::new("tzreport-bad", at("2026-12-01T10:00:00Z")).await;
    for q in ["fires=0", "fires=1001", "fires=x", "fires=", "limit=0", "cursor=zz"] {
        let a = h.get("acme", &format!("/v1/tz-report?{q}")).await;
        let field = q.split('=').next().unwrap_or_default();
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{q}: {}", a.body);
    }
    let a = h.get("acme", "/v1/tz-report?fires=1").await;
    assert_eq!(a.status, 200, "{}", a.body);
}
