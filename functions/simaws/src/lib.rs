//! # sundial-simaws
//!
//! An in-process, deterministic AWS for the simulator: DynamoDB, SQS, Lambda `Invoke` /
//! `GetFunction`, Secrets Manager, EventBridge `PutEvents`, Step Functions and ECS, served to the
//! real SDK clients as their HTTP client ([`Aws::sdk_config`]), so the product's code runs
//! unchanged on top.
//! Time is the tokio clock (paused in the simulator, so a simulated day takes seconds), and
//! every random draw (faults, latencies, ids) comes from the seed: the same seed and the same
//! workload give the same trace, byte for byte ([`Aws::trace_hash`]).
//!
//! Layout:
//! - `http` — the SDK-facing side: the `HttpClient`, routing by `X-Amz-Target` / path, faults,
//!   latency, the trace hash.
//! - `call` — a request decoded for a service, and its reply.
//! - `ddb` — DynamoDB (tables, sparse GSIs, expressions, Query/Scan paging, transactions).
//! - `sqs` — SQS (visibility, delays, receive counts, redrive, long polls, batches).
//! - `services` — Lambda, Secrets Manager, EventBridge.
//! - `sfn` — Step Functions (state machines with tags; executions of `Pass`/`Wait`/`Succeed`/
//!   `Fail` chains, RUNNING until their waits have passed in simulated time).
//! - `ecs` — ECS (clusters, task definitions, tasks whose emulated containers run and exit as
//!   their environment says, in simulated time; `RunTask`'s `clientToken` idempotency).
//! - `error` — the one error type, as each protocol renders it.
//! - [`contract`] — the contract suite: the semantics Sundial relies on, as cases run against
//!   this simulator (`tests/contract.rs`) and against MiniStack and moto (the integration
//!   crate's `aws_contract.rs`), so the simulator cannot drift from the emulators.
//!
//! All state sits behind one lock that is never held across an `.await`; responses never
//! depend on hash order (B-trees everywhere). Not modelled: eventual consistency of table reads
//! (index reads lag only under the `gsi_lag_ms` fault), TTL deletion, FIFO queues, IAM. See
//! docs/simulation.md.

mod call;
pub mod contract;
mod ddb;
mod ecs;
mod error;
mod http;
mod services;
mod sfn;
mod sqs;

pub use ecs::{EcsContainer, EcsStopCode, EcsTask, EXIT_CODE_VAR, RUN_SECS_VAR};
pub use http::ENDPOINT;
pub use sfn::SfnExecution;

use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use sundial_hash::SplitMix;

/// A boxed, sendable future (the shape of an [`Aws::on_invoke`] handler's answer).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A Lambda invocation handed to the harness's handler.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The function name or ARN, as the caller gave it.
    pub function: String,
    /// The request payload.
    pub payload: Vec<u8>,
    /// `RequestResponse` (awaited) or `Event` (spawned; the caller gets 202 at once).
    pub invocation_type: InvocationType,
    /// The calling process ([`Aws::sdk_config_for`]), if tagged.
    pub process: Option<String>,
}

/// How a function was invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvocationType {
    RequestResponse,
    Event,
    DryRun,
}

/// What a handler answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvokeOutcome {
    /// The function returned this payload.
    Ok(Vec<u8>),
    /// The function failed (`X-Amz-Function-Error: Unhandled`, this error payload).
    FunctionError(Vec<u8>),
    /// Lambda throttled the call (429 `TooManyRequestsException`).
    Throttled,
    /// No such function (404 `ResourceNotFoundException`).
    NotFound,
}

/// The harness's Lambda: called for every `Invoke`.
pub type InvokeHandler = Arc<dyn Fn(Invocation) -> BoxFuture<'static, InvokeOutcome> + Send + Sync>;

