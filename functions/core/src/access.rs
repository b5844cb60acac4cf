//! IAM access recording: which AWS action each Sundial function performs on which resource.
//!
//! Why: the emulators check no IAM, so a function whose role lacks a permission passes every
//! test here and fails on a real account (a review once found the API role without
//! `sqs:SendMessage` and `dynamodb:BatchGetItem`). So the test suite records what each function
//! really does and `infra/test/iam.test.ts` checks every recorded call against the synthesized
//! template's policy of that function's role: a call the role does not allow fails that test.
//!
//! How:
//! - Every entry point of a function runs inside [`scope`] with its [`Role`] (the tick, a
//!   fanned-out scan, the reconciler, a worker message, an API request). The scope is a tokio
//!   task-local, so a concurrent tick and API request in one process (the local run) are told
//!   apart. An inner scope keeps the outer role: a tick that scans in-process still calls as the
//!   tick's role.
//! - When `SUNDIAL_IAM_RECORD` names a file, the SDK clients built by [`crate::aws::Clients`] and
//!   [`crate::metering::Meter::clients`] carry an [`AccessRecorder`]. Each request made inside a
//!   scope appends one JSON line (deduplicated per process) to that file:
//!   `{"role":"api","action":"sqs:SendMessage","resource":"queue:pool"}`. Requests outside any
//!   scope (test fixtures, provisioning) are not any function's and are not recorded.
//! - Resources are recorded by what they are to Sundial, not by name, because every test uses
//!   its own table and queue names: `table:jobs`, `index:executions/open`, `queue:pool` (a pool
//!   queue; for a worker its own pool's), `queue:other-pool`, `queue:low` (its low lane),
//!   `queue:other-low`, `queue:dlq`, `queue:other-dlq`,
//!   `queue:target`, `function:scan`, `function:target`, `secret:target`, `bus:events`, `role:{name}`,
//!   `user:{name}`. DynamoDB deletes also record the item's partition key (`leadingKey`), so the
//!   construct's condition on `dynamodb:LeadingKeys` is evaluated too.
//!
//! Without `SUNDIAL_IAM_RECORD` nothing is attached: deployed functions pay nothing.

use crate::config::Config;
use crate::store::items::attr;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// A Sundial function, as the CDK construct gives each its own role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The per-minute tick (and the shards it scans in-process).
    Tick,
    /// A fanned-out scan of a shard range.
    Scan,
    /// The reconciler.
    Reconcile,
    /// A worker (Lambda or ECS) of one pool.
    Worker,
    /// The HTTP API.
    Api,
    /// An in-process handler's own code, run by a worker: its calls need grants the deployer
    /// gives the worker role for the handler (its tables, its downstreams), not Sundial's.
    Handler,
}

impl Role {
    /// The name used in the recording.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Tick => "tick",
            Role::Scan => "scan",
            Role::Reconcile => "reconcile",
            Role::Worker => "worker",
            Role::Api => "api",
            Role::Handler => "handler",
        }
    }
}

/// Who is calling, and the names that tell Sundial's own resources apart.
#[derive(Debug, Clone)]
pub struct Scope {
    role: Role,
    jobs_table: String,
    executions_table: String,
    queue_prefix: String,
    dlq_suffix: String,
    pools: Vec<String>,
    /// A worker's own pool.
    own_pool: Option<String>,
    /// The tick's scan function.
    scan_function: Option<String>,
}

impl Scope {
    /// The scope of `role` over the resources of `cfg`.
    pub fn new(role: Role, cfg: &Config) -> Self {
        Scope {
            role,
            jobs_table: cfg.jobs_table.clone(),
            executions_table: cfg.executions_table.clone(),
            queue_prefix: cfg.queue_prefix.clone(),
            dlq_suffix: crate::resources::Resources::get().queues.dlq_suffix.clone(),
            pools: cfg.pools.clone(),
            own_pool: None,
            scan_function: None,
        }
    }

    /// A worker of `pool`.
    pub fn pool(mut self, pool: &str) -> Self {
        self.own_pool = Some(pool.to_string());
        self
    }

