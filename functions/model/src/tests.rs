//! Unit tests of definitions, jobs and executions.

use crate::*;
use sundial_schedule::{MisfirePolicy, ScheduleSpec};

#[test]
fn definitions_are_camel_case_and_old_stored_spellings_still_read() {
    let def = JobDefinition::new(ScheduleSpec::new("* * * * *", "UTC"), Target::sqs("https://sqs.example/q"))
        .with_misfire(MisfirePolicy::FireAll { cap: 5 });
    let v = serde_json::to_value(&def).unwrap();
    assert_eq!(v["target"], serde_json::json!({"type": "sqs", "queueUrl": "https://sqs.example/q"}));
    assert_eq!(v["misfire"], serde_json::json!({"policy": "fireAll", "cap": 5}));
    let t: Target = serde_json::from_str(r#"{"type":"inProcess","handler":"h"}"#).unwrap();
    assert_eq!(t, Target::in_process("h"));
    // Stored before 0.2: snake_case names still read back.
    let old: Target = serde_json::from_str(r#"{"type":"in_process","handler":"h"}"#).unwrap();
    assert_eq!(old, t);
    let old: Target = serde_json::from_str(r#"{"type":"sqs","queue_url":"https://q"}"#).unwrap();
    assert_eq!(old, Target::sqs("https://q"));
    let old: MisfirePolicy = serde_json::from_str(r#"{"policy":"fire_all","cap":2}"#).unwrap();
    assert_eq!(old, MisfirePolicy::FireAll { cap: 2 });
    let back: MisfirePolicy = serde_json::from_value(v["misfire"].clone()).unwrap();
    assert_eq!(back, MisfirePolicy::FireAll { cap: 5 });
}

#[test]
fn the_builder_starts_from_the_same_defaults_as_a_minimal_json_body() {
    // GIVEN the smallest body the API accepts
    let from_json: JobDefinition = serde_json::from_value(serde_json::json!({
        "schedule": {"expression": "rate(5 minutes)", "timezone": "Europe/Berlin"},
        "target": {"type": "http", "url": "https://example.com/hook"}
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    // WHEN the builder makes the same definition THEN they are equal
    let built = JobDefinition::new(
        ScheduleSpec::new("rate(5 minutes)", "Europe/Berlin"),
        Target::http("https://example.com/hook"),
    );
    assert_eq!(built, from_json);
    // AND each `with_*` changes exactly its field
    let tuned = built.clone().with_pool("slow").with_timeout_secs(9);
    assert_eq!((tuned.pool.as_str(), tuned.timeout_secs), ("slow", 9));
    assert_eq!(JobDefinition { pool: built.pool.clone(), timeout_secs: built.timeout_secs, ..tuned }, built);
}

#[test]
fn a_new_job_names_the_bad_field_and_starts_in_admission() {
    let cfg = LocalDeployment {
        queue_prefix: "q-".into(),
        pools: vec!["default".into()],
        shards: 16,
        targets: crate::outbound::TargetPolicy::default(),
    };
    let def = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x"));
    let now = crate::ms_to_dt(1_764_469_800_000);
    let job = Job::new(&cfg, "acme", "nightly", def.clone(), now).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((job.version, job.state, job.due_class), (1, JobState::Enabled, DueClass::Admission));
    assert_eq!(job.shard, keys::shard_of("acme", "nightly", 16));
    assert!(job.next_fire_at.is_some_and(|n| n > now));
    let err = Job::new(&cfg, "acme", "nightly", def.clone().with_pool("nope"), now).err();
    assert_eq!(err.map(|e| e.field), Some("pool".to_string()));
    let err = Job::new(&cfg, "acme", "bad id", def, now).err();
    assert_eq!(err.map(|e| e.field), Some("jobId".to_string()));
    for secs in [0, MAX_START_DEADLINE_SECS + 1] {
        let bad = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x"))
            .with_start_deadline_secs(secs);
        let err = Job::new(&cfg, "acme", "nightly", bad, now).err();
        assert_eq!(err.map(|e| e.field), Some("startDeadlineSecs".to_string()), "{secs}");
    }
    let ok = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x"))
        .with_start_deadline_secs(MAX_START_DEADLINE_SECS);
    assert!(Job::new(&cfg, "acme", "nightly", ok, now).is_ok());
}

#[test]
fn a_target_every_fire_would_refuse_is_refused_at_create() {
    // Issue 15 (outbound 6): create-time checks must be the worker's checks, or a job is
    // accepted and then fails on every fire.
    let cfg = LocalDeployment::local("t-", &["default"], 16);
    let now = crate::ms_to_dt(1_764_469_800_000);
    let field = |target: Target| {
        let def = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), target);
        Job::new(&cfg, "acme", "nightly", def, now).err().map(|e| e.field)
    };
    for url in
        ["http://example.com/hook", "https://169.254.169.254/latest", "https://[::1]/x", "https://10.0.0.1/"]
    {
        assert_eq!(field(Target::http(url)), Some("target.url".to_string()), "{url}");
    }
    assert_eq!(field(Target::http("https://example.com/hook")), None);
    // Sundial's own pool queue and DLQ are not targets
    for q in [cfg.queue_name("default"), cfg.dlq_name("default")] {
        let url = format!("https://sqs.us-east-1.amazonaws.com/123456789012/{q}");
        assert_eq!(field(Target::sqs(url)), Some("target.queueUrl".to_string()), "{q}");
    }
}

#[test]
fn a_tenant_allowlist_is_checked_at_create_with_the_field_named() {
    // GIVEN a deployment whose acme may call acme-* functions and queues and *.acme.com, and
    // every other tenant only webhooks
    let mut cfg = LocalDeployment::local("t-", &["default"], 16);
    cfg.targets.tenants = Some(
        crate::outbound::TenantTargets::parse(
            r#"{"acme": {"lambda": ["arn:aws:lambda:*:*:function:acme-*"],
                         "sqs": ["arn:aws:sqs:*:123456789012:acme-*"],
                         "http": ["*.acme.com"], "pools": ["default"]},
                "*": {"http": ["*"], "pools": ["default"]}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let now = crate::ms_to_dt(1_764_469_800_000);
    let field = |tenant: &str, target: Target| {
        let def = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), target);
        Job::new(&cfg, tenant, "nightly", def, now).err().map(|e| e.field)
    };
    let lambda = |f: &str| Target::lambda(f);
    let sqs = |q: &str| Target::sqs(format!("https://sqs.eu-west-1.amazonaws.com/123456789012/{q}"));
    // THEN what is listed is accepted and everything else refused, naming the field
    assert_eq!(field("acme", lambda("arn:aws:lambda:eu-west-1:123456789012:function:acme-run")), None);
    assert_eq!(
        field("acme", lambda("arn:aws:lambda:eu-west-1:123456789012:function:globex-run")),
        Some("target.function".into())
    );
    assert_eq!(
        field("acme", lambda("acme-run")),
        Some("target.function".into()),
        "a bare name does not match an ARN glob"
    );
    assert_eq!(field("acme", sqs("acme-inbox")), None);
    assert_eq!(field("acme", sqs("globex-inbox")), Some("target.queueUrl".into()));
    assert_eq!(field("acme", Target::http("https://hooks.acme.com/run")), None);
    assert_eq!(field("acme", Target::http("https://hooks.globex.com/run")), Some("target.url".into()));
    assert_eq!(field("globex", Target::http("https://hooks.globex.com/run")), None);
    assert_eq!(
        field("globex", lambda("arn:aws:lambda:eu-west-1:123456789012:function:acme-run")),
        Some("target.function".into())
    );
}

#[test]
fn auth_headers_come_from_secret_references_and_reserved_names_are_refused() {
    // Issue 15 (outbound 3): a webhook may send auth headers, by Secrets Manager reference.
    let cfg = LocalDeployment::local("t-", &["default"], 16);
    let now = crate::ms_to_dt(1_764_469_800_000);
    let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-token-AbCdEf";
    let def = |name: &str| -> Result<JobDefinition, String> {
        serde_json::from_value(serde_json::json!({
            "schedule": {"expression": "rate(5 minutes)", "timezone": "UTC"},
            "target": {"type": "http", "url": "https://hooks.acme.com/run",
                       "headers": {name: {"secretArn": arn}}}
        }))
        .map_err(|e| e.to_string())
    };
    let ok = def("Authorization").unwrap_or_else(|e| panic!("{e}"));
    assert!(Job::new(&cfg, "acme", "nightly", ok.clone(), now).is_ok());
    // the definition round-trips with the reference, never a value
    let v = serde_json::to_value(&ok).unwrap_or_default();
    assert_eq!(v["target"]["headers"]["Authorization"]["secretArn"], arn);
    for name in [
        "webhook-signature",
        "Webhook-Id",
        "Idempotency-Key",
        "content-type",
        "Host",
        "X-Sundial-Fencing-Token",
    ] {
        let d = def(name).unwrap_or_else(|e| panic!("{e}"));
        let err = Job::new(&cfg, "acme", "nightly", d, now).err().map(|e| e.field);
        assert_eq!(err, Some(format!("target.headers.{name}")), "{name}");
    }
    // a value that is not a reference is refused
    let inline: Result<JobDefinition, _> = serde_json::from_value(serde_json::json!({
        "schedule": {"expression": "rate(5 minutes)", "timezone": "UTC"},
        "target": {"type": "http", "url": "https://hooks.acme.com/run", "headers": {"Authorization": "Bearer x"}}
    }));
    assert!(inline.is_err());
}

#[test]
fn a_tenant_uses_only_the_pools_its_allowlist_lists() {
    // GIVEN a deployment with a Lambda pool and an ECS pool; acme may use `default`, globex's
    // allowlist names no pool
    let mut cfg = LocalDeployment::local("t-", &["default", "ecs"], 16);
    cfg.targets.tenants = Some(
        crate::outbound::TenantTargets::parse(
            r#"{"acme": {"pools": ["default"], "http": ["*"]}, "globex": {"http": ["*"]}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let now = crate::ms_to_dt(1_764_469_800_000);
    let field = |cfg: &LocalDeployment, tenant: &str, pool: &str| {
        let def =
            JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x.example"))
                .with_pool(pool);
        Job::new(cfg, tenant, "nightly", def, now).err().map(|e| e.field)
    };
    // THEN acme's job runs in its pool and not in the other, and globex's in none
    assert_eq!(field(&cfg, "acme", "default"), None);
    assert_eq!(field(&cfg, "acme", "ecs"), Some("pool".into()));
    assert_eq!(field(&cfg, "globex", "default"), Some("pool".into()));
    // AND without allowlists every pool of the deployment may be named, as before
    cfg.targets.tenants = None;
    assert_eq!(field(&cfg, "globex", "ecs"), None);
}

#[test]
fn per_run_params_merge_over_the_jobs_as_a_json_merge_patch() {
    use serde_json::json;
    let job = json!({"report": "daily", "opts": {"a": 1, "b": 2}, "drop": true});
    let run = json!({"opts": {"b": 3, "c": 4}, "drop": null, "day": "2026-12-01"});
    assert_eq!(
        merge_params(&job, &run),
        json!({"report": "daily", "opts": {"a": 1, "b": 3, "c": 4}, "day": "2026-12-01"})
    );
    // a non-object on either side: the run's value replaces the job's
    assert_eq!(merge_params(&json!([1, 2]), &json!({"x": 1})), json!({"x": 1}));
    assert_eq!(merge_params(&job, &json!("only")), json!("only"));
    assert_eq!(merge_params(&serde_json::Value::Null, &json!({"a": null, "b": 1})), json!({"b": 1}));
    // too large once merged: 400 on params, and the job's own definition is untouched
    let def = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x"))
        .with_params(job.clone());
    let big = json!({"blob": "x".repeat(MAX_INLINE_PARAMS_BYTES)});
    let e = def.with_run_params(Some(&big)).unwrap_err();
    assert_eq!(e.field, "params");
    assert_eq!(def.params, job);
    assert_eq!(def.with_run_params(None).map(|d| d.params), Ok(job));
}

#[test]
fn manual_backfilled_and_event_executions_are_not_fires_of_the_schedule() {
    let cfg = LocalDeployment::local("t-", &["default"], 16);
    let def = JobDefinition::new(ScheduleSpec::new("0 0 6 * * *", "UTC"), Target::http("https://x"));
    let now = crate::ms_to_dt(1_764_469_800_000);
    let job = Job::new(&cfg, "acme", "load", def, now).unwrap_or_else(|e| panic!("{e}"));
    let sch = sundial_schedule::Schedule::parse(&job.definition.schedule, job.anchor)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let mut e = Execution::ready(&job, &sch, now, None, now, "tick");
    assert!(e.is_scheduled_fire());
    for code in [MANUAL_CODE, BACKFILL_CODE, crate::event::EVENT_CODE] {
        e.timeline[0].code = Some(code.into());
        assert!(!e.is_scheduled_fire(), "{code}");
    }
}