/// Injected faults: probabilities in [0, 1], drawn from the seed. All zero (the default): none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Reject before applying: DynamoDB `ThrottlingException` / `ProvisionedThroughputExceededException`,
    /// SQS `RequestThrottled`.
    pub throttle: f64,
    /// A 500 before applying.
    pub server_error: f64,
    /// Apply, then answer 500 (the caller cannot know it applied; the SDK retries).
    pub lost_response: f64,
    /// A sent message silently vanishes (the send reports success).
    pub sqs_lose_on_send: f64,
    /// A receive also leaves a visible copy of the message (at-least-once delivery).
    pub sqs_duplicate: f64,
    /// (probability, maximum) of an extra delay, in ms, on a sent message.
    pub sqs_extra_delay_ms: (f64, u64),
    /// Every SQS call fails with a 5xx while DynamoDB works.
    pub sqs_down: bool,
    /// BatchGetItem leaves each key in `UnprocessedKeys` with this probability (the caller must
    /// retry them, as under DynamoDB's throttling).
    pub ddb_unprocessed: f64,
    /// Global secondary indexes see a write up to this many ms after it (a uniform draw per
    /// request, in order per index): queries on an index read what it held then, as DynamoDB's
    /// eventually consistent indexes do. 0: indexes are consistent.
    pub gsi_lag_ms: u64,
    /// Maximum simulated latency per request, in ms (a uniform draw, slept in tokio time).
    pub latency_ms: u64,
    /// Faults only for requests of this process (`None`: every request).
    pub only_process: Option<String>,
    /// A hot partition: every DynamoDB request whose body holds this text (a partition key) is
    /// throttled, as DynamoDB throttles one partition past its throughput while the others
    /// answer. No draw: the rest of the window's faults draw as they would without it.
    pub throttle_matching: Option<String>,
}

/// One EventBridge `PutEvents` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub source: String,
    pub detail_type: String,
    /// The detail, as JSON text.
    pub detail: String,
    pub bus: String,
    pub time_ms: i64,
}

/// An item in DynamoDB JSON (`{"pk": {"S": "x"}}`).
pub type Item = serde_json::Map<String, Value>;

/// The depths of one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStats {
    pub url: String,
    pub name: String,
    /// Receivable now.
    pub visible: usize,
    /// Received and not yet deleted or visible again.
    pub in_flight: usize,
    /// Sent with a delay that has not passed.
    pub delayed: usize,
}

/// Counters since creation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests per operation (`DynamoDB.PutItem`, `SQS.ReceiveMessage`, ...).
    pub requests: BTreeMap<String, u64>,
    /// Faults injected per kind (`throttle`, `server_error`, `lost_response`, ...).
    pub faults: BTreeMap<String, u64>,
}

pub(crate) struct State {
    pub(crate) rng: SplitMix,
    pub(crate) faults: Faults,
    pub(crate) ddb: ddb::Dynamo,
    pub(crate) sqs: sqs::Sqs,
    pub(crate) services: services::Services,
    pub(crate) sfn: sfn::StepFunctions,
    pub(crate) ecs: ecs::Ecs,
    pub(crate) stats: Stats,
    pub(crate) trace: sundial_hash::Fnv1a,
    /// Called with (queue URL, body, lost) for every message a caller sends (lost ones included).
    pub(crate) on_send: Option<SendHook>,
    /// Called with every message a caller deletes.
    pub(crate) on_delete: Option<DeleteHook>,
    /// Called with every Step Functions execution a `StartExecution` creates.
    pub(crate) on_start_execution: Option<StartHook>,
    /// Called with every ECS task a `RunTask` creates.
    pub(crate) on_run_task: Option<RunTaskHook>,
    /// Called with every DynamoDB write applied.
    pub(crate) on_write: Option<WriteHook>,
    /// Processes stalled (by tag prefix) until an instant (ms): their requests wait for it.
    pub(crate) stalls: Vec<(String, i64)>,
    /// Operations whose next request is applied and then answered 500 ([`Aws::lose_next_response`]).
    pub(crate) lose_next: Vec<String>,
}

/// One DynamoDB item write as applied (a transaction's or batch's each on its own), in apply
/// order: what a checker of the store's writes needs (who wrote what over what).
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedWrite {
    /// The process whose request applied it ([`Aws::sdk_config_for`]).
    pub process: Option<String>,
    /// The table.
    pub table: String,
    /// The simulated instant it applied (ms).
    pub at_ms: i64,
    /// The item before (`None`: it did not exist).
    pub old: Option<Item>,
    /// The item after (`None`: deleted).
    pub new: Option<Item>,
}

