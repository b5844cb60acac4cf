//! Costs read from the bench binary's documents, and how the model uses them.

use super::*;

const BENCH_EVERY_MINUTE: &str = r#"{"jobs": 10000, "perExecution": {
        "tick": {"writeUnits": 1.0016, "indexWriteUnits": 0.0, "readUnits": 0.3,
                 "writesByKind": {"execution": 1.0, "watermark": 0.0016, "index:open": 0.0, "job": 0.0,
                                  "index:due": 0.0, "other": 0.0},
                 "readsByKind": {"index:due": 0.12, "execution": 0.5, "query": 0.01},
                 "sqsRequests": 0.1, "lambdaInvokes": 0.0, "requests": {"dynamodb:PutItem": 10000}},
        "worker": {"writeUnits": 2.0, "indexWriteUnits": 0.0, "readUnits": 1.5,
                   "writesByKind": {"execution": 2.0, "slot": 0.0, "tenantGate": 0.0},
                   "readsByKind": {"execution": 1.0, "job": 0.5},
                   "sqsRequests": 0.2, "lambdaInvokes": 0.0, "requests": {}}}}"#;

/// Keys present only when nonzero: an empty tick phase is valid.
const BENCH_DAILY: &str = r#"{"jobs": 10000, "perExecution": {"tick": {},
        "worker": {"writesByKind": {"execution": 3.0}, "readsByKind": {"execution": 1.5}}}}"#;

const BENCH_BUCKET: &str = r#"{"jobs": 10000, "perExecution": {
        "tick": {"writesByKind": {"execution": 1.0, "index:open": 1.0, "job": 1.0, "index:due": 2.0,
                                  "watermark": 0.5, "other": 0.25, "index:attention": 0.5},
                 "readsByKind": {"index:due": 0.25, "query": 0.125, "index:by_tenant": 0.125},
                 "sqsRequests": 0.1},
        "worker": {"writesByKind": {"execution": 2.0, "index:open": 1.0, "slot": 2.0, "tenantGate": 2.0,
                                    "index:by_tenant": 1.0},
                   "readsByKind": {"execution": 1.0, "job": 0.5, "slot": 0.5, "tenantGate": 0.5},
                   "sqsRequests": 0.2, "lambdaInvokes": 0.1}}}"#;

fn bench_costs() -> Costs {
    Costs::from_bench(BENCH_EVERY_MINUTE, BENCH_DAILY, BENCH_BUCKET).expect("bench costs")
}

#[test]
fn from_bench_adds_the_verification_pass_when_measured() {
    let with_verify = r#"{"perExecution": {"tick": {}, "worker": {"readsByKind": {"execution": 1.0}},
            "verify": {"readsByKind": {"execution": 0.5, "index:due": 0.01}}}}"#;
    let c = Costs::from_bench(with_verify, BENCH_DAILY, BENCH_BUCKET).unwrap_or_else(|e| panic!("{e}"));
    close(c.every_minute.read(ItemKind::Execution), 1.5);
    close(c.every_minute.read(ItemKind::DueIndex), 0.01);
}

#[test]
fn from_bench_maps_kinds_and_sums_tick_and_worker() {
    let c = bench_costs();
    let em = &c.every_minute;
    close(em.write(ItemKind::Execution), 3.0); // tick 1 + worker 2
    close(em.write(ItemKind::Watermark), 0.0016); // kept, but ignored by the model
    assert_eq!(em.writes.len(), 2, "zero kinds are left out: {:?}", em.writes);
    close(em.read(ItemKind::Execution), 1.5);
    close(em.read(ItemKind::Job), 0.5);
    close(em.read(ItemKind::DueIndex), 0.12);
    close(em.read(ItemKind::Other), 0.01); // query
    close(em.sqs_requests, 0.3);
    close(em.lambda_invokes, 0.0);

    let daily = &c.daily;
    close(daily.write(ItemKind::Execution), 3.0);
    close(daily.read(ItemKind::Execution), 1.5);
    close(daily.sqs_requests, 0.0);

    let b = &c.bucket;
    close(b.write(ItemKind::Execution), 3.0);
    close(b.write(ItemKind::OpenIndex), 2.0);
    close(b.write(ItemKind::Job), 1.0);
    close(b.write(ItemKind::DueIndex), 2.0);
    close(b.write(ItemKind::Watermark), 0.5);
    close(b.write(ItemKind::Slot), 2.0);
    close(b.write(ItemKind::TenantGate), 2.0);
    close(b.write(ItemKind::Other), 0.25 + 0.5 + 1.0); // other + index:attention + index:by_tenant
    close(b.read(ItemKind::DueIndex), 0.25);
    close(b.read(ItemKind::Other), 0.25); // query + index:by_tenant
    close(b.read(ItemKind::Slot), 0.5);
    close(b.read(ItemKind::TenantGate), 0.5);
    close(b.sqs_requests, 0.3);
    close(b.lambda_invokes, 0.1); // measured, informational only
    assert_eq!(Costs::from_json(&serde_json::to_string(&c).expect("json")), Ok(c));

    for (bench, kind) in [
        ("execution", ItemKind::Execution),
        ("index:open", ItemKind::OpenIndex),
        ("job", ItemKind::Job),
        ("index:due", ItemKind::DueIndex),
        ("watermark", ItemKind::Watermark),
        ("slot", ItemKind::Slot),
        ("tenantGate", ItemKind::TenantGate),
        ("other", ItemKind::Other),
        ("query", ItemKind::Other),
        ("index:attention", ItemKind::Other),
        ("index:by_tenant", ItemKind::Other),
    ] {
        assert_eq!(ItemKind::from_bench_key(bench), kind, "{bench}");
    }
}

