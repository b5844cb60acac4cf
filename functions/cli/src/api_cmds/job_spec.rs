//! A job definition from flags (and/or a JSON file), applied over a definition object:
//! `jobs create` starts from nothing, `jobs update` from the definition read.

use anyhow::Context;
use serde_json::{json, Map, Value};
use sundial_client::JobDefinition;

/// A job definition from flags (and/or a JSON file).
#[derive(clap::Args, Debug)]
pub(crate) struct JobSpec {
    /// Job id.
    pub(super) job_id: String,
    /// A JSON definition to start from (the API's JobDefinition).
    #[arg(long)]
    file: Option<std::path::PathBuf>,
    /// Schedule: cron ('0 30 2 * * *' or '30 2 * * *'), 'rate(10 seconds)' or 'at(...)'.
    #[arg(long)]
    schedule: Option<String>,
    /// A further schedule expression, in the same zone and under the same policies (repeat for
    /// more, at most 10): the job fires at the union of the expressions, once per instant.
    /// Given at all, these replace the definition's `expressions`.
    #[arg(long = "also-schedule", value_name = "EXPRESSION")]
    also_schedule: Vec<String>,
    /// IANA time zone.
    #[arg(long)]
    tz: Option<String>,
    /// Worker pool.
    #[arg(long)]
    pool: Option<String>,
    /// Webhook target URL.
    #[arg(long, conflicts_with_all = ["lambda", "sqs", "handler", "event_bus", "topic", "state_machine", "ecs_cluster"])]
    url: Option<String>,
    /// Lambda target (function name or ARN).
    #[arg(long, conflicts_with_all = ["sqs", "handler", "event_bus", "topic", "state_machine", "ecs_cluster"])]
    lambda: Option<String>,
    /// SQS target (queue URL).
    #[arg(long, conflicts_with_all = ["handler", "event_bus", "topic", "state_machine", "ecs_cluster"])]
    sqs: Option<String>,
    /// EventBridge target: the tenant's bus ARN (one event per fire, docs/targets.md).
    #[arg(long, value_name = "BUS_ARN", conflicts_with_all = ["handler", "topic", "state_machine", "ecs_cluster"])]
    event_bus: Option<String>,
    /// The EventBridge target's detail-type (default SundialJobFired).
    #[arg(long, requires = "event_bus")]
    detail_type: Option<String>,
    /// SNS target: the tenant's topic ARN (one message per fire).
    #[arg(long, value_name = "TOPIC_ARN", conflicts_with_all = ["handler", "state_machine", "ecs_cluster"])]
    topic: Option<String>,
    /// The SNS target's message subject.
    #[arg(long, requires = "topic")]
    subject: Option<String>,
    /// Step Functions target: the tenant's state machine ARN (one execution per fire's run,
    /// tracked to its end; docs/targets.md).
    #[arg(long, value_name = "STATE_MACHINE_ARN", conflicts_with_all = ["handler", "ecs_cluster"])]
    state_machine: Option<String>,
    /// ECS target: the cluster's ARN, with --ecs-task-definition and --ecs-container (one task
    /// per fire's run, tracked to the container's exit code; docs/targets.md).
    #[arg(
        long,
        value_name = "CLUSTER_ARN",
        conflicts_with = "handler",
        requires_all = ["ecs_task_definition", "ecs_container"]
    )]
    ecs_cluster: Option<String>,
    /// The ECS target's task definition ARN (`…:task-definition/<family>:<revision>`), tagged
    /// sundial-tenant=<tenant>.
    #[arg(long, value_name = "TASK_DEFINITION_ARN", requires_all = ["ecs_cluster", "ecs_container"])]
    ecs_task_definition: Option<String>,
    /// The ECS target's container that gets the SUNDIAL_* environment overrides and whose exit
    /// code decides the run.
    #[arg(long, value_name = "NAME", requires_all = ["ecs_cluster", "ecs_task_definition"])]
    ecs_container: Option<String>,
    /// The ECS target's launch type (default FARGATE, which needs --ecs-subnet).
    #[arg(long, value_name = "FARGATE|EC2", value_parser = ["FARGATE", "EC2"], ignore_case = true, requires = "ecs_cluster")]
    ecs_launch_type: Option<String>,
    /// A subnet of the ECS task (awsvpc networking; repeat for several, at most 16).
    #[arg(long = "ecs-subnet", value_name = "SUBNET_ID", requires = "ecs_cluster")]
    ecs_subnets: Vec<String>,
    /// A security group of the ECS task (repeat for several, at most 5; needs --ecs-subnet).
    #[arg(long = "ecs-security-group", value_name = "SG_ID", requires = "ecs_cluster")]
    ecs_security_groups: Vec<String>,
    /// Give the ECS task's network interface a public IP.
    #[arg(long, requires = "ecs_cluster")]
    ecs_public_ip: bool,
    /// In-process handler name (ECS pools).
    #[arg(long)]
    handler: Option<String>,
    /// Parameters (JSON).
    #[arg(long)]
    params: Option<String>,
    /// Attempts in all (1 = no retry).
    #[arg(long, allow_hyphen_values = true)]
    max_attempts: Option<i64>,
    /// Run timeout per attempt (seconds).
    #[arg(long)]
    timeout_secs: Option<u32>,
    /// Report a fire not started this many seconds after its scheduled instant (a FireMissed
    /// event, once per fire).
    #[arg(long)]
    start_deadline_secs: Option<u32>,
    /// Report a fire not finished this many seconds after its scheduled instant (a
    /// FinishDeadlineMissed event, once per fire; docs/outcomes.md).
    #[arg(long)]
    finish_deadline_secs: Option<u32>,
    /// Pause the job after this many dead fires in a row (audited, a JobAutoPaused event).
    #[arg(long, value_name = "N")]
    auto_pause_after_dead_fires: Option<u32>,
    /// Also send an ExecutionSucceeded event for each fire that succeeds.
    #[arg(long)]
    success_events: bool,
    /// Also POST each outcome event of the job to this HTTPS receiver, signed like a webhook
    /// (docs/outcomes.md, "HTTPS notifications").
    #[arg(long, value_name = "URL")]
    notify_url: Option<String>,
    /// The notification's signing secret (a Secrets Manager ARN of the tenant's).
    #[arg(long, value_name = "SECRET_ARN", requires = "notify_url")]
    notify_secret: Option<String>,
    /// End the job (COMPLETED) after this many scheduled fires (docs/schedule.md).
    #[arg(long, value_name = "N")]
    max_runs: Option<u64>,
    /// Concurrency policy: ALLOW, FORBID, SERIALIZE, REPLACE.
    #[arg(long)]
    concurrency: Option<String>,
    /// A resource limit its runs use (repeat for several; replaces the list on update).
    #[arg(long = "resource")]
    resources: Vec<String>,
    /// Priority within the pool: high, normal, low (low is deferred first when the pool is
    /// busy; docs/priority.md).
    #[arg(long)]
    priority: Option<String>,
    /// Sharded job: each fire runs as this many children, each given shardIndex/shardTotal
    /// (docs/children.md).
    #[arg(long, conflicts_with = "broadcast")]
    shards: Option<u32>,
    /// Broadcast job: each fire runs once per member (comma-separated, e.g. regions); never for
    /// work that must happen once (docs/children.md).
    #[arg(long, value_delimiter = ',')]
    broadcast: Option<Vec<String>>,
    /// Map-reduce job (needs --handler, a map-reduce handler of the ECS worker): its map emits
    /// items, each run as its own execution, then one reduce; the value is the most items one
    /// fire may emit (docs/mapreduce.md).
    #[arg(long, value_name = "MAX_ITEMS", conflicts_with_all = ["shards", "broadcast"])]
    map_reduce: Option<u32>,
    /// An upstream each fire waits for: JOB, JOB:PERIOD or JOB:PERIOD:STATUS, PERIOD being
    /// same, previous or an offset in seconds (-3600), STATUS succeeded or final (repeat for
    /// several; replaces the list on update; docs/dependencies.md).
    #[arg(long = "after", value_name = "JOB[:PERIOD[:STATUS]]", allow_hyphen_values = true)]
    after: Vec<String>,
    /// Seconds a fire waits for its upstreams before --on-dependency-deadline applies.
    #[arg(long)]
    dependency_deadline_secs: Option<u32>,
    /// At the dependency deadline: fail (DEAD, to the DLQ), skip or run.
    #[arg(long)]
    on_dependency_deadline: Option<String>,
    /// The job also fires on events (`sundial jobs event`); with `once-per-period` an event runs
    /// the next scheduled fire now (whichever comes first), with `each` every event runs.
    #[arg(long, value_name = "each|once-per-period")]
    events: Option<String>,
}

