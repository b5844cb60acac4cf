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
