//! ECS (awsJson1_1, `X-Amz-Target: AmazonEC2ContainerServiceV20141113.<Op>`): clusters and task
//! definitions with tags, and tasks whose course is decided when they are run.
//!
//! There is no container runtime here, so a container is *emulated* from its effective
//! environment (its task definition's `environment`, overridden per variable by the `RunTask`
//! `containerOverrides`):
//! - [`RUN_SECS_VAR`] (default 1): decimal seconds from the task's creation to the container's exit;
//! - [`EXIT_CODE_VAR`] (default 0): its exit code, or `none`: it never starts (its image cannot be
//!   pulled). A value that is neither fails the task's start, naming the variable.
//!
//! `localstack/sundial_emulator.py` gives moto's tasks the same convention by the wall clock, so
//! the contract suite holds both to it. A task is PROVISIONING, RUNNING from 1 s after its
//! creation, and STOPPED once its first essential container has exited (`EssentialContainerExited`;
//! every container reports its exit code, 143 for one still running then: the SIGTERM ECS sends
//! it), once a container that never starts has had its time (`TaskFailedToStart`, no exit code),
//! or at a `StopTask` (`UserInitiated`, 143). As in `sfn`, no timer runs: every read compares the
//! course with the simulated clock, so a paused tokio clock moves tasks like every other timer.
//!
//! What Sundial relies on and this keeps: `RunTask`'s `clientToken`, scoped to the cluster for
//! 24 hours (the same token and the same parameters answer the original tasks, other parameters
//! are `ConflictException`: AWS's documented idempotency, and what an SDK retry of a lost
//! response meets); exit codes absent until the task stopped; `ListTasks` by `startedBy`,
//! `family` and `desiredStatus` (RUNNING by default); `propagateTags: TASK_DEFINITION` (the
//! tenant's tag on the task, which the tenant role's DescribeTasks and StopTask are conditioned on).

use crate::call::Call;
use crate::ddb::{ACCOUNT, REGION};
use crate::error::ApiError;
use crate::Aws;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use sundial_hash::SplitMix;

mod task;

use task::{course, emulated, Run, SIGTERM_EXIT};
pub use task::{EcsContainer, EcsStopCode, EcsTask, EXIT_CODE_VAR, RUN_SECS_VAR};

/// How long a `clientToken` is remembered (AWS: 24 hours).
const TOKEN_TTL_MS: i64 = 24 * 3_600 * 1_000;
/// Most tasks one `RunTask` starts (AWS's limit).
const MAX_COUNT: u64 = 10;
const MAX_STARTED_BY: usize = 128;
const MAX_CLIENT_TOKEN: usize = 64;

#[derive(Clone)]
struct Cluster {
    arn: String,
    name: String,
    tags: BTreeMap<String, String>,
}

#[derive(Clone)]
struct ContainerDef {
    name: String,
    essential: bool,
    env: BTreeMap<String, String>,
}

struct TaskDefinition {
    arn: String,
    family: String,
    containers: Vec<ContainerDef>,
    /// The `taskDefinition` ECS answers.
    body: Value,
    tags: BTreeMap<String, String>,
}

struct Task {
    view: EcsTask,
    runs: Vec<Run>,
    family: String,
    /// As given (the `overrides` ECS answers).
    overrides: Value,
}

/// A `clientToken` used on a cluster: the parameters it came with and the tasks it started.
struct TokenUse {
    params: Value,
    tasks: Vec<String>,
    at_ms: i64,
}

#[derive(Default)]
pub(crate) struct Ecs {
    /// By name.
    clusters: BTreeMap<String, Cluster>,
    /// By family; revision `r` at `r - 1`.
    definitions: BTreeMap<String, Vec<TaskDefinition>>,
    /// In creation order (what `ListTasks` answers).
    tasks: Vec<Task>,
    by_arn: BTreeMap<String, usize>,
    /// By (cluster ARN, token).
    tokens: BTreeMap<(String, String), TokenUse>,
    /// `RunTask`s answered with a token's original tasks.
    pub(crate) token_replays: u64,
    /// `RunTask`s refused `ConflictException` (a token reused with other parameters).
    pub(crate) token_conflicts: u64,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "InvalidParameterException", message)
}

fn client(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "ClientException", message)
}

fn cluster_not_found() -> ApiError {
    ApiError::new(400, "ClusterNotFoundException", "Cluster not found.")
}

fn name_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= 255 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn tags_of(v: &Value) -> BTreeMap<String, String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["key"].as_str()?.to_string(), t["value"].as_str().unwrap_or("").to_string())))
        .collect()
}

fn tag_list(t: &BTreeMap<String, String>) -> Vec<Value> {
    t.iter().map(|(k, v)| json!({ "key": k, "value": v })).collect()
}

/// `[{name, value}]` as a map.
fn env_of(v: &Value) -> BTreeMap<String, String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            Some((e["name"].as_str()?.to_string(), e["value"].as_str().unwrap_or("").to_string()))
        })
        .collect()
}