/// One `--after` value as the API's dependency object.
fn dependency(v: &str) -> anyhow::Result<Value> {
    let mut parts = v.split(':');
    let job = parts.next().filter(|j| !j.is_empty()).context("--after needs a job id")?;
    let mut dep = json!({ "job": job });
    match parts.next() {
        None | Some("same") => {}
        Some("previous") => dep["period"] = json!("previous"),
        Some(o) => {
            let secs: i64 = o.parse().with_context(|| {
                format!("--after {v}: the period is same, previous or an offset in seconds, not {o:?}")
            })?;
            dep["period"] = json!("offset");
            dep["offsetSecs"] = json!(secs);
        }
    }
    if let Some(s) = parts.next() {
        anyhow::ensure!(
            s == "succeeded" || s == "final",
            "--after {v}: the status is succeeded or final, not {s:?}"
        );
        dep["status"] = json!(s);
    }
    anyhow::ensure!(parts.next().is_none(), "--after {v}: at most JOB:PERIOD:STATUS");
    Ok(dep)
}

impl JobSpec {
    /// The `ecs` target of the `--ecs-*` flags, when they name one (clap holds the cluster, task
    /// definition and container together, and the rest to them).
    fn ecs_target(&self) -> Option<Value> {
        let (Some(cluster), Some(def), Some(container)) =
            (&self.ecs_cluster, &self.ecs_task_definition, &self.ecs_container)
        else {
            return None;
        };
        let mut t = json!({
            "type": "ecs",
            "clusterArn": cluster,
            "taskDefinitionArn": def,
            "containerName": container,
        });
        if let Some(l) = &self.ecs_launch_type {
            t["launchType"] = json!(l.to_uppercase());
        }
        if !self.ecs_subnets.is_empty() {
            t["subnets"] = json!(self.ecs_subnets);
        }
        if !self.ecs_security_groups.is_empty() {
            t["securityGroups"] = json!(self.ecs_security_groups);
        }
        if self.ecs_public_ip {
            t["assignPublicIp"] = json!(true);
        }
        Some(t)
    }