    /// The tick, which invokes `function` to fan out.
    pub fn scan_function(mut self, function: Option<&str>) -> Self {
        self.scan_function = function.map(str::to_string);
        self
    }

    fn table(&self, name: &str) -> String {
        if name == self.jobs_table {
            "jobs".into()
        } else if name == self.executions_table {
            "executions".into()
        } else {
            format!("other:{name}")
        }
    }

    fn queue(&self, name: &str) -> String {
        let pool = |n: &str| {
            n.strip_prefix(self.queue_prefix.as_str())
                .filter(|p| self.pools.iter().any(|x| x == p))
                .map(str::to_string)
        };
        // A configured pool's own name wins over a `-low`/`-dlq` reading of it.
        let (kind, pool) = match pool(name) {
            Some(p) => ("pool", p),
            None => match name.strip_suffix(self.dlq_suffix.as_str()).and_then(pool) {
                Some(p) => ("dlq", p),
                None => match name.strip_suffix(crate::priority::LOW_LANE_SUFFIX).and_then(pool) {
                    Some(p) => ("low", p),
                    None => return "queue:target".into(),
                },
            },
        };
        match &self.own_pool {
            Some(own) if *own != pool => format!("queue:other-{kind}"),
            _ => format!("queue:{kind}"),
        }
    }

    fn function(&self, name: &str) -> String {
        let bare = |n: &str| {
            n.rsplit(':')
                .find(|s| !s.is_empty() && !s.chars().all(|c| c.is_ascii_digit()) && *s != "$LATEST")
                .map(str::to_string)
        };
        match &self.scan_function {
            Some(f) if f == name || bare(f) == bare(name) => "function:scan".into(),
            _ => "function:target".into(),
        }
    }
}

tokio::task_local! {
    static SCOPE: Arc<Scope>;
}

/// Runs `fut` as `scope`'s role, unless it already runs inside a scope (the outer role calls).
///
/// The future is boxed: the entry points' futures are large, and nesting them once more on the
/// stack overflowed the 2 MiB test threads in debug builds.
pub async fn scope<F: Future>(scope: Scope, fut: F) -> F::Output {
    let fut = Box::pin(fut);
    if SCOPE.try_with(|_| ()).is_ok() {
        fut.await
    } else {
        SCOPE.scope(Arc::new(scope), fut).await
    }
}

/// The current scope, to carry into a spawned task ([`within`]).
pub fn current() -> Option<Arc<Scope>> {
    SCOPE.try_with(Arc::clone).ok()
}

/// Runs `fut` inside `scope` (from [`current`]) if there is one: for tasks a scoped entry point
/// spawns.
pub async fn within<F: Future>(scope: Option<Arc<Scope>>, fut: F) -> F::Output {
    match scope {
        Some(s) => SCOPE.scope(s, Box::pin(fut)).await,
        None => fut.await,
    }
}

/// Runs user code (an in-process handler) inside the current scope as [`Role::Handler`]: its
/// calls are recorded apart, since the construct cannot know the handler's resources.
pub async fn user_code<F: Future>(fut: F) -> F::Output {
    let scope = current().map(|s| Arc::new(Scope { role: Role::Handler, ..(*s).clone() }));
    within(scope, fut).await
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    /// The calling function.
    pub role: &'static str,
    /// The IAM action, e.g. `dynamodb:PutItem`.
    pub action: String,
    /// The resource as Sundial sees it (module docs).
    pub resource: String,
    /// A DynamoDB item's partition key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leading_key: Option<String>,
}

struct Sink {
    file: Mutex<std::fs::File>,
    seen: Mutex<HashSet<Access>>,
}

fn sink() -> Option<&'static Sink> {
    static SINK: OnceLock<Option<Sink>> = OnceLock::new();
    SINK.get_or_init(|| {
        let path = crate::config::iam_record_path()?;
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => Some(Sink { file: Mutex::new(file), seen: Mutex::new(HashSet::new()) }),
            Err(e) => {
                tracing::error!(path = ?path, error = %e, "cannot open the IAM recording file; recording nothing");
                None
            }
        }
    })
    .as_ref()
}

