//! Issue 19: a job's view shows its real next fire. Every-minute jobs (and daily ones) keep
//! their trigger position in the shard watermark, not in the job item (README "Every-minute
//! class"), so the stored `next` stays where the job entered its class: `GET /v1/jobs` and
//! `sundial jobs list` showed a fire long past.

use crate::common::{at, Harness};
use chrono::Duration;
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanOptions};
use tokio::sync::Mutex;

#[tokio::test]
async fn an_every_minute_job_shows_its_real_next_fire() {
    // GIVEN an every-minute job created at 10:00:30
    let h = Harness::new("next-fire", at("2026-12-01T10:00:30Z")).await;
    h.create("t1", "each-minute", "0 * * * * *").await;
    let ctx = &h.api.control().ctx;
    // WHEN the tick runs every minute for five minutes (the job moves into its class once)
    for m in 0..5 {
        let now = at("2026-12-01T10:00:30Z") + Duration::minutes(m);
        let budget = Mutex::new(CatchUpBudget::new(1000, 1000));
        scan_shards(ctx, 0..h.env.cfg.shards, now, &budget, &ScanOptions::default()).await.expect("scan");
    }
    h.clock.set(at("2026-12-01T10:04:40Z"));
    // THEN the job, alone and in the list, says it fires next at 10:05:00, not at 10:01:00
    let one = h.get("t1", "/v1/jobs/each-minute").await;
    assert_eq!(one.body["nextFireAt"], "2026-12-01T10:05:00.000Z", "{}", one.body);
    let list = h.get("t1", "/v1/jobs").await;
    assert_eq!(list.body["items"][0]["nextFireAt"], "2026-12-01T10:05:00.000Z", "{}", list.body);
}

#[tokio::test]
async fn upcoming_fires_mark_the_spring_forward_gap_and_apply_the_policy() {
    // GIVEN a 02:30 New York job starting 2027-03-10 (clocks skip 02:00-02:59 on 2027-03-14)
    let h = Harness::new("upcoming", at("2026-12-01T10:00:00Z")).await;
    let mut body = crate::common::job_body("ny", "0 30 2 * * *");
    body["schedule"]["timezone"] = "America/New_York".into();
    body["schedule"]["start"] = "2027-03-10T00:00:00Z".into();
    let a = h.post("t1", "/v1/jobs", &body).await;
    assert_eq!(a.status, 201, "{}", a.body);
    // WHEN its upcoming fires are read (the window starts at the schedule's start)
    let u = h.get("t1", "/v1/jobs/ny/upcoming?days=7").await;
    assert_eq!(u.status, 200, "{}", u.body);
    // THEN the gap is listed with the shifted fire, which is one of the fires
    let t = &u.body["transitions"][0];
    assert_eq!(t["kind"], "gap", "{}", u.body);
    assert_eq!(
        t["affected"][0]["note"],
        "02:30 does not exist on 2027-03-14; shifted to 03:00 (onGap shift)"
    );
    assert_eq!(t["affected"][0]["at"], "2027-03-14T07:00:00.000Z");
    let fires = u.body["fires"].as_array().expect("fires");
    assert!(fires.contains(&"2027-03-14T07:00:00.000Z".into()), "{fires:?}");
    assert_eq!(fires.len(), 7);
    // AND another tenant cannot read it, and a bad window names its parameter
    assert_eq!(h.get("t2", "/v1/jobs/ny/upcoming").await.status, 404);
    assert_eq!(h.get("t1", "/v1/jobs/ny/upcoming?days=0").await.error_field(), Some("days"));
    assert_eq!(h.get("t1", "/v1/jobs/ny/upcoming?from=soon").await.error_field(), Some("from"));
}