/// A hook that sees every DynamoDB write applied.
pub type WriteHook = Arc<dyn Fn(&AppliedWrite) + Send + Sync>;

/// A hook that sees every message sent: (queue URL, body, whether a fault lost it, now in ms).
pub type SendHook = Arc<dyn Fn(&str, &str, bool, i64) + Send + Sync>;

/// A hook that sees every message a caller deleted: the deleting process, the message's body,
/// the body of every message still live in any queue (visible, in flight or delayed), and now
/// (ms).
pub type DeleteHook = Arc<dyn Fn(Option<&str>, &str, &mut dyn Iterator<Item = &str>, i64) + Send + Sync>;

/// A hook that sees every Step Functions execution started (not an answer that returned a
/// running one again): its whole course is known from its start.
pub type StartHook = Arc<dyn Fn(&SfnExecution) + Send + Sync>;

/// A hook that sees every ECS task created (not a `clientToken` replay that answered the
/// original tasks), as it is at its creation: its course is decided then, but a later `StopTask`
/// can end it early ([`Aws::ecs_task`] reads it as it is now).
pub type RunTaskHook = Arc<dyn Fn(&EcsTask) + Send + Sync>;

impl State {
    /// A uniform draw in [0, 1).
    pub(crate) fn draw(&mut self) -> f64 {
        unit(&mut self.rng)
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.draw() < p
    }

    /// Whether the current faults are aimed at requests of `process`.
    pub(crate) fn aimed(&self, process: Option<&String>) -> bool {
        self.faults.only_process.as_ref().is_none_or(|p| process == Some(p))
    }

    /// The faults for a request of `process`: the current ones if aimed at it, else none.
    pub(crate) fn faults_for(&self, process: Option<&String>) -> Faults {
        if self.aimed(process) {
            self.faults.clone()
        } else {
            Faults::default()
        }
    }

    pub(crate) fn fault(&mut self, kind: &str) {
        *self.stats.faults.entry(kind.to_string()).or_default() += 1;
    }
}

pub(crate) struct Inner {
    pub(crate) state: Mutex<State>,
    start: tokio::time::Instant,
    epoch_ms: i64,
    /// Woken on every change a long poll may be waiting for.
    pub(crate) notify: tokio::sync::Notify,
    pub(crate) invoke: Mutex<Option<InvokeHandler>>,
}

/// The simulated AWS: one account (`000000000000`), one region (`us-east-1`). Cheap to clone.
#[derive(Clone)]
pub struct Aws {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Aws {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Aws(now_ms={})", self.now_ms())
    }
}

impl Aws {
    /// A fresh AWS whose clock reads `epoch_ms` now and then advances with
    /// `tokio::time::Instant` (create it inside the runtime whose clock it should follow).
    pub fn new(seed: u64, epoch_ms: i64) -> Aws {
        let state = State {
            rng: SplitMix::new(seed),
            faults: Faults::default(),
            ddb: ddb::Dynamo::default(),
            sqs: sqs::Sqs::default(),
            services: services::Services::default(),
            sfn: sfn::StepFunctions::default(),
            ecs: ecs::Ecs::default(),
            stats: Stats::default(),
            trace: sundial_hash::Fnv1a::new(),
            on_send: None,
            on_start_execution: None,
            on_run_task: None,
            on_write: None,
            on_delete: None,
            stalls: Vec::new(),
            lose_next: Vec::new(),
        };
        let inner = Inner {
            state: Mutex::new(state),
            start: tokio::time::Instant::now(),
            epoch_ms,
            notify: tokio::sync::Notify::new(),
            invoke: Mutex::new(None),
        };
        Aws { inner: Arc::new(inner) }
    }

    /// The simulated wall clock, in ms since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.inner.start);
        self.inner.epoch_ms + elapsed.as_millis() as i64
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the state as consistent as the panicking
        // operation left it; the simulation reports the panic itself.
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An `SdkConfig` whose HTTP client is this AWS: region `us-east-1`, static test credentials,
    /// endpoint [`ENDPOINT`] (never resolved), tokio sleep, the simulated clock as time source,
    /// standard retries without jitter, no stalled-stream protection, no timeouts.
    pub fn sdk_config(&self) -> aws_config::SdkConfig {
        http::sdk_config(self, None)
    }

