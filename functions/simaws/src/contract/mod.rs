//! The contract suite: the semantics of the AWS operations Sundial relies on, each an async case
//! taking an `SdkConfig` and a unique name prefix and returning what differed. The same cases
//! run against the simulator (`functions/simaws/tests/contract.rs`, under a paused tokio
//! clock) and against MiniStack and moto (`tests/tests/aws_contract.rs`), so the simulator's
//! semantics cannot drift from the emulators' unnoticed.
//!
//! Where the emulators differ from each other on something Sundial does not rely on, a case
//! asserts only what Sundial relies on (and AWS documents); docs/simulation.md lists the
//! differences. Cases that need a real function (Lambda `Invoke`) run on the simulator only
//! ([`is_simulator`]); the simulator's test registers the handler they call ([`ECHO`]).

mod ddb;
mod ecs;
mod services;
mod sfn;
mod sqs;

/// What a case returns: `Err` names what differed.
pub type Outcome = Result<(), String>;

/// The function name (after the prefix) the Lambda case invokes: the simulator's test answers
/// it by echoing the payload, and fails it with a function error when the payload is `"fail"`.
pub const ECHO: &str = "echo";

/// Whether `sdk` talks to the simulator (its endpoint is [`crate::ENDPOINT`]).
pub fn is_simulator(sdk: &aws_config::SdkConfig) -> bool {
    sdk.endpoint_url() == Some(crate::ENDPOINT)
}

/// Lists the cases once: their names, and the dispatch from a name to the case.
macro_rules! cases {
    ($($m:ident :: $f:ident),* $(,)?) => {
        const NAMES: &[&str] = &[$(concat!(stringify!($m), "::", stringify!($f))),*];

        async fn dispatch(name: &str, sdk: &aws_config::SdkConfig, prefix: &str) -> Option<Outcome> {
            $(
                if name == concat!(stringify!($m), "::", stringify!($f)) {
                    return Some($m::$f(sdk, prefix).await);
                }
            )*
            None
        }
    };
}

cases!(
    ddb::conditional_put,
    ddb::conditional_update_and_delete,
    ddb::update_expressions,
    ddb::return_values,
    ddb::sparse_index,
    ddb::query_order_and_paging,
    ddb::query_key_ranges,
    ddb::query_filters_and_count,
    ddb::transactions,
    ddb::transaction_tokens,
    ddb::transaction_refuses_two_actions_on_one_item,
    ddb::batch_get,
    ddb::index_paging_with_ties,
    ddb::scan_paging,
    ddb::item_size_limit,
    sqs::delay,
    sqs::visibility_and_redelivery,
    sqs::change_visibility,
    sqs::batches,
    sqs::redrive_to_dlq,
    sqs::queue_attributes,
    sqs::long_poll_returns_on_arrival,
    sqs::attributes_and_receive_limit,
    sqs::stale_receipt_delete,
    services::secrets,
    services::lambda_invoke,
    services::put_events,
    sfn::start_execution_by_name,
    sfn::failed_execution,
    ecs::run_task_exit_code,
    ecs::client_token,
    ecs::list_by_started_by,
    ecs::stop_task,
    ecs::refusals,
);

/// Known gaps of an emulator (`SUNDIAL_EMULATOR`: `ministack`, `moto`) against what AWS documents,
/// on a case Sundial relies on: `(emulator, case, why)`. The emulator run reports these cases'
/// failures instead of failing on them; the simulator keeps AWS's behaviour.
pub const KNOWN_GAPS: &[(&str, &str, &str)] = &[
    (
        "moto",
        "ddb::transaction_tokens",
        "moto 5.2.5 ignores ClientRequestToken: a transaction retried with its token applies again \
         (AWS documents ten-minute idempotency; MiniStack and the simulator keep it)",
    ),
    (
        "moto",
        "ecs::refusals",
        "moto 5.2.5 runs a task overriding a container its definition lacks, answers DescribeTasks \
         of a missing task with no MISSING failure, and StopTask of one with a 500 (AWS refuses \
         with InvalidParameterException; MiniStack and the simulator answer MISSING)",
    ),
    (
        "ministack",
        "ecs::run_task_exit_code",
        "MiniStack 1.5.33 without Docker keeps every task RUNNING until StopTask: no emulated \
         container exits (moto as localstack/sundial_emulator.py patches it and the simulator do)",
    ),
    (
        "ministack",
        "ecs::client_token",
        "MiniStack 1.5.33 ignores RunTask's clientToken: a retry starts a second task, other \
         parameters no ConflictException (AWS documents 24-hour idempotency; the simulator and \
         patched moto keep it)",
    ),
    (
        "ministack",
        "ecs::refusals",
        "MiniStack 1.5.33 runs a task on a cluster that does not exist and one overriding a \
         container its definition lacks (AWS: ClusterNotFoundException, InvalidParameterException)",
    ),
    (
        "ministack",
        "sqs::stale_receipt_delete",
        "MiniStack 1.5.33 refuses a receipt handle older than the latest receive with \
         ReceiptHandleIsInvalid (AWS documents that the request succeeds; moto and the simulator accept it)",
    ),
];

/// Why `case` may fail on `emulator`, if it is a known gap.
pub fn known_gap(emulator: &str, case: &str) -> Option<&'static str> {
    KNOWN_GAPS.iter().find(|(e, c, _)| *e == emulator && *c == case).map(|(_, _, why)| *why)
}

/// The names of every case, in the order [`run_all`] runs them.
pub fn names() -> Vec<&'static str> {
    NAMES.to_vec()
}

/// Runs one case by name (`None` when there is no such case).
pub async fn run(name: &str, sdk: &aws_config::SdkConfig, prefix: &str) -> Option<Outcome> {
    dispatch(name, sdk, &format!("{prefix}{}", short(name))).await
}

fn short(name: &str) -> String {
    let tail = name.rsplit("::").next().unwrap_or(name);
    let mut s: String =
        tail.split('_').map(|w| w.chars().take(4).collect::<String>()).collect::<Vec<_>>().join("-");
    s.push('-');
    s
}

/// Runs every case, one after the other, each with its own resources (`prefix` + the case).
pub async fn run_all(sdk: &aws_config::SdkConfig, prefix: &str) -> Vec<(&'static str, Outcome)> {
    let mut out = Vec::new();
    for name in NAMES {
        let outcome = run(name, sdk, prefix).await.unwrap_or_else(|| Err(format!("no case {name}")));
        out.push((*name, outcome));
    }
    out
}

/// `Err(format!(..))` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!($($fmt)*));
        }
    };
}
pub(crate) use ensure;

/// An SDK error as text, with its whole source chain.
pub(crate) fn fail<E: std::error::Error>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {}", aws_smithy_types::error::display::DisplayErrorContext(&e))
}