fn secs(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

/// What `RunTask` checks before it looks anything up.
fn validate_run(req: &Value) -> Result<(), ApiError> {
    if let Some(s) = req["startedBy"].as_str() {
        let ok = s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '-'));
        if s.len() > MAX_STARTED_BY || !ok {
            return Err(invalid(format!(
                "startedBy may be up to {MAX_STARTED_BY} letters, numbers, hyphens, forward slashes and underscores"
            )));
        }
    }
    if let Some(t) = req["clientToken"].as_str() {
        if t.is_empty() || t.len() > MAX_CLIENT_TOKEN || !t.bytes().all(|b| (33..=126).contains(&b)) {
            return Err(invalid(format!("clientToken may be up to {MAX_CLIENT_TOKEN} ASCII characters")));
        }
    }
    let count = req["count"].as_u64().unwrap_or(1);
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(invalid(format!("count must be between 1 and {MAX_COUNT}")));
    }
    match req["launchType"].as_str() {
        None | Some("EC2" | "FARGATE" | "EXTERNAL") => Ok(()),
        Some(other) => Err(invalid(format!("launchType {other:?} is not EC2, FARGATE or EXTERNAL"))),
    }
}

/// The overrides' environment per container; a container the definition lacks is refused.
fn override_env(
    overrides: &Value,
    def: &TaskDefinition,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, ApiError> {
    let mut out = BTreeMap::new();
    for o in overrides["containerOverrides"].as_array().into_iter().flatten() {
        let name = o["name"].as_str().unwrap_or_default();
        if !def.containers.iter().any(|c| c.name == name) {
            return Err(invalid(format!(
                "Override for container named {name} is not a container in the TaskDefinition."
            )));
        }
        out.entry(name.to_string()).or_insert_with(BTreeMap::new).extend(env_of(&o["environment"]));
    }
    Ok(out)
}

/// The parameters a `clientToken` is held to: the request but the token and the cluster (its scope).
fn token_params(req: &Value) -> Value {
    let mut p = req.clone();
    if let Some(m) = p.as_object_mut() {
        m.remove("clientToken");
        m.remove("cluster");
    }
    p
}

/// What one `RunTask` starts its tasks from.
struct Launch<'a> {
    req: &'a Value,
    cluster: &'a Cluster,
    def: &'a TaskDefinition,
    override_env: BTreeMap<String, BTreeMap<String, String>>,
    now: i64,
}

impl Launch<'_> {
    /// The request's tags, over the definition's when `propagateTags` is `TASK_DEFINITION`.
    fn tags(&self) -> BTreeMap<String, String> {
        let mut tags = BTreeMap::new();
        if self.req["propagateTags"] == "TASK_DEFINITION" {
            tags.clone_from(&self.def.tags);
        }
        tags.extend(tags_of(&self.req["tags"]));
        tags
    }

    fn task(&self, rng: &mut SplitMix) -> Task {
        let id = format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64());
        let arn = format!("{}/{id}", self.cluster.arn.replacen(":cluster/", ":task/", 1));
        let mut containers = Vec::new();
        let mut runs = Vec::new();
        for c in &self.def.containers {
            let mut env = c.env.clone();
            env.extend(self.override_env.get(&c.name).cloned().unwrap_or_default());
            runs.push(emulated(&env));
            containers.push(EcsContainer {
                arn: format!(
                    "arn:aws:ecs:{REGION}:{ACCOUNT}:container/{}/{id}/{:016x}",
                    self.cluster.name,
                    rng.next_u64()
                ),
                name: c.name.clone(),
                essential: c.essential,
                exit_code: None,
            });
        }
        let essential: Vec<(bool, Run)> =
            containers.iter().map(|c| c.essential).zip(runs.iter().cloned()).collect();
        let course = course(&essential);
        for (c, code) in containers.iter_mut().zip(course.exit_codes) {
            c.exit_code = code;
        }
        let text = |k: &str| self.req[k].as_str().map(str::to_string);
        let view = EcsTask {
            arn,
            cluster_arn: self.cluster.arn.clone(),
            task_definition_arn: self.def.arn.clone(),
            started_by: text("startedBy"),
            group: text("group").unwrap_or_else(|| format!("family:{}", self.def.family)),
            launch_type: text("launchType"),
            override_env: self.override_env.clone(),
            containers,
            tags: self.tags(),
            created_ms: self.now,
            stopped_ms: self.now.saturating_add(course.stopped_after_ms),
            stop_code: course.code,
            stopped_reason: Some(course.reason),
        };
        let overrides = match &self.req["overrides"] {
            Value::Null => json!({ "containerOverrides": [] }),
            o => o.clone(),
        };
        Task { view, runs, family: self.def.family.clone(), overrides }
    }
}