/// Whether calls are being recorded (`SUNDIAL_IAM_RECORD` is set).
pub fn recording() -> bool {
    sink().is_some()
}

fn write(a: Access) {
    let Some(s) = sink() else { return };
    let new = s.seen.lock().map(|mut seen| seen.insert(a.clone())).unwrap_or(false);
    if !new {
        return;
    }
    if let (Ok(line), Ok(mut f)) = (serde_json::to_string(&a), s.file.lock()) {
        // One write per line: appends of a few hundred bytes are not interleaved between the
        // processes of a test run.
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// Records one call made without an intercepted client (the API's IAM tag reads), if inside a
/// scope: `action` as IAM names it, `resource` in this module's vocabulary.
pub fn note(action: &str, resource: String) {
    if let Some(scope) = current() {
        write(Access { role: scope.role.as_str(), action: action.to_string(), resource, leading_key: None });
    }
}

/// The interceptor of one service's client.
#[derive(Debug, Clone)]
pub struct AccessRecorder {
    service: &'static str,
}

impl AccessRecorder {
    /// A recorder for the client of `service` (`dynamodb`, `sqs`, `lambda`, `secretsmanager`, `events`,
    /// `iam`: the IAM action prefix).
    pub fn new(service: &'static str) -> Self {
        AccessRecorder { service }
    }
}

fn pk_of(key: Option<&HashMap<String, AttributeValue>>) -> Option<String> {
    key.and_then(|k| k.get(attr::PK)).and_then(|v| v.as_s().ok()).cloned()
}

fn queue_name(url: Option<&str>) -> &str {
    url.unwrap_or_default().rsplit('/').next().unwrap_or_default()
}

impl AccessRecorder {
    /// The (action, resource, leading key) triples of one request.
    fn accesses(
        &self,
        op: &str,
        input: &aws_smithy_runtime_api::client::interceptors::context::Input,
        s: &Scope,
    ) -> Vec<(String, String, Option<String>)> {
        let act = |a: &str| format!("{}:{a}", self.service);
        let mut out = Vec::new();
        match self.service {
            "dynamodb" => {
                use aws_sdk_dynamodb::operation as op_;
                let table = |t: Option<&str>| format!("table:{}", s.table(t.unwrap_or_default()));
                if let Some(i) = input.downcast_ref::<op_::get_item::GetItemInput>() {
                    out.push((act("GetItem"), table(i.table_name()), pk_of(i.key())));
                } else if let Some(i) = input.downcast_ref::<op_::put_item::PutItemInput>() {
                    out.push((act("PutItem"), table(i.table_name()), pk_of(i.item())));
                } else if let Some(i) = input.downcast_ref::<op_::update_item::UpdateItemInput>() {
                    out.push((act("UpdateItem"), table(i.table_name()), pk_of(i.key())));
                } else if let Some(i) = input.downcast_ref::<op_::delete_item::DeleteItemInput>() {
                    out.push((act("DeleteItem"), table(i.table_name()), pk_of(i.key())));
                } else if let Some(i) = input.downcast_ref::<op_::query::QueryInput>() {
                    let t = s.table(i.table_name().unwrap_or_default());
                    let r = match i.index_name() {
                        Some(ix) => format!("index:{t}/{ix}"),
                        None => format!("table:{t}"),
                    };
                    out.push((act("Query"), r, None));
                } else if let Some(i) = input.downcast_ref::<op_::batch_get_item::BatchGetItemInput>() {
                    for (t, keys) in i.request_items().into_iter().flatten() {
                        for k in keys.keys() {
                            out.push((act("BatchGetItem"), table(Some(t)), pk_of(Some(k))));
                        }
                    }
                } else if let Some(i) = input.downcast_ref::<op_::batch_write_item::BatchWriteItemInput>() {
                    for (t, writes) in i.request_items().into_iter().flatten() {
                        for w in writes {
                            let pk = w
                                .put_request()
                                .map(|p| pk_of(Some(p.item())))
                                .or_else(|| w.delete_request().map(|d| pk_of(Some(d.key()))));
                            out.push((act("BatchWriteItem"), table(Some(t)), pk.flatten()));
                        }
                    }
                } else if let Some(i) =
                    input.downcast_ref::<op_::transact_write_items::TransactWriteItemsInput>()
                {
                    // IAM authorises a transaction by the action of each item in it.
                    for item in i.transact_items() {
                        if let Some(p) = item.put() {
                            out.push((act("PutItem"), table(Some(p.table_name())), pk_of(Some(p.item()))));
                        } else if let Some(u) = item.update() {
                            out.push((act("UpdateItem"), table(Some(u.table_name())), pk_of(Some(u.key()))));
                        } else if let Some(d) = item.delete() {
                            out.push((act("DeleteItem"), table(Some(d.table_name())), pk_of(Some(d.key()))));
                        } else if let Some(c) = item.condition_check() {
                            out.push((
                                act("ConditionCheckItem"),
                                table(Some(c.table_name())),
                                pk_of(Some(c.key())),
                            ));
                        }
                    }
                } else if let Some(i) = input.downcast_ref::<op_::transact_get_items::TransactGetItemsInput>()
                {
                    for g in i.transact_items().iter().filter_map(|t| t.get()) {
                        out.push((act("GetItem"), table(Some(g.table_name())), pk_of(Some(g.key()))));
                    }
                } else {
                    out.push((act(op), "unknown".into(), None));
                }
            }
            "sqs" => {
                use aws_sdk_sqs::operation as q;
                let (action, name) = if let Some(i) =
                    input.downcast_ref::<q::send_message::SendMessageInput>()
                {
                    ("SendMessage", queue_name(i.queue_url()))
                } else if let Some(i) = input.downcast_ref::<q::send_message_batch::SendMessageBatchInput>() {
                    ("SendMessage", queue_name(i.queue_url()))
                } else if let Some(i) = input.downcast_ref::<q::receive_message::ReceiveMessageInput>() {
                    ("ReceiveMessage", queue_name(i.queue_url()))
                } else if let Some(i) = input.downcast_ref::<q::delete_message::DeleteMessageInput>() {
                    ("DeleteMessage", queue_name(i.queue_url()))
                } else if let Some(i) =
                    input.downcast_ref::<q::delete_message_batch::DeleteMessageBatchInput>()
                {
                    ("DeleteMessage", queue_name(i.queue_url()))
                } else if let Some(i) =
                    input.downcast_ref::<q::change_message_visibility::ChangeMessageVisibilityInput>()
                {
                    ("ChangeMessageVisibility", queue_name(i.queue_url()))
                } else if let Some(i) = input
                    .downcast_ref::<q::change_message_visibility_batch::ChangeMessageVisibilityBatchInput>(
                ) {
                    ("ChangeMessageVisibility", queue_name(i.queue_url()))
                } else if let Some(i) =
                    input.downcast_ref::<q::get_queue_attributes::GetQueueAttributesInput>()
                {
                    ("GetQueueAttributes", queue_name(i.queue_url()))
                } else if let Some(i) = input.downcast_ref::<q::get_queue_url::GetQueueUrlInput>() {
                    ("GetQueueUrl", i.queue_name().unwrap_or_default())
                } else {
                    out.push((act(op), "unknown".into(), None));
                    return out;
                };
                out.push((act(action), s.queue(name), None));
            }
            "lambda" => {
                if let Some(i) = input.downcast_ref::<aws_sdk_lambda::operation::invoke::InvokeInput>() {
                    out.push((
                        act("InvokeFunction"),
                        s.function(i.function_name().unwrap_or_default()),
                        None,
                    ));
                } else {
                    out.push((act(op), "unknown".into(), None));
                }
            }
            "secretsmanager" => {
                let r = if op == "GetSecretValue" { "secret:target" } else { "unknown" };
                out.push((act(op), r.into(), None));
            }
            "events" => {
                // The only bus Sundial writes to is its own (`SUNDIAL_EVENT_BUS`).
                let r = if op == "PutEvents" { "bus:events" } else { "unknown" };
                out.push((act(op), r.into(), None));
            }
            _ => out.push((act(op), "unknown".into(), None)),
        }
        out
    }
}

impl Intercept for AccessRecorder {
    fn name(&self) -> &'static str {
        "SundialAccessRecorder"
    }

    // As in the meter: the operation's `Metadata` is in the bag only from this hook on.
    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(scope) = current() else { return Ok(()) };
        let Some(meta) = cfg.load::<Metadata>() else { return Ok(()) };
        for (action, resource, leading_key) in self.accesses(meta.name(), context.input(), &scope) {
            // Only deletes are conditioned on the key in the construct's policies; keeping the
            // key of every read and write would make a line per item the suite touches.
            let leading_key = leading_key.filter(|_| action == "dynamodb:DeleteItem");
            write(Access { role: scope.role.as_str(), action, resource, leading_key });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Config {
        Config {
            jobs_table: "t-jobs".into(),
            executions_table: "t-execs".into(),
            queue_prefix: "t-".into(),
            pools: vec!["default".into(), "batch".into()],
            shards: 16,
            horizon_secs: 60,
            targets: Default::default(),
            event_bus: None,
        }
    }

    #[test]
    fn resources_are_named_by_what_they_are_to_sundial() {
        let s = Scope::new(Role::Api, &cfg());
        assert_eq!(s.table("t-jobs"), "jobs");
        assert_eq!(s.table("t-execs"), "executions");
        assert_eq!(s.table("x"), "other:x");
        assert_eq!(s.queue("t-default"), "queue:pool");
        assert_eq!(s.queue("t-batch-dlq"), "queue:dlq");
        assert_eq!(s.queue("t-batch-low"), "queue:low");
        assert_eq!(s.queue("t-nope"), "queue:target");
        assert_eq!(s.queue("orders"), "queue:target");
        let w = Scope::new(Role::Worker, &cfg()).pool("batch");
        assert_eq!(w.queue("t-batch"), "queue:pool");
        assert_eq!(w.queue("t-batch-dlq"), "queue:dlq");
        assert_eq!(w.queue("t-default"), "queue:other-pool");
        assert_eq!(w.queue("t-default-dlq"), "queue:other-dlq");
        assert_eq!(w.queue("t-batch-low"), "queue:low");
        assert_eq!(w.queue("t-default-low"), "queue:other-low");
        let t = Scope::new(Role::Tick, &cfg()).scan_function(Some("sundial-scan"));
        assert_eq!(t.function("sundial-scan"), "function:scan");
        assert_eq!(
            t.function("arn:aws:lambda:eu-west-1:123456789012:function:sundial-scan"),
            "function:scan"
        );
        assert_eq!(t.function("other"), "function:target");
    }

    #[tokio::test]
    async fn the_outer_scope_is_the_caller() {
        let outer = Scope::new(Role::Tick, &cfg());
        let role = scope(outer, async {
            scope(Scope::new(Role::Scan, &cfg()), async { current().map(|s| s.role) }).await
        })
        .await;
        assert_eq!(role, Some(Role::Tick));
        assert!(current().is_none());
        let carried = scope(Scope::new(Role::Worker, &cfg()), async {
            let s = current();
            tokio::spawn(within(s, async { current().map(|s| s.role) })).await.ok().flatten()
        })
        .await;
        assert_eq!(carried, Some(Role::Worker));
        // a handler's own code is recorded apart, and the worker's scope can be carried back in
        let (inner, back) = scope(Scope::new(Role::Worker, &cfg()), async {
            let worker = current();
            user_code(async {
                (current().map(|s| s.role), within(worker, async { current().map(|s| s.role) }).await)
            })
            .await
        })
        .await;
        assert_eq!((inner, back), (Some(Role::Handler), Some(Role::Worker)));
    }
}
