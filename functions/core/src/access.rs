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
//! - When the test instrumentation is installed (`sundial_testkit::access::install`, which
//!   reads `SUNDIAL_IAM_RECORD`), the SDK clients built by [`crate::aws::Clients`] carry its
//!   `AccessRecorder`. Each request made inside a
//!   scope appends one JSON line (deduplicated per process) to that file:
//!   `{"role":"api","action":"sqs:SendMessage","resource":"queue:pool"}`. Requests outside any
//!   scope (test fixtures, provisioning) are not any function's and are not recorded.
//! - Resources are recorded by what they are to Sundial, not by name, because every test uses
//!   its own table and queue names: `table:jobs`, `index:executions/open`, `queue:pool` (a pool
//!   queue; for a worker its own pool's), `queue:other-pool`, `queue:low` (its low lane),
//!   `queue:other-low`, `queue:dlq`, `queue:other-dlq`, `queue:notify`, `queue:other-notify`,
//!   `queue:target`, `queue:source` (a tenant's event queue, to the ingest), `function:scan`, `function:target`, `secret:target`, `bus:events`, `role:{name}`,
//!   `user:{name}`. DynamoDB deletes also record the item's partition key (`leadingKey`), so the
//!   construct's condition on `dynamodb:LeadingKeys` is evaluated too.
//!
//! This module is only the scope plumbing every entry point runs under and the [`note`] of calls
//! made without an intercepted client; the recorder itself (the interceptor and the file it
//! writes) is in the `sundial-testkit` crate, which no Lambda links unless built with its
//! `iam-record` feature. Without it nothing is attached: deployed functions pay nothing.

use crate::config::Config;
use std::future::Future;
use std::sync::{Arc, OnceLock};

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
    /// The ingest function: the tenants' event sources (their SQS queues, their buses).
    Ingest,
    /// An in-process handler's own code, run by a worker: its calls need grants the deployer
    /// gives the worker role for the handler (its tables, its downstreams), not Sundial's.
    Handler,
    /// A worker acting for one tenant (its secrets, functions and queues): the stack's tenant
    /// access role, assumed with the tenant's session tag (`execution::target::identity`).
    Tenant,
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
            Role::Ingest => "ingest",
            Role::Handler => "handler",
            Role::Tenant => "tenant",
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
    notify_suffix: String,
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
            dlq_suffix: sundial_model::resources::Resources::get().queues.dlq_suffix.clone(),
            notify_suffix: sundial_model::resources::Resources::get().queues.notify_suffix.clone(),
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

    /// The role calling.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The tick, which invokes `function` to fan out.
    pub fn scan_function(mut self, function: Option<&str>) -> Self {
        self.scan_function = function.map(str::to_string);
        self
    }

    /// A table by what it is to Sundial (`jobs`, `executions`, `other:{name}`).
    pub fn table(&self, name: &str) -> String {
        if name == self.jobs_table {
            "jobs".into()
        } else if name == self.executions_table {
            "executions".into()
        } else {
            format!("other:{name}")
        }
    }

    /// A queue by what it is to this role (`queue:pool`, `queue:dlq`, `queue:target`, ...).
    pub fn queue(&self, name: &str) -> String {
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
                None => match name.strip_suffix(sundial_model::priority::LOW_LANE_SUFFIX).and_then(pool) {
                    Some(p) => ("low", p),
                    None => match name.strip_suffix(self.notify_suffix.as_str()).and_then(pool) {
                        Some(p) => ("notify", p),
                        // The ingest reads its sources' tags; everyone else's other queue is a
                        // target.
                        None if self.role == Role::Ingest => return "queue:source".into(),
                        None => return "queue:target".into(),
                    },
                },
            },
        };
        match &self.own_pool {
            Some(own) if *own != pool => format!("queue:other-{kind}"),
            _ => format!("queue:{kind}"),
        }
    }

    /// A function by what it is to this role (`function:scan` or `function:target`).
    pub fn function(&self, name: &str) -> String {
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

/// Runs `fut` inside the current scope as [`Role::Tenant`]: the calls a worker makes as a
/// tenant (through the tenant's role session) are granted to the tenant access role, not to the
/// worker's.
pub async fn as_tenant<F: Future>(fut: F) -> F::Output {
    let scope = current().map(|s| Arc::new(Scope { role: Role::Tenant, ..(*s).clone() }));
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

/// Where recorded calls go: set once per process by the test instrumentation
/// (`sundial_testkit::access::install`), never in a deployed function.
static SINK: OnceLock<Box<dyn Fn(Access) + Send + Sync>> = OnceLock::new();

/// Sets where recorded calls go (once per process; later calls are ignored). The test
/// instrumentation calls it; nothing in the product does.
pub fn install_sink(sink: Box<dyn Fn(Access) + Send + Sync>) {
    let _ = SINK.set(sink);
}

/// Whether calls are being recorded (a sink is installed).
pub fn recording() -> bool {
    SINK.get().is_some()
}

/// Records `a` if a sink is installed.
pub fn write(a: Access) {
    if let Some(sink) = SINK.get() {
        sink(a);
    }
}

/// Records one call made without an intercepted client (the API's IAM tag reads), if inside a
/// scope: `action` as IAM names it, `resource` in this module's vocabulary.
pub fn note(action: &str, resource: String) {
    if let Some(scope) = current() {
        write(Access { role: scope.role.as_str(), action: action.to_string(), resource, leading_key: None });
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
            fair_queues: true,
            pool_capacity: Default::default(),
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
        assert_eq!(s.queue("t-batch-notify"), "queue:notify");
        assert_eq!(s.queue("t-nope"), "queue:target");
        assert_eq!(s.queue("orders"), "queue:target");
        let w = Scope::new(Role::Worker, &cfg()).pool("batch");
        assert_eq!(w.queue("t-batch"), "queue:pool");
        assert_eq!(w.queue("t-batch-dlq"), "queue:dlq");
        assert_eq!(w.queue("t-default"), "queue:other-pool");
        assert_eq!(w.queue("t-default-dlq"), "queue:other-dlq");
        assert_eq!(w.queue("t-batch-notify"), "queue:notify");
        assert_eq!(w.queue("t-default-notify"), "queue:other-notify");
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