/// A task as ECS describes it at `now`.
fn render(t: &Task, now: i64, with_tags: bool) -> Value {
    let v = &t.view;
    let status = v.status_at(now);
    let stopped = status == "STOPPED";
    let containers: Vec<Value> = v
        .containers
        .iter()
        .map(|c| {
            let mut j = json!({
                "containerArn": c.arn, "taskArn": v.arn, "name": c.name,
                "lastStatus": match status { "PROVISIONING" => "PENDING", s => s },
            });
            if let (true, Some(code)) = (stopped, c.exit_code) {
                j["exitCode"] = json!(code);
            }
            j
        })
        .collect();
    let mut j = json!({
        "taskArn": v.arn, "clusterArn": v.cluster_arn, "taskDefinitionArn": v.task_definition_arn,
        "lastStatus": status, "desiredStatus": if stopped { "STOPPED" } else { "RUNNING" },
        "group": v.group, "overrides": t.overrides, "containers": containers, "createdAt": secs(v.created_ms),
    });
    let mut put = |k: &str, x: Option<Value>| {
        if let Some(x) = x {
            j[k] = x;
        }
    };
    put("startedBy", v.started_by.as_ref().map(|s| json!(s)));
    put("launchType", v.launch_type.as_ref().map(|s| json!(s)));
    put("startedAt", v.started_ms().filter(|s| now >= *s).map(|s| json!(secs(s))));
    if stopped {
        put("stoppedAt", Some(json!(secs(v.stopped_ms))));
        put("stopCode", Some(json!(v.stop_code.as_str())));
        put("stoppedReason", v.stopped_reason.as_ref().map(|s| json!(s)));
    }
    if with_tags {
        put("tags", Some(json!(tag_list(&v.tags))));
    }
    j
}

impl Ecs {
    pub(crate) fn create_cluster(&mut self, req: &Value) -> Result<Value, ApiError> {
        let name = req["clusterName"].as_str().unwrap_or("default");
        if !name_ok(name) {
            return Err(invalid(format!("Invalid cluster name {name:?}")));
        }
        // The same name again is the same cluster (AWS answers it idempotently).
        let c = self.clusters.entry(name.to_string()).or_insert_with(|| Cluster {
            arn: format!("arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{name}"),
            name: name.to_string(),
            tags: tags_of(&req["tags"]),
        });
        Ok(json!({ "cluster": {
            "clusterArn": c.arn, "clusterName": c.name, "status": "ACTIVE", "tags": tag_list(&c.tags),
        }}))
    }

    pub(crate) fn register(&mut self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let family = req["family"].as_str().unwrap_or_default();
        if !name_ok(family) {
            return Err(client(format!("Family {family:?} contains invalid characters or is empty")));
        }
        let mut defs = Vec::new();
        let mut containers = Vec::new();
        for c in req["containerDefinitions"].as_array().into_iter().flatten() {
            for field in ["name", "image"] {
                if c[field].as_str().unwrap_or_default().is_empty() {
                    return Err(client(format!("Container.{field} should not be null or empty.")));
                }
            }
            let essential = c["essential"].as_bool().unwrap_or(true);
            let name = c["name"].as_str().unwrap_or_default().to_string();
            containers.push(ContainerDef { name, essential, env: env_of(&c["environment"]) });
            let mut c = c.clone();
            c["essential"] = json!(essential);
            defs.push(c);
        }
        if containers.is_empty() {
            return Err(client("TaskDefinition must contain at least one container definition."));
        }
        let revisions = self.definitions.entry(family.to_string()).or_default();
        let revision = revisions.len() + 1;
        let arn = format!("arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{family}:{revision}");
        let mut body = json!({
            "taskDefinitionArn": arn, "family": family, "revision": revision, "containerDefinitions": defs,
            "status": "ACTIVE", "registeredAt": secs(now),
        });
        for k in
            ["networkMode", "requiresCompatibilities", "cpu", "memory", "taskRoleArn", "executionRoleArn"]
        {
            if !req[k].is_null() {
                body[k] = req[k].clone();
            }
        }
        let tags = tags_of(&req["tags"]);
        let out = json!({ "taskDefinition": body, "tags": tag_list(&tags) });
        revisions.push(TaskDefinition { arn, family: family.to_string(), containers, body, tags });
        Ok(out)
    }

    /// `family`, `family:revision` or the ARN; `family` alone is the latest revision.
    fn definition(&self, id: &str) -> Option<&TaskDefinition> {
        let tail = id.rsplit_once(":task-definition/").map_or(id, |(_, t)| t);
        let (family, revision) = match tail.split_once(':') {
            Some((f, r)) => (f, Some(r.parse::<usize>().ok()?)),
            None => (tail, None),
        };
        let revisions = self.definitions.get(family)?;
        let d = match revision {
            Some(r) => revisions.get(r.checked_sub(1)?)?,
            None => revisions.last()?,
        };
        (!id.starts_with("arn:") || d.arn == id).then_some(d)
    }

    fn describe_definition(&self, req: &Value) -> Result<Value, ApiError> {
        let id = req["taskDefinition"].as_str().unwrap_or_default();
        let d = self.definition(id).ok_or_else(|| client("Unable to describe task definition."))?;
        let mut out = json!({ "taskDefinition": d.body });
        let tags_asked = req["include"].as_array().is_some_and(|a| a.iter().any(|i| i == "TAGS"));
        if tags_asked {
            out["tags"] = json!(tag_list(&d.tags));
        }
        Ok(out)
    }

    /// By name or ARN (`default` when none is given).
    fn cluster(&self, id: Option<&str>) -> Result<&Cluster, ApiError> {
        let id = id.unwrap_or("default");
        let name = id.rsplit_once(":cluster/").map_or(id, |(_, n)| n);
        self.clusters
            .get(name)
            .filter(|c| !id.starts_with("arn:") || c.arn == id)
            .ok_or_else(cluster_not_found)
    }

