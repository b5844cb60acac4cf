//! The example is a Sundial job: `job.json` must be a valid definition whose fires are 02:00 in
//! Asia/Shanghai, and the day each fire settles must come from its scheduled instant.

use chrono::{NaiveDate, TimeZone, Utc};
use settlement_example::settle::settle_date_for;
use sundial_model::JobDefinition;
use sundial_schedule::Schedule;

#[test]
fn job_json_fires_daily_at_two_in_shanghai_and_settles_the_previous_day() {
    // GIVEN the example's job definition
    let def: JobDefinition =
        serde_json::from_slice(include_bytes!("../job.json")).expect("job.json is a JobDefinition");
    let anchor = Utc.with_ymd_and_hms(2026, 11, 29, 0, 0, 0).unwrap();
    let schedule = Schedule::parse(&def.schedule, anchor).expect("valid schedule");

    // WHEN its next three fires are computed
    let fires = schedule.preview(anchor, 3);

    // THEN they are 02:00 Shanghai (18:00 UTC the day before), one a day
    let expect: Vec<_> = [(29, 18), (30, 18)]
        .iter()
        .map(|(d, h)| Utc.with_ymd_and_hms(2026, 11, *d, *h, 0, 0).unwrap())
        .chain([Utc.with_ymd_and_hms(2026, 12, 1, 18, 0, 0).unwrap()])
        .collect();
    assert_eq!(fires, expect);
    // AND each settles the business day that ended before it, in Shanghai
    let days: Vec<_> = fires.iter().map(|f| settle_date_for(*f)).collect();
    assert_eq!(
        days,
        [
            NaiveDate::from_ymd_opt(2026, 11, 29),
            NaiveDate::from_ymd_opt(2026, 11, 30),
            NaiveDate::from_ymd_opt(2026, 12, 1)
        ]
        .map(Option::unwrap)
    );
}

#[test]
fn the_settled_day_is_the_shanghai_day_before_the_scheduled_one() {
    // GIVEN instants either side of midnight in Shanghai (16:00 UTC)
    let midnight = Utc.with_ymd_and_hms(2026, 11, 30, 16, 0, 0).unwrap();
    // THEN a fire on local 2026-12-01 (even at 00:00) settles 2026-11-30, and one a second
    // earlier, still local 2026-11-30, settles 2026-11-29: the UTC date plays no part
    assert_eq!(settle_date_for(midnight), NaiveDate::from_ymd_opt(2026, 11, 30).unwrap());
    assert_eq!(
        settle_date_for(midnight - chrono::Duration::seconds(1)),
        NaiveDate::from_ymd_opt(2026, 11, 29).unwrap()
    );
}
