//! Helpers for trigger-plane tests: jobs, scans at a chosen instant, and what landed where.

use crate::TestEnv;
use anyhow::Result;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::QueueAttributeName;
use chrono::{DateTime, Utc};
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanError, ScanOptions, ScanReport};
use sundial_core::Ctx;
use sundial_model::{Execution, Job, JobDefinition, Target};
use sundial_schedule::{MisfirePolicy, ScheduleSpec};
use sundial_store::items;
use sundial_store::jobs;
use sundial_store::queue::PoolQueues;
use tokio::sync::Mutex;

/// A parsed RFC 3339 instant.
pub fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// A job definition with an HTTPS target and the given schedule and misfire policy.
pub fn definition(expr: &str, tz: &str, misfire: MisfirePolicy) -> JobDefinition {
    JobDefinition::new(ScheduleSpec::new(expr, tz), Target::http("https://hooks.example.com/run"))
        .with_params(serde_json::json!({"report": "daily"}))
        .with_misfire(misfire)
        .with_timeout_secs(30)
}

/// Creates and stores an enabled job at `now`.
pub async fn create_job(
    env: &TestEnv,
    tenant: &str,
    id: &str,
    def: JobDefinition,
    now: DateTime<Utc>,
) -> Result<Job> {
    let job = Job::new(&env.cfg, tenant, id, def, now)?;
    jobs::put_new_job(&env.clients.ddb, &env.cfg, &job).await?;
    Ok(job)
}

/// The trigger context of a test environment.
pub fn ctx(env: &TestEnv) -> Ctx {
    Ctx {
        ddb: env.clients.ddb.clone(),
        cfg: env.cfg.clone(),
        // MessageGroupId = tenant on every send, as on AWS (SQS fair queues); the emulator accepts it.
        queues: PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone()),
    }
}

/// The trigger context of a test environment whose every request the meter books under
/// `component`.
pub fn metered_ctx(env: &TestEnv, meter: &sundial_testkit::metering::Meter, component: &str) -> Ctx {
    let clients = meter.clients(&crate::sdk_config(), component);
    Ctx { ddb: clients.ddb, cfg: env.cfg.clone(), queues: PoolQueues::new(clients.sqs, env.cfg.clone()) }
}

/// Scans every shard at `now` with a roomy catch-up budget.
pub async fn scan(env: &TestEnv, now: DateTime<Utc>, opts: &ScanOptions) -> Result<ScanReport, ScanError> {
    scan_with_budget(env, now, opts, CatchUpBudget::new(100_000, 100_000)).await
}

/// Scans every shard at `now` with the given catch-up budget.
pub async fn scan_with_budget(
    env: &TestEnv,
    now: DateTime<Utc>,
    opts: &ScanOptions,
    budget: CatchUpBudget,
) -> Result<ScanReport, ScanError> {
    scan_shards(&ctx(env), 0..env.cfg.shards, now, &Mutex::new(budget), opts).await
}

/// Every execution of a job, by scheduled instant.
pub async fn executions(env: &TestEnv, tenant: &str, job_id: &str) -> Result<Vec<Execution>> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = env
            .clients
            .ddb
            .query()
            .table_name(&env.cfg.executions_table)
            // Executions only: the job's slot and outcome items share its partition.
            .key_condition_expression("pk = :p AND begins_with(sk, :e)")
            .expression_attribute_values(":p", AttributeValue::S(sundial_model::keys::job_pk(tenant, job_id)))
            .expression_attribute_values(":e", AttributeValue::S(sundial_model::keys::EXEC_SK_PREFIX.into()))
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await?;
        for i in page.items() {
            out.push(items::execution_from_item(i)?);
        }
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => break,
        }
    }
    Ok(out)
}

/// Messages in a pool queue: (visible, delayed, in flight).
pub async fn queue_counts(env: &TestEnv, pool: &str) -> Result<(u64, u64, u64)> {
    queue_counts_at(env, env.queue_url(pool)).await
}

/// Messages in a pool's low lane (low priority and backfills), whatever their state.
pub async fn queued_low(env: &TestEnv, pool: &str) -> Result<u64> {
    let (a, b, c) = queue_counts_at(env, &env.queues[pool].low_url).await?;
    Ok(a + b + c)
}

/// Messages in the queue at `url`: (visible, delayed, in flight).
pub async fn queue_counts_at(env: &TestEnv, url: &str) -> Result<(u64, u64, u64)> {
    let out = env
        .clients
        .sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await?;
    let a = out.attributes().cloned().unwrap_or_default();
    let get = |k: QueueAttributeName| a.get(&k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Ok((
        get(QueueAttributeName::ApproximateNumberOfMessages),
        get(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
        get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
    ))
}

/// Total messages in a pool queue, whatever their state.
pub async fn queued(env: &TestEnv, pool: &str) -> Result<u64> {
    let (a, b, c) = queue_counts(env, pool).await?;
    Ok(a + b + c)
}

/// The executions covering each minute (`HH:MM`) of an every-minute job: each execution's own
/// instant, or every minute of a `fireOnce` batch's range, with the ids of the executions that
/// cover it (a minute with two is a fire run twice).
pub fn covered_minutes(es: &[Execution]) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut covered: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for e in es {
        let (a, b) = e.missed_range.unwrap_or((e.scheduled_at, e.scheduled_at));
        let mut m = a;
        while m <= b {
            covered.entry(m.format("%H:%M").to_string()).or_default().push(e.id());
            m += chrono::Duration::minutes(1);
        }
    }
    covered
}