    /// A task of the cluster, by ARN or id.
    fn find(&self, cluster: &Cluster, id: &str) -> Option<usize> {
        let arn = if id.starts_with("arn:") {
            id.to_string()
        } else {
            format!("{}/{id}", cluster.arn.replacen(":cluster/", ":task/", 1))
        };
        self.by_arn.get(&arn).copied().filter(|&i| self.tasks[i].view.cluster_arn == cluster.arn)
    }

    /// Starts the tasks, or answers the original ones of a `clientToken` used with the same
    /// parameters; the tasks made, for the harness's hook.
    fn run(&mut self, req: &Value, now: i64, rng: &mut SplitMix) -> Result<(Value, Vec<EcsTask>), ApiError> {
        validate_run(req)?;
        let cluster = self.cluster(req["cluster"].as_str())?.clone();
        let id = req["taskDefinition"].as_str().unwrap_or_default();
        let not_found = || client("TaskDefinition not found.");
        let override_env = override_env(&req["overrides"], self.definition(id).ok_or_else(not_found)?)?;
        let token = req["clientToken"].as_str().map(|t| (cluster.arn.clone(), t.to_string()));
        let params = token_params(req);
        if let Some(arns) = token.as_ref().map(|k| self.replay(k, &params, now)).transpose()?.flatten() {
            let tasks: Vec<Value> = arns
                .iter()
                .filter_map(|a| self.by_arn.get(a))
                .map(|&i| render(&self.tasks[i], now, true))
                .collect();
            return Ok((json!({ "tasks": tasks, "failures": [] }), Vec::new()));
        }
        let def = self.definition(id).ok_or_else(not_found)?;
        let launch = Launch { req, cluster: &cluster, def, override_env, now };
        let made: Vec<Task> = (0..req["count"].as_u64().unwrap_or(1)).map(|_| launch.task(rng)).collect();
        let out: Vec<Value> = made.iter().map(|t| render(t, now, true)).collect();
        let views: Vec<EcsTask> = made.iter().map(|t| t.view.clone()).collect();
        for t in made {
            self.by_arn.insert(t.view.arn.clone(), self.tasks.len());
            self.tasks.push(t);
        }
        if let Some(key) = token {
            let tasks = views.iter().map(|t| t.arn.clone()).collect();
            self.tokens.insert(key, TokenUse { params, tasks, at_ms: now });
        }
        Ok((json!({ "tasks": out, "failures": [] }), views))
    }

    /// The original tasks of a token used on the cluster within 24 hours with the same
    /// parameters; `ConflictException` for other parameters; `None`: a token not (or no longer) known.
    fn replay(
        &mut self,
        key: &(String, String),
        params: &Value,
        now: i64,
    ) -> Result<Option<Vec<String>>, ApiError> {
        let Some(used) = self.tokens.get(key).filter(|u| now - u.at_ms < TOKEN_TTL_MS) else {
            return Ok(None);
        };
        if used.params != *params {
            let ids = json!(used.tasks);
            self.token_conflicts += 1;
            return Err(ApiError::new(
                400,
                "ConflictException",
                // Not the token itself: an SDK fills it with a random UUID, and answers are hashed.
                "The request uses the same client token as a previous, but non-identical request.",
            )
            .with("resourceIds", ids));
        }
        let tasks = used.tasks.clone();
        self.token_replays += 1;
        Ok(Some(tasks))
    }