    /// The target of the target flags, when one is given (clap lets at most one through).
    fn target(&self) -> Option<Value> {
        match (&self.url, &self.lambda, &self.sqs, &self.handler) {
            (Some(u), ..) => Some(json!({"type": "http", "url": u})),
            (_, Some(f), ..) => Some(json!({"type": "lambda", "function": f})),
            (_, _, Some(q), _) => Some(json!({"type": "sqs", "queueUrl": q})),
            (_, _, _, Some(h)) => Some(json!({"type": "inProcess", "handler": h})),
            _ => match (&self.event_bus, &self.topic) {
                (Some(b), _) => {
                    let mut t = json!({"type": "eventBridge", "eventBusArn": b});
                    if let Some(d) = &self.detail_type {
                        t["detailType"] = json!(d);
                    }
                    Some(t)
                }
                (_, Some(a)) => {
                    let mut t = json!({"type": "sns", "topicArn": a});
                    if let Some(s) = &self.subject {
                        t["subject"] = json!(s);
                    }
                    Some(t)
                }
                _ => self
                    .state_machine
                    .as_ref()
                    .map(|m| json!({"type": "stepFunctions", "stateMachineArn": m}))
                    .or_else(|| self.ecs_target()),
            },
        }
    }

    /// `--file` over `def`, then the schedule, pool and target flags.
    fn apply_file_and_schedule(&self, def: &mut Map<String, Value>) -> anyhow::Result<()> {
        if let Some(f) = &self.file {
            let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            let v: Value =
                serde_json::from_str(&text).with_context(|| format!("{} is not JSON", f.display()))?;
            let obj = v.as_object().with_context(|| format!("{} is not a JSON object", f.display()))?;
            def.extend(obj.clone());
        }
        def.remove("jobId");
        let sched = def.entry("schedule").or_insert_with(|| json!({"timezone": "UTC"}));
        if let Some(s) = &self.schedule {
            sched["expression"] = json!(s);
        }
        if !self.also_schedule.is_empty() {
            sched["expressions"] = json!(self.also_schedule);
        }
        if let Some(tz) = &self.tz {
            sched["timezone"] = json!(tz);
        }
        if let Some(p) = &self.pool {
            def.insert("pool".into(), json!(p));
        }
        if let Some(t) = self.target() {
            def.insert("target".into(), t);
        }
        Ok(())
    }