#[test]
fn from_bench_rejects_malformed_documents() {
    let missing = Costs::from_bench(BENCH_EVERY_MINUTE, r#"{"jobs": 1}"#, BENCH_BUCKET);
    assert!(missing.is_err_and(|e| e.starts_with("daily bench JSON")));
    let no_worker = r#"{"perExecution": {"tick": {}}}"#;
    assert!(Costs::from_bench(no_worker, BENCH_DAILY, BENCH_BUCKET).is_err_and(|e| e.contains("worker")));
    let negative = BENCH_BUCKET.replace("\"job\": 0.5", "\"job\": -0.5");
    assert_ne!(negative, BENCH_BUCKET);
    let err = Costs::from_bench(BENCH_EVERY_MINUTE, BENCH_DAILY, &negative).expect_err("negative");
    assert!(err.contains("bucket.perExecution.worker.readsByKind.job"), "{err}");
    assert!(Costs::from_bench(BENCH_EVERY_MINUTE, BENCH_DAILY, "[").is_err());
}

#[test]
fn bench_costs_drive_the_model_without_watermark_or_measured_invocations() {
    let c = bench_costs();
    // (a tenant limit of 100, below the stack's worker capacity of 400: the gate is paid)
    let s = Scenario { tenant_max_running: 100, ..Scenario::eventbridge_default() };
    let r = model(&s, &c, &Limits::aws_default(), &Prices::us_east_1());
    // Jobs table writes: bucket 0.2 × (job 1 + due 2 + other 1.75); the measured watermark
    // units (0.0016 and 0.5) are not counted, only shards / 60.
    close(r.per_fire.jobs_table_writes, 0.2 * 4.75);
    close(r.jobs_table.peak_wcu, 1_000.0 * 0.2 * 4.75 + 4096.0 / 60.0);
    // Executions: 3 + 0.2 × open 2 + 0.2 × (slot 2 × 0.5 + gate 2).
    close(r.per_fire.executions_table_writes, 3.0 + 0.4 + 0.2 * 3.0);
    close(r.per_fire.sqs_requests, 0.1 * 0.3 + 0.2 * 0.3);
    // Workers come from the batch size only: the measured 0.1 of the bucket class is unused.
    close(r.per_fire.worker_invokes, 0.1);
    close(r.lambda.worker_invocations_per_sec, 100.0);
    let mut loud = c.clone();
    for class in [&mut loud.every_minute, &mut loud.daily, &mut loud.bucket] {
        class.lambda_invokes = 7.0;
    }
    assert_eq!(model(&s, &loud, &Limits::aws_default(), &Prices::us_east_1()), r);
    let batch5 =
        model(&Scenario { worker_batch_size: 5, ..s }, &c, &Limits::aws_default(), &Prices::us_east_1());
    close(batch5.per_fire.worker_invokes, 0.2);
    close(batch5.lambda.worker_invocations_per_sec, 200.0);
    // Monthly Lambda requests: fires / 5 workers + (1 tick + 64 scans) a minute.
    let requests = 300.0 * SECONDS_PER_MONTH / 5.0 + TICKS_PER_MONTH * 65.0;
    close(batch5.cost.lambda_requests, requests / 1e6 * 0.2);
}

#[test]
fn the_tick_phase_is_what_a_fire_spends_the_minute_before_it() {
    let c = bench_costs();
    // every-minute: the tick's put (1 WU) and its due-index and execution reads, ahead
    close(c.every_minute.write_ahead(ItemKind::Execution), 1.0);
    close(c.every_minute.read_ahead(ItemKind::DueIndex), 0.12);
    close(c.every_minute.read_ahead(ItemKind::Job), 0.0);
    // bucket: the put, the job advance and its index entries ahead; the worker's none
    let ahead = [
        (ItemKind::Execution, 1.0),
        (ItemKind::Job, 1.0),
        (ItemKind::DueIndex, 2.0),
        (ItemKind::OpenIndex, 1.0),
        (ItemKind::Slot, 0.0),
        (ItemKind::TenantGate, 0.0),
    ];
    for (kind, units) in ahead {
        close(c.bucket.write_ahead(kind), units);
    }
    // an empty tick phase spends nothing ahead
    assert!(c.daily.ahead_writes.is_empty() && c.daily.ahead_reads.is_empty());
    // and the costs JSON keeps the split
    let back = Costs::from_json(&serde_json::to_string(&c).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, c);
}

#[test]
fn more_units_ahead_than_in_all_is_refused_naming_the_key() {
    let mut c = bench_costs();
    c.bucket.ahead_writes.insert("job".into(), 5.0);
    let e = c.validate().expect_err("ahead above the total");
    assert!(e.contains("bucket.aheadWrites.job"), "{e}");
}