    fn describe(&self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let cluster = self.cluster(req["cluster"].as_str())?;
        let ids: Vec<&str> =
            req["tasks"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if ids.is_empty() || ids.len() > 100 {
            return Err(invalid("Tasks cannot be empty or more than 100."));
        }
        let with_tags = req["include"].as_array().is_some_and(|a| a.iter().any(|i| i == "TAGS"));
        let (mut tasks, mut failures) = (Vec::new(), Vec::new());
        for id in ids {
            match self.find(cluster, id) {
                Some(i) => tasks.push(render(&self.tasks[i], now, with_tags)),
                None => failures.push(json!({ "arn": id, "reason": "MISSING" })),
            }
        }
        Ok(json!({ "tasks": tasks, "failures": failures }))
    }

    /// In creation order; no paging.
    fn list(&self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let cluster = self.cluster(req["cluster"].as_str())?;
        let desired = req["desiredStatus"].as_str().unwrap_or("RUNNING");
        if !matches!(desired, "RUNNING" | "PENDING" | "STOPPED") {
            return Err(invalid(format!("desiredStatus {desired:?} is not RUNNING, PENDING or STOPPED")));
        }
        let (started_by, family) = (req["startedBy"].as_str(), req["family"].as_str());
        let arns: Vec<&str> = self
            .tasks
            .iter()
            .filter(|t| t.view.cluster_arn == cluster.arn)
            .filter(|t| started_by.is_none_or(|s| t.view.started_by.as_deref() == Some(s)))
            .filter(|t| family.is_none_or(|f| t.family == f))
            .filter(|t| {
                (t.view.status_at(now) == "STOPPED") == (desired == "STOPPED") && desired != "PENDING"
            })
            .map(|t| t.view.arn.as_str())
            .collect();
        Ok(json!({ "taskArns": arns }))
    }

    /// Stops a running task at once (143 from every container still running); a stopped one
    /// is answered unchanged.
    fn stop(&mut self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let cluster = self.cluster(req["cluster"].as_str())?;
        let id = req["task"].as_str().unwrap_or_default();
        let i = self.find(cluster, id).ok_or_else(|| invalid("The referenced task was not found."))?;
        let t = &mut self.tasks[i];
        if t.view.status_at(now) != "STOPPED" {
            let started = t.view.started_ms().is_some();
            for (c, run) in t.view.containers.iter_mut().zip(&t.runs) {
                let exited =
                    matches!(run, Run::Exits { after_ms, .. } if t.view.created_ms + after_ms <= now);
                if started && !exited {
                    c.exit_code = Some(SIGTERM_EXIT);
                }
            }
            t.view.stopped_ms = now;
            t.view.stop_code = EcsStopCode::UserInitiated;
            t.view.stopped_reason = req["reason"].as_str().map(str::to_string);
        }
        Ok(json!({ "task": render(t, now, true) }))
    }

    fn tags(&self, req: &Value) -> Result<Value, ApiError> {
        let arn = req["resourceArn"].as_str().unwrap_or_default();
        let tags = if let Some(c) = self.clusters.values().find(|c| c.arn == arn) {
            &c.tags
        } else if let Some(d) = self.definitions.values().flatten().find(|d| d.arn == arn) {
            &d.tags
        } else if let Some(&i) = self.by_arn.get(arn) {
            &self.tasks[i].view.tags
        } else {
            return Err(invalid(format!("The specified resource {arn} was not found.")));
        };
        Ok(json!({ "tags": tag_list(tags) }))
    }

    pub(crate) fn task(&self, arn: &str) -> Option<EcsTask> {
        self.by_arn.get(arn).map(|&i| self.tasks[i].view.clone())
    }

    pub(crate) fn all_tasks(&self) -> Vec<EcsTask> {
        self.tasks.iter().map(|t| t.view.clone()).collect()
    }
}

pub(crate) fn call(aws: &Aws, call: &Call) -> Result<Value, ApiError> {
    let req = &call.json;
    let now = aws.now_ms();
    let (out, made, hook) = {
        let mut guard = aws.lock();
        let st = &mut *guard;
        let ecs = &mut st.ecs;
        let (out, made) = match call.op.as_str() {
            "CreateCluster" => (ecs.create_cluster(req)?, Vec::new()),
            "RegisterTaskDefinition" => (ecs.register(req, now)?, Vec::new()),
            "DescribeTaskDefinition" => (ecs.describe_definition(req)?, Vec::new()),
            "ListTagsForResource" => (ecs.tags(req)?, Vec::new()),
            "RunTask" => ecs.run(req, now, &mut st.rng)?,
            "DescribeTasks" => (ecs.describe(req, now)?, Vec::new()),
            "ListTasks" => (ecs.list(req, now)?, Vec::new()),
            "StopTask" => (ecs.stop(req, now)?, Vec::new()),
            op => return Err(ApiError::unknown_operation("ECS", op)),
        };
        (out, made, st.on_run_task.clone())
    };
    // The hook runs outside the lock: it may read the simulated AWS.
    if let Some(hook) = hook {
        made.iter().for_each(|t| hook(t));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_767_225_600_000;

    /// GIVEN a cluster `c` and a task definition `job` whose container `main` has `env`.
    fn given(env: &[(&str, &str)]) -> Ecs {
        let mut ecs = Ecs::default();
        ecs.create_cluster(&json!({ "clusterName": "c" })).unwrap();
        let env: Vec<Value> = env.iter().map(|(k, v)| json!({ "name": k, "value": v })).collect();
        let def = json!({ "family": "job", "containerDefinitions": [
            { "name": "main", "image": "busybox", "memory": 128, "environment": env },
        ]});
        ecs.register(&def, T0).unwrap();
        ecs
    }

    fn run_with(ecs: &mut Ecs, extra: Value, now: i64) -> Result<Vec<Value>, ApiError> {
        let mut req = json!({ "cluster": "c", "taskDefinition": "job", "launchType": "FARGATE" });
        for (k, v) in extra.as_object().unwrap() {
            req[k] = v.clone();
        }
        // a seed per task count: every task gets its own id
        let (out, _) = ecs.run(&req, now, &mut SplitMix::new(ecs.tasks.len() as u64))?;
        Ok(out["tasks"].as_array().unwrap().clone())
    }

    fn env_override(pairs: &[(&str, &str)]) -> Value {
        let env: Vec<Value> = pairs.iter().map(|(k, v)| json!({ "name": k, "value": v })).collect();
        json!({ "containerOverrides": [{ "name": "main", "environment": env }] })
    }

    fn described(ecs: &Ecs, arn: &str, now: i64) -> Value {
        ecs.describe(&json!({ "cluster": "c", "tasks": [arn] }), now).unwrap()["tasks"][0].clone()
    }

    #[test]
    fn a_task_provisions_runs_then_stops_with_its_exit_code_in_simulated_time() {
        let mut ecs = given(&[(EXIT_CODE_VAR, "3"), (RUN_SECS_VAR, "60")]);
        let t =
            run_with(&mut ecs, json!({ "overrides": env_override(&[(RUN_SECS_VAR, "2.5")]) }), T0).unwrap();
        let arn = t[0]["taskArn"].as_str().unwrap();
        let id = arn.rsplit('/').next().unwrap();
        assert!(arn.starts_with("arn:aws:ecs:us-east-1:000000000000:task/c/"), "{arn}");
        assert!(id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        let at = |ms: i64| described(&ecs, arn, T0 + ms);
        let first = at(999);
        assert_eq!(
            (first["lastStatus"].as_str(), first["desiredStatus"].as_str()),
            (Some("PROVISIONING"), Some("RUNNING"))
        );
        assert!(first["containers"][0].get("exitCode").is_none() && first.get("startedAt").is_none());
        let running = at(1_000);
        assert_eq!(running["lastStatus"], "RUNNING");
        assert_eq!(running["startedAt"], json!(secs(T0 + 1_000)));
        assert!(at(2_499)["containers"][0].get("exitCode").is_none(), "no exit code while running");
        let stopped = at(2_500);
        assert_eq!(stopped["lastStatus"], "STOPPED");
        assert_eq!(stopped["desiredStatus"], "STOPPED");
        assert_eq!(stopped["stopCode"], "EssentialContainerExited");
        assert_eq!(stopped["stoppedReason"], "Essential container in task exited");
        assert_eq!(stopped["stoppedAt"], json!(secs(T0 + 2_500)));
        assert_eq!(stopped["containers"][0]["lastStatus"], "STOPPED");
        assert_eq!(stopped["containers"][0]["exitCode"], 3);
        assert_eq!(stopped["overrides"], env_override(&[(RUN_SECS_VAR, "2.5")]));
        let view = ecs.task(arn).unwrap();
        assert_eq!((view.exit_code_at(T0 + 2_499), view.exit_code_at(T0 + 2_500)), (None, Some(3)));
    }

    #[test]
    fn a_task_carries_its_definitions_tags_when_asked_to_propagate_them() {
        let mut ecs = Ecs::default();
        ecs.create_cluster(&json!({ "clusterName": "c" })).unwrap();
        let def = json!({ "family": "job", "containerDefinitions": [{ "name": "main", "image": "busybox" }],
            "tags": [{ "key": "sundial-tenant", "value": "t1" }, { "key": "team", "value": "a" }] });
        ecs.register(&def, T0).unwrap();
        let tags = json!([{ "key": "team", "value": "b" }]);
        let t = run_with(&mut ecs, json!({ "propagateTags": "TASK_DEFINITION", "tags": tags.clone() }), T0)
            .unwrap();
        assert_eq!(
            t[0]["tags"],
            json!([{ "key": "sundial-tenant", "value": "t1" }, { "key": "team", "value": "b" }])
        );
        let t = run_with(&mut ecs, json!({ "tags": tags.clone() }), T0).unwrap();
        assert_eq!(t[0]["tags"], tags);
    }

    #[test]
    fn a_client_token_replays_the_same_parameters_and_refuses_others() {
        let mut ecs = given(&[]);
        let req = json!({ "clientToken": "fire-1", "startedBy": "sundial", "overrides": env_override(&[("A", "1")]) });
        let first = run_with(&mut ecs, req.clone(), T0).unwrap();
        // the same token and parameters, a minute later: the original task, no new one
        let again = run_with(&mut ecs, req.clone(), T0 + 60_000).unwrap();
        assert_eq!(again[0]["taskArn"], first[0]["taskArn"]);
        assert_eq!((ecs.tasks.len(), ecs.token_replays), (1, 1));
        // the same token with another environment: ConflictException
        let mut other = req.clone();
        other["overrides"] = env_override(&[("A", "2")]);
        let e = run_with(&mut ecs, other, T0 + 60_000).unwrap_err();
        assert_eq!((e.code.as_str(), ecs.token_conflicts), ("ConflictException", 1));
        assert_eq!(e.extra["resourceIds"], json!([first[0]["taskArn"]]));
        // scoped to the cluster: the same token elsewhere starts a task
        ecs.create_cluster(&json!({ "clusterName": "d" })).unwrap();
        let mut elsewhere = req.clone();
        elsewhere["cluster"] = json!("d");
        assert_ne!(run_with(&mut ecs, elsewhere, T0).unwrap()[0]["taskArn"], first[0]["taskArn"]);
        // forgotten after 24 hours: the same request starts a new task
        let late = run_with(&mut ecs, req, T0 + TOKEN_TTL_MS).unwrap();
        assert_ne!(late[0]["taskArn"], first[0]["taskArn"]);
        assert_eq!(ecs.tasks.len(), 3);
    }

    #[test]
    fn list_tasks_filters_by_started_by_family_and_desired_status() {
        let mut ecs = given(&[]);
        let long = json!({ "startedBy": "s1", "overrides": env_override(&[(RUN_SECS_VAR, "600")]) });
        let a = run_with(&mut ecs, long.clone(), T0).unwrap()[0]["taskArn"].clone();
        let b = run_with(&mut ecs, json!({ "startedBy": "s1" }), T0).unwrap()[0]["taskArn"].clone();
        let c = run_with(&mut ecs, json!({ "startedBy": "s2" }), T0).unwrap()[0]["taskArn"].clone();
        let list = |q: Value, now: i64| {
            let mut req = json!({ "cluster": "c" });
            for (k, v) in q.as_object().unwrap() {
                req[k] = v.clone();
            }
            ecs.list(&req, now).unwrap()["taskArns"].clone()
        };
        assert_eq!(list(json!({ "startedBy": "s1" }), T0), json!([a, b]));
        assert_eq!(list(json!({}), T0), json!([a, b, c]));
        // b stops after its default second: STOPPED, and no longer in the default (RUNNING) listing
        assert_eq!(list(json!({ "startedBy": "s1" }), T0 + 1_000), json!([a]));
        assert_eq!(list(json!({ "startedBy": "s1", "desiredStatus": "STOPPED" }), T0 + 1_000), json!([b]));
        assert_eq!(list(json!({ "family": "job", "desiredStatus": "STOPPED" }), T0 + 1_000), json!([b, c]));
        assert_eq!(list(json!({ "family": "other" }), T0), json!([]));
        let e = ecs.list(&json!({ "cluster": "none" }), T0).unwrap_err();
        assert_eq!(e.code, "ClusterNotFoundException");
    }

    #[test]
    fn stop_task_stops_at_once_with_143_and_a_stopped_task_is_answered_unchanged() {
        let mut ecs = given(&[(RUN_SECS_VAR, "600"), (EXIT_CODE_VAR, "0")]);
        let arn = run_with(&mut ecs, json!({}), T0).unwrap()[0]["taskArn"].as_str().unwrap().to_string();
        let id = arn.rsplit('/').next().unwrap().to_string();
        let stop = |ecs: &mut Ecs, reason: &str, now: i64| {
            ecs.stop(&json!({ "cluster": "c", "task": id, "reason": reason }), now).unwrap()["task"].clone()
        };
        let t = stop(&mut ecs, "deadline", T0 + 5_000);
        assert_eq!(
            (t["lastStatus"].as_str(), t["desiredStatus"].as_str()),
            (Some("STOPPED"), Some("STOPPED"))
        );
        assert_eq!(
            (t["stopCode"].as_str(), t["stoppedReason"].as_str()),
            (Some("UserInitiated"), Some("deadline"))
        );
        assert_eq!(t["containers"][0]["exitCode"], SIGTERM_EXIT);
        assert_eq!(t["stoppedAt"], json!(secs(T0 + 5_000)));
        assert_eq!(stop(&mut ecs, "again", T0 + 9_000), t, "a stopped task is answered unchanged");
        assert_eq!(described(&ecs, &arn, T0 + 9_000), {
            let mut d = t.clone();
            d.as_object_mut().unwrap().remove("tags");
            d
        });
        // a task that ended on its own stays as it ended
        let done =
            run_with(&mut ecs, json!({ "overrides": env_override(&[(RUN_SECS_VAR, "1")]) }), T0).unwrap();
        let done = done[0]["taskArn"].as_str().unwrap();
        let t = ecs.stop(&json!({ "cluster": "c", "task": done }), T0 + 2_000).unwrap()["task"].clone();
        assert_eq!(
            (t["stopCode"].as_str(), t["containers"][0]["exitCode"].as_i64()),
            (Some("EssentialContainerExited"), Some(0))
        );
        let e = ecs.stop(&json!({ "cluster": "c", "task": "0123" }), T0).unwrap_err();
        assert_eq!(e.code, "InvalidParameterException");
    }

    #[test]
    fn exit_code_none_never_starts_and_stops_without_an_exit_code() {
        let mut ecs = given(&[]);
        let ov = env_override(&[(EXIT_CODE_VAR, "none"), (RUN_SECS_VAR, "3")]);
        let arn = run_with(&mut ecs, json!({ "overrides": ov }), T0).unwrap()[0]["taskArn"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(described(&ecs, &arn, T0 + 2_999)["lastStatus"], "PROVISIONING", "never RUNNING");
        let t = described(&ecs, &arn, T0 + 3_000);
        assert_eq!(
            (t["lastStatus"].as_str(), t["stopCode"].as_str()),
            (Some("STOPPED"), Some("TaskFailedToStart"))
        );
        assert_eq!(t["stoppedReason"], "CannotPullContainerError: emulated");
        assert!(t["containers"][0].get("exitCode").is_none() && t.get("startedAt").is_none());
        // stopped before its time, it still reports no exit code: it never ran
        let arn = run_with(&mut ecs, json!({ "overrides": env_override(&[(EXIT_CODE_VAR, "none")]) }), T0)
            .unwrap()[0]["taskArn"]
            .clone();
        let t = ecs.stop(&json!({ "cluster": "c", "task": arn }), T0 + 500).unwrap()["task"].clone();
        assert!(t["containers"][0].get("exitCode").is_none());
    }

    #[test]
    fn the_environment_decides_each_container_and_the_first_essential_exit_ends_the_task() {
        let env =
            |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(emulated(&env(&[])), Run::Exits { after_ms: 1_000, code: 0 });
        assert_eq!(
            emulated(&env(&[(RUN_SECS_VAR, " 0.25 "), (EXIT_CODE_VAR, "-1")])),
            Run::Exits { after_ms: 250, code: -1 }
        );
        for bad in
            [(RUN_SECS_VAR, "soon"), (RUN_SECS_VAR, "-1"), (RUN_SECS_VAR, "inf"), (EXIT_CODE_VAR, "1.5")]
        {
            let Run::NeverStarts { reason, .. } = emulated(&env(&[bad])) else { panic!("{bad:?} accepted") };
            assert!(
                reason.starts_with("CannotStartContainerError: emulated: ") && reason.contains(bad.0),
                "{reason}"
            );
        }
        // a sidecar that ends first keeps its code; one still running when the essential exits gets 143
        let c = course(&[
            (false, Run::Exits { after_ms: 500, code: 7 }),
            (true, Run::Exits { after_ms: 2_000, code: 1 }),
            (false, Run::Exits { after_ms: 9_000, code: 0 }),
        ]);
        assert_eq!((c.stopped_after_ms, c.exit_codes), (2_000, vec![Some(7), Some(1), Some(143)]));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_hook_sees_each_task_created_once_and_the_harness_reads_how_it_ended() {
        use std::sync::{Arc, Mutex};
        // GIVEN a cluster and a definition set up from the harness, and a ledger on the hook
        let aws = Aws::new(3, T0);
        let cluster = aws.create_cluster("batch", &[("sundial-tenant", "t1")]);
        let def = aws.register_task_definition("job", &[("main", &[(EXIT_CODE_VAR, "4")])], &[]);
        assert_eq!(def, "arn:aws:ecs:us-east-1:000000000000:task-definition/job:1");
        let ledger = Arc::new(Mutex::new(Vec::new()));
        let seen = ledger.clone();
        aws.on_run_task(Arc::new(move |t: &EcsTask| seen.lock().unwrap().push(t.clone())));
        // WHEN the SDK runs a task, and runs it again with the same clientToken
        let ecs = aws_sdk_ecs::Client::new(&aws.sdk_config());
        let fire = aws_sdk_ecs::types::KeyValuePair::builder().name("SUNDIAL_FIRE").value("r1").build();
        let main = aws_sdk_ecs::types::ContainerOverride::builder().name("main").environment(fire).build();
        let overrides = aws_sdk_ecs::types::TaskOverride::builder().container_overrides(main).build();
        let run = || {
            let (req, o) = (ecs.run_task(), overrides.clone());
            req.cluster(&cluster)
                .task_definition("job")
                .started_by("fire-r1")
                .client_token("fire-r1")
                .overrides(o)
        };
        let first = run().send().await.unwrap().tasks()[0].task_arn().unwrap().to_string();
        let again = run().send().await.unwrap().tasks()[0].task_arn().unwrap().to_string();
        // THEN the hook saw one task, with its overrides' environment and its creation instant
        assert_eq!(again, first);
        let seen = ledger.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        let t = &seen[0];
        assert_eq!(
            (t.arn.as_str(), t.cluster_arn.as_str(), t.task_definition_arn.as_str()),
            (first.as_str(), cluster.as_str(), def.as_str())
        );
        assert_eq!(t.started_by.as_deref(), Some("fire-r1"));
        let env: BTreeMap<String, String> = [("SUNDIAL_FIRE".to_string(), "r1".to_string())].into();
        assert_eq!(t.override_env, [("main".to_string(), env)].into());
        assert!(t.created_ms > T0 && t.status_at(t.created_ms) == "PROVISIONING");
        assert_eq!(aws.ecs_token_replays(), 1);
        // and, once its second has passed in simulated time, the harness reads how it ended
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let end = aws.ecs_task(&first).unwrap();
        assert_eq!((end.status_at(aws.now_ms()), end.exit_code_at(aws.now_ms())), ("STOPPED", Some(4)));
        assert_eq!(end.stop_code, EcsStopCode::EssentialContainerExited);
        assert_eq!(aws.ecs_tasks(), vec![end]);
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let mut ecs = given(&[]);
        let code = |r: Result<Vec<Value>, ApiError>| r.map(|_| ()).unwrap_err().code;
        assert_eq!(code(run_with(&mut ecs, json!({ "cluster": "none" }), T0)), "ClusterNotFoundException");
        assert_eq!(code(run_with(&mut ecs, json!({ "taskDefinition": "job:2" }), T0)), "ClientException");
        let ov = json!({ "containerOverrides": [{ "name": "sidecar", "environment": [] }] });
        assert_eq!(code(run_with(&mut ecs, json!({ "overrides": ov }), T0)), "InvalidParameterException");
        assert_eq!(code(run_with(&mut ecs, json!({ "startedBy": "a b" }), T0)), "InvalidParameterException");
        assert_eq!(
            code(run_with(&mut ecs, json!({ "clientToken": "x".repeat(65) }), T0)),
            "InvalidParameterException"
        );
        assert_eq!(code(run_with(&mut ecs, json!({ "count": 11 }), T0)), "InvalidParameterException");
        let d = ecs
            .describe(&json!({ "cluster": "c", "tasks": ["0123456789abcdef0123456789abcdef"] }), T0)
            .unwrap();
        assert_eq!(
            d["failures"],
            json!([{ "arn": "0123456789abcdef0123456789abcdef", "reason": "MISSING" }])
        );
        let e = ecs.describe_definition(&json!({ "taskDefinition": "nope" })).unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("ClientException", "Unable to describe task definition.")
        );
    }
}