    /// How each run goes: params, retries, time limits, outcome reports, concurrency, priority.
    fn apply_run_flags(&self, def: &mut Map<String, Value>) -> anyhow::Result<()> {
        if let Some(p) = &self.params {
            let v: Value = serde_json::from_str(p).context("--params is not JSON")?;
            def.insert("params".into(), v);
        }
        if let Some(n) = self.max_attempts {
            def.entry("retry").or_insert_with(|| json!({}))["maxAttempts"] = json!(n);
        }
        if let Some(t) = self.timeout_secs {
            def.insert("timeoutSecs".into(), json!(t));
        }
        if let Some(d) = self.start_deadline_secs {
            def.insert("startDeadlineSecs".into(), json!(d));
        }
        if let Some(d) = self.finish_deadline_secs {
            def.insert("finishDeadlineSecs".into(), json!(d));
        }
        if let Some(n) = self.auto_pause_after_dead_fires {
            def.insert("autoPauseAfterDeadFires".into(), json!(n));
        }
        if self.success_events {
            def.insert("outcomeEvents".into(), json!({"succeeded": true}));
        }
        if let Some(n) = self.max_runs {
            def.insert("maxRuns".into(), json!(n));
        }
        if let Some(url) = &self.notify_url {
            let mut notify = json!({"url": url});
            if let Some(s) = &self.notify_secret {
                notify["signingSecretArn"] = json!(s);
            }
            def.insert("outcomeNotify".into(), notify);
        }
        if let Some(c) = &self.concurrency {
            def.insert("concurrency".into(), json!(c.to_uppercase()));
        }
        if !self.resources.is_empty() {
            def.insert("resources".into(), json!(self.resources));
        }
        if let Some(p) = &self.priority {
            def.insert("priority".into(), json!(p.to_lowercase()));
        }
        Ok(())
    }

    /// The fan-out (shards, broadcast, map-reduce), the dependencies and the event trigger.
    fn apply_fan_out_and_triggers(&self, def: &mut Map<String, Value>) -> anyhow::Result<()> {
        if let Some(n) = self.shards {
            def.remove("broadcast");
            def.insert("shards".into(), json!(n));
        }
        if let Some(m) = &self.broadcast {
            def.remove("shards");
            def.insert("broadcast".into(), json!({ "members": m }));
        }
        if let Some(n) = self.map_reduce {
            def.insert("mapReduce".into(), json!({ "maxItems": n }));
        }
        if !self.after.is_empty() {
            let deps = self.after.iter().map(|a| dependency(a)).collect::<anyhow::Result<Vec<_>>>()?;
            def.insert("after".into(), Value::Array(deps));
        }
        if let Some(d) = self.dependency_deadline_secs {
            def.insert("dependencyDeadlineSecs".into(), json!(d));
        }
        if let Some(p) = &self.on_dependency_deadline {
            def.insert("onDependencyDeadline".into(), json!(p.to_lowercase()));
        }
        match self.events.as_deref() {
            None => {}
            Some("each") => {
                def.insert("events".into(), json!({}));
            }
            Some("once-per-period") => {
                def.insert("events".into(), json!({"oncePerPeriod": true}));
            }
            Some(o) => anyhow::bail!("--events is each or once-per-period, not {o:?}"),
        }
        Ok(())
    }

    /// Applies the flags over `base` (a definition object).
    pub(super) fn apply(&self, mut def: Map<String, Value>) -> anyhow::Result<Map<String, Value>> {
        self.apply_file_and_schedule(&mut def)?;
        self.apply_run_flags(&mut def)?;
        self.apply_fan_out_and_triggers(&mut def)?;
        Ok(def)
    }
}