    /// The same, with every request tagged as coming from `process` (for faults aimed at it).
    pub fn sdk_config_for(&self, process: &str) -> aws_config::SdkConfig {
        http::sdk_config(self, Some(process.to_string()))
    }

    /// Replaces the fault settings (effective from the next request).
    pub fn set_faults(&self, f: Faults) {
        self.lock().faults = f;
    }

    /// The body of every message in every queue (visible, in flight or delayed; dead-letter
    /// queues included), in queue and send order.
    pub fn message_bodies(&self) -> Vec<String> {
        let s = self.lock();
        s.sqs.queues.values().flat_map(|q| q.msgs.values().map(|m| m.body.clone())).collect()
    }

    /// The bodies of every message a consumer may still receive: [`Aws::message_bodies`]
    /// without the dead-letter queues' (parked for an operator, never delivered).
    pub fn live_message_bodies(&self) -> Vec<String> {
        self.lock().sqs.live_bodies().map(str::to_string).collect()
    }

    /// [`Aws::live_message_bodies`] without the messages of sends whose answer was lost (the
    /// sender's SDK sent each again: the transport's duplicates, which no sender can avoid on
    /// a standard queue).
    pub fn live_message_bodies_answered(&self) -> Vec<String> {
        self.lock().sqs.live_bodies_answered().map(str::to_string).collect()
    }

    /// Sets the hook that sees every message sent (for invariants over message counts).
    pub fn on_send(&self, h: SendHook) {
        self.lock().on_send = Some(h);
    }

    /// Sets the hook that sees every Step Functions execution started (for an effects ledger).
    pub fn on_start_execution(&self, h: StartHook) {
        self.lock().on_start_execution = Some(h);
    }

    /// How many `StartExecution`s were answered `ExecutionAlreadyExists` (names already taken).
    pub fn sfn_already_exists(&self) -> u64 {
        self.lock().sfn.already_exists
    }

    /// The Step Functions execution `arn` as it is now (a `StopExecution` shows: ABORTED).
    pub fn sfn_execution(&self, arn: &str) -> Option<SfnExecution> {
        self.lock().sfn.execution(arn)
    }

    /// Sets the hook that sees every message deleted (for a checker of message custody).
    pub fn on_delete(&self, h: DeleteHook) {
        self.lock().on_delete = Some(h);
    }

    /// Sets the hook that sees every DynamoDB write applied (for a checker of the store's
    /// writes: fencing, claims). Writes are then logged as they apply, at some cost.
    pub fn on_write(&self, h: WriteHook) {
        self.lock().on_write = Some(h);
    }

    /// Stalls every process whose tag starts with `prefix` until `until_ms`: a request it makes
    /// meanwhile waits for that instant before it reaches AWS, as a process frozen by a long GC
    /// pause or cut off by a partition sends nothing until it wakes. Its timers and its own work
    /// go on (a zombie's target call finishes; its heartbeat does not arrive).
    pub fn stall(&self, prefix: &str, until_ms: i64) {
        let mut s = self.lock();
        s.stalls.retain(|(p, _)| p != prefix);
        s.stalls.push((prefix.to_string(), until_ms));
    }

    /// Applies the next request of operation `op` (`UpdateItem`, `SendMessageBatch`, ...), whoever
    /// makes it, then answers it with a 500 as if its response were lost: the caller cannot know
    /// it applied, and its SDK sends it again. One request per call; a deterministic
    /// `lost_response` fault for tests.
    pub fn lose_next_response(&self, op: &str) {
        self.lock().lose_next.push(op.to_string());
    }

    /// Sets the hook that sees every ECS task created (for an effects ledger).
    pub fn on_run_task(&self, h: RunTaskHook) {
        self.lock().on_run_task = Some(h);
    }

    /// An ECS task as it is now (`status_at(now_ms())`, `exit_code_at(now_ms())` read its end).
    pub fn ecs_task(&self, arn: &str) -> Option<EcsTask> {
        self.lock().ecs.task(arn)
    }

    /// Every ECS task so far, in creation order.
    pub fn ecs_tasks(&self) -> Vec<EcsTask> {
        self.lock().ecs.all_tasks()
    }