/// A definition object as the API's typed definition; the error names the JSON path.
pub(super) fn definition(def: Map<String, Value>) -> anyhow::Result<JobDefinition> {
    serde_path_to_error::deserialize(Value::Object(def))
        .map_err(|e| anyhow::anyhow!("the job definition is not valid at {}: {}", e.path(), e.inner()))
}

#[cfg(test)]
mod definition_flags {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        spec: JobSpec,
    }

    fn def(args: &[&str]) -> anyhow::Result<Map<String, Value>> {
        let t = T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))?;
        t.spec.apply(Map::new())
    }

    #[test]
    fn outcome_and_target_flags_set_the_fields() -> anyhow::Result<()> {
        let d = def(&[
            "j",
            "--finish-deadline-secs",
            "3600",
            "--auto-pause-after-dead-fires",
            "3",
            "--success-events",
            "--max-runs",
            "12",
            "--event-bus",
            "arn:aws:events:eu-west-1:123456789012:event-bus/acme",
            "--detail-type",
            "Run",
        ])?;
        assert_eq!(
            (&d["finishDeadlineSecs"], &d["autoPauseAfterDeadFires"], &d["outcomeEvents"]),
            (&json!(3600), &json!(3), &json!({"succeeded": true}))
        );
        assert_eq!(d["maxRuns"], 12);
        let secret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-notify-AbCdEf";
        let n = def(&["j", "--notify-url", "https://hooks.acme.com/o", "--notify-secret", secret])?;
        assert_eq!(
            n["outcomeNotify"],
            json!({"url": "https://hooks.acme.com/o", "signingSecretArn": secret})
        );
        assert!(def(&["j", "--notify-secret", secret]).is_err(), "a secret needs a receiver");
        assert_eq!(
            d["target"],
            json!({"type": "eventBridge", "eventBusArn": "arn:aws:events:eu-west-1:123456789012:event-bus/acme", "detailType": "Run"})
        );
        let d = def(&["j", "--topic", "arn:aws:sns:eu-west-1:123456789012:acme", "--subject", "s"])?;
        assert_eq!(
            d["target"],
            json!({"type": "sns", "topicArn": "arn:aws:sns:eu-west-1:123456789012:acme", "subject": "s"})
        );
        assert!(
            def(&["j", "--topic", "arn:aws:sns:eu-west-1:123456789012:acme", "--url", "https://x"]).is_err()
        );
        assert!(def(&["j", "--subject", "s"]).is_err(), "a subject needs a topic");
        let machine = "arn:aws:states:eu-west-1:123456789012:stateMachine:acme";
        let d = def(&["j", "--state-machine", machine])?;
        assert_eq!(d["target"], json!({"type": "stepFunctions", "stateMachineArn": machine}));
        assert!(def(&["j", "--state-machine", machine, "--topic", "arn:aws:sns:eu-west-1:123456789012:a"])
            .is_err());
        Ok(())
    }

    #[test]
    fn the_ecs_flags_set_an_ecs_target_and_need_each_other() -> anyhow::Result<()> {
        let cluster = "arn:aws:ecs:eu-west-1:123456789012:cluster/batch";
        let task = "arn:aws:ecs:eu-west-1:123456789012:task-definition/settle:3";
        let ecs = ["j", "--ecs-cluster", cluster, "--ecs-task-definition", task, "--ecs-container", "main"];
        // GIVEN the three required flags THEN a FARGATE target with nothing else
        let d = def(&ecs)?;
        assert_eq!(
            d["target"],
            json!({"type": "ecs", "clusterArn": cluster, "taskDefinitionArn": task, "containerName": "main"})
        );
        // AND the network flags, repeated, and the launch type in any case
        let more = [
            "--schedule",
            "0 0 6 * * *",
            "--ecs-launch-type",
            "ec2",
            "--ecs-subnet",
            "subnet-0a1b2c3d",
            "--ecs-subnet",
            "subnet-0123456789abcdef0",
            "--ecs-security-group",
            "sg-0a1b2c3d",
            "--ecs-public-ip",
        ];
        let d = def(&[&ecs[..], &more].concat())?;
        assert_eq!(
            d["target"],
            json!({"type": "ecs", "clusterArn": cluster, "taskDefinitionArn": task, "containerName": "main",
                   "launchType": "EC2", "subnets": ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"],
                   "securityGroups": ["sg-0a1b2c3d"], "assignPublicIp": true})
        );
        assert!(definition(d).is_ok(), "the API's definition reads it");
        // THEN a missing one of the three is an error naming it
        for (i, flag) in [(1, "--ecs-cluster"), (3, "--ecs-task-definition"), (5, "--ecs-container")] {
            let without: Vec<&str> = [&ecs[..i], &ecs[i + 2..]].concat();
            let e = def(&without).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(flag), "{without:?}: {e}");
        }
        // AND the optional ones need the target, the launch type is one of two, and the target
        // excludes the others
        for bad in [
            &["j", "--ecs-subnet", "subnet-0a1b2c3d"][..],
            &["j", "--ecs-public-ip"],
            &[&ecs[..], &["--ecs-launch-type", "SPOT"]].concat(),
            &[&ecs[..], &["--state-machine", "arn:aws:states:eu-west-1:123456789012:stateMachine:a"]]
                .concat(),
            &[&ecs[..], &["--url", "https://x.example.com"]].concat(),
            &[&ecs[..], &["--handler", "h"]].concat(),
        ] {
            assert!(def(bad).is_err(), "{bad:?}");
        }
        Ok(())
    }

    #[test]
    fn shards_and_broadcast_flags_set_the_fields_and_exclude_each_other() -> anyhow::Result<()> {
        assert_eq!(def(&["j", "--shards", "8"])?["shards"], json!(8));
        assert_eq!(
            def(&["j", "--broadcast", "eu-west-1,us-east-1"])?["broadcast"],
            json!({"members": ["eu-west-1", "us-east-1"]})
        );
        assert!(def(&["j", "--shards", "8", "--broadcast", "a"]).is_err());
        Ok(())
    }

    #[test]
    fn the_map_reduce_flag_sets_its_item_limit() -> anyhow::Result<()> {
        let d = def(&["j", "--handler", "settle-merchants", "--map-reduce", "20000"])?;
        assert_eq!(d["mapReduce"], json!({"maxItems": 20000}));
        assert_eq!(d["target"], json!({"type": "inProcess", "handler": "settle-merchants"}));
        assert!(def(&["j", "--shards", "8", "--map-reduce", "10"]).is_err());
        Ok(())
    }

    #[test]
    fn after_events_and_the_deadline_flags_set_the_definition_fields() -> anyhow::Result<()> {
        let d = def(&[
            "settle",
            "--schedule",
            "0 0 6 * * *",
            "--url",
            "https://x.example.com",
            "--after",
            "close",
            "--after",
            "settle:previous:final",
            "--after",
            "fx:-3600",
            "--dependency-deadline-secs",
            "7200",
            "--on-dependency-deadline",
            "SKIP",
            "--events",
            "once-per-period",
        ])?;
        assert_eq!(
            d["after"],
            json!([
                {"job": "close"},
                {"job": "settle", "period": "previous", "status": "final"},
                {"job": "fx", "period": "offset", "offsetSecs": -3600}
            ])
        );
        assert_eq!(
            (&d["dependencyDeadlineSecs"], &d["onDependencyDeadline"]),
            (&json!(7200), &json!("skip"))
        );
        assert_eq!(d["events"], json!({"oncePerPeriod": true}));
        assert!(definition(d).is_ok(), "the API's definition reads it");
        for bad in
            [&["j", "--after", "x:weekly"][..], &["j", "--after", "x:same:done"], &["j", "--events", "all"]]
        {
            let e = def(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("--after") || e.contains("--events"), "{bad:?}: {e}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod priority_flag {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        spec: JobSpec,
    }

    #[test]
    fn priority_sets_the_definition_field_in_lower_case() {
        let cmd = Cmd::try_parse_from(["jobs-create", "j", "--priority", "LOW"]).expect("parses");
        let def = cmd.spec.apply(Map::new()).expect("applies");
        assert_eq!(def["priority"], json!("low"));
        let cmd = Cmd::try_parse_from(["jobs-create", "j"]).expect("parses");
        assert!(cmd.spec.apply(Map::new()).expect("applies").get("priority").is_none());
    }
}