    /// How many `RunTask`s a `clientToken` answered with its original tasks (retries that
    /// started nothing new).
    pub fn ecs_token_replays(&self) -> u64 {
        self.lock().ecs.token_replays
    }

    /// How many `RunTask`s were refused `ConflictException` (a token reused with other parameters).
    pub fn ecs_token_conflicts(&self) -> u64 {
        self.lock().ecs.token_conflicts
    }

    /// Creates an ECS cluster (the same name again is the same cluster): its ARN.
    ///
    /// # Panics
    /// On a name ECS refuses (a harness bug).
    pub fn create_cluster(&self, name: &str, tags: &[(&str, &str)]) -> String {
        let req = serde_json::json!({ "clusterName": name, "tags": ecs_tags(tags) });
        match self.lock().ecs.create_cluster(&req) {
            Ok(out) => out["cluster"]["clusterArn"].as_str().unwrap_or_default().to_string(),
            Err(e) => panic!("create_cluster({name:?}): {}", e.message),
        }
    }

    /// Registers the next revision of an ECS task definition whose essential containers are
    /// `(name, environment)` (the emulated-container variables, [`RUN_SECS_VAR`] and
    /// [`EXIT_CODE_VAR`], among them): its ARN, with the revision.
    ///
    /// # Panics
    /// On a family or container ECS refuses (a harness bug).
    pub fn register_task_definition(
        &self,
        family: &str,
        containers: &[(&str, &[(&str, &str)])],
        tags: &[(&str, &str)],
    ) -> String {
        let defs: Vec<Value> = containers
            .iter()
            .map(|(name, env)| {
                let env: Vec<Value> =
                    env.iter().map(|(k, v)| serde_json::json!({ "name": k, "value": v })).collect();
                serde_json::json!({ "name": name, "image": "simaws/emulated", "environment": env })
            })
            .collect();
        let req =
            serde_json::json!({ "family": family, "containerDefinitions": defs, "tags": ecs_tags(tags) });
        let now = self.now_ms();
        match self.lock().ecs.register(&req, now) {
            Ok(out) => out["taskDefinition"]["taskDefinitionArn"].as_str().unwrap_or_default().to_string(),
            Err(e) => panic!("register_task_definition({family:?}): {}", e.message),
        }
    }

    /// Sets the handler of every Lambda `Invoke`.
    pub fn on_invoke(&self, h: InvokeHandler) {
        *self.inner.invoke.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
    }

    /// Registers a function (what `GetFunction` finds, with its tags).
    pub fn create_function(&self, name: &str, tags: &[(&str, &str)]) {
        self.lock().services.create_function(name, tags);
    }

    /// Creates (or replaces the value of) a secret.
    pub fn put_secret(&self, name: &str, value: &str, tags: &[(&str, &str)]) {
        let mut s = self.lock();
        let suffix = s.rng.next_u64();
        s.services.put_secret(name, value, tags, suffix);
    }

    /// Every EventBridge `PutEvents` entry so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().services.events.clone()
    }

    /// Every item of `table` in key order (empty when there is no such table).
    pub fn items(&self, table: &str) -> Vec<Item> {
        let s = self.lock();
        let Some(t) = s.ddb.tables.get(table) else { return Vec::new() };
        t.all()
            .map(|i| match ddb::value::item_to_json(i) {
                Value::Object(m) => m,
                _ => Item::new(),
            })
            .collect()
    }

    /// The number of items of `table` (cheaper than `items`).
    pub fn item_count(&self, table: &str) -> usize {
        self.lock().ddb.tables.get(table).map_or(0, |t| t.len())
    }

    /// Every queue's depths, by name.
    pub fn queues(&self) -> Vec<QueueStats> {
        let now = self.now_ms();
        self.lock().sqs.stats(now)
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.lock().stats.clone()
    }

    /// A hash of every request and response so far, in order.
    pub fn trace_hash(&self) -> u64 {
        self.lock().trace.finish()
    }
}

fn ecs_tags(tags: &[(&str, &str)]) -> Vec<Value> {
    tags.iter().map(|(k, v)| serde_json::json!({ "key": k, "value": v })).collect()
}

/// A uniform draw in [0, 1) from `rng`.
pub(crate) fn unit(rng: &mut SplitMix) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

pub(crate) fn b64_encode(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

pub(crate) fn b64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}
