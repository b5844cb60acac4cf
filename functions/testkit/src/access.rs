//! The IAM access recorder (test instrumentation): an SDK interceptor that turns each request
//! a Sundial function makes inside an access scope (`sundial_core::access`) into one JSON line
//! of `SUNDIAL_IAM_RECORD`, checked against the CDK roles by `infra/test/iam.test.ts`. See
//! `sundial_core::access` for the vocabulary of roles and resources.

use crate::intercept::{Observe, Observer};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::interceptors::context::Input;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use sundial_core::access::{current, recording, write, Access, Scope};
use sundial_core::aws::Clients;
use sundial_store::items::attr;

/// Installs the recorder in this process when `SUNDIAL_IAM_RECORD` names a file: calls go to
/// that file, and every SDK client built afterwards by `sundial_core::aws::Clients` carries an
/// [`AccessRecorder`]. Idempotent; true when recording.
pub fn install() -> bool {
    if sink().is_none() {
        return false;
    }
    sundial_core::access::install_sink(Box::new(write_line));
    sundial_core::aws::set_client_decorator(record);
    recording()
}

struct Sink {
    file: Mutex<std::fs::File>,
    seen: Mutex<HashSet<Access>>,
}

fn sink() -> Option<&'static Sink> {
    static SINK: OnceLock<Option<Sink>> = OnceLock::new();
    SINK.get_or_init(|| {
        let path = sundial_core::config::iam_record_path()?;
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

fn write_line(a: Access) {
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

/// One recorded access: the IAM action, the resource as Sundial sees it, a DynamoDB item's
/// partition key.
type Triple = (String, String, Option<String>);

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
    /// The (action, resource, leading key) triples of one request, by service.
    fn accesses(&self, op: &str, input: &Input, s: &Scope) -> Vec<Triple> {
        let mut out = Vec::new();
        match self.service {
            "dynamodb" => self.dynamodb(op, input, s, &mut out),
            "sqs" => self.sqs(op, input, s, &mut out),
            "lambda" => self.lambda(op, input, s, &mut out),
            "secretsmanager" | "events" => self.own_resource(op, s, &mut out),
            // Only a tenant session calls SNS: the `sns` targets' topics.
            "sns" => out.push((self.act(op), "topic:target".into(), None)),
            // Only a tenant session calls Step Functions: the `stepFunctions` targets' state
            // machines, and the executions they start.
            "states" => {
                let r = if matches!(op, "DescribeExecution" | "StopExecution") {
                    "sfn-execution:target"
                } else {
                    "state-machine:target"
                };
                out.push((self.act(op), r.into(), None))
            }
            // Only a tenant session calls ECS: the `ecs` targets' task definitions and the tasks
            // they run. ListTasks takes no resource (`*`, conditioned on the cluster).
            "ecs" => {
                let r = match op {
                    "RunTask" | "ListTagsForResource" => "task-definition:target",
                    "DescribeTasks" | "StopTask" => "ecs-task:target",
                    _ => "unknown",
                };
                out.push((self.act(op), r.into(), None))
            }
            _ => out.push((self.act(op), "unknown".into(), None)),
        }
        out
    }

    fn act(&self, a: &str) -> String {
        format!("{}:{a}", self.service)
    }

    /// A dynamodb request's triples.
    fn dynamodb(&self, op: &str, input: &Input, s: &Scope, out: &mut Vec<Triple>) {
        let act = |a: &str| self.act(a);
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
        } else if let Some(i) = input.downcast_ref::<op_::transact_write_items::TransactWriteItemsInput>() {
            // IAM authorises a transaction by the action of each item in it.
            for item in i.transact_items() {
                if let Some(p) = item.put() {
                    out.push((act("PutItem"), table(Some(p.table_name())), pk_of(Some(p.item()))));
                } else if let Some(u) = item.update() {
                    out.push((act("UpdateItem"), table(Some(u.table_name())), pk_of(Some(u.key()))));
                } else if let Some(d) = item.delete() {
                    out.push((act("DeleteItem"), table(Some(d.table_name())), pk_of(Some(d.key()))));
                } else if let Some(c) = item.condition_check() {
                    out.push((act("ConditionCheckItem"), table(Some(c.table_name())), pk_of(Some(c.key()))));
                }
            }
        } else if let Some(i) = input.downcast_ref::<op_::describe_table::DescribeTableInput>() {
            out.push((act("DescribeTable"), table(i.table_name()), None));
        } else if let Some(i) = input.downcast_ref::<op_::update_table::UpdateTableInput>() {
            // (the planner's provisioned units: docs/capacity.md)
            out.push((act("UpdateTable"), table(i.table_name()), None));
        } else if let Some(i) = input.downcast_ref::<op_::transact_get_items::TransactGetItemsInput>() {
            for g in i.transact_items().iter().filter_map(|t| t.get()) {
                out.push((act("GetItem"), table(Some(g.table_name())), pk_of(Some(g.key()))));
            }
        } else {
            out.push((act(op), "unknown".into(), None));
        }
    }

    /// A sqs request's triples.
    fn sqs(&self, op: &str, input: &Input, s: &Scope, out: &mut Vec<Triple>) {
        let act = |a: &str| self.act(a);
        use aws_sdk_sqs::operation as q;
        let (action, name) = if let Some(i) = input.downcast_ref::<q::send_message::SendMessageInput>() {
            ("SendMessage", queue_name(i.queue_url()))
        } else if let Some(i) = input.downcast_ref::<q::send_message_batch::SendMessageBatchInput>() {
            ("SendMessage", queue_name(i.queue_url()))
        } else if let Some(i) = input.downcast_ref::<q::receive_message::ReceiveMessageInput>() {
            ("ReceiveMessage", queue_name(i.queue_url()))
        } else if let Some(i) = input.downcast_ref::<q::delete_message::DeleteMessageInput>() {
            ("DeleteMessage", queue_name(i.queue_url()))
        } else if let Some(i) = input.downcast_ref::<q::delete_message_batch::DeleteMessageBatchInput>() {
            ("DeleteMessage", queue_name(i.queue_url()))
        } else if let Some(i) =
            input.downcast_ref::<q::change_message_visibility::ChangeMessageVisibilityInput>()
        {
            ("ChangeMessageVisibility", queue_name(i.queue_url()))
        } else if let Some(i) =
            input.downcast_ref::<q::change_message_visibility_batch::ChangeMessageVisibilityBatchInput>()
        {
            ("ChangeMessageVisibility", queue_name(i.queue_url()))
        } else if let Some(i) = input.downcast_ref::<q::get_queue_attributes::GetQueueAttributesInput>() {
            ("GetQueueAttributes", queue_name(i.queue_url()))
        } else if let Some(i) = input.downcast_ref::<q::get_queue_url::GetQueueUrlInput>() {
            ("GetQueueUrl", i.queue_name().unwrap_or_default())
        } else if let Some(i) = input.downcast_ref::<q::list_queue_tags::ListQueueTagsInput>() {
            ("ListQueueTags", queue_name(i.queue_url()))
        } else {
            out.push((act(op), "unknown".into(), None));
            return;
        };
        out.push((act(action), s.queue(name), None));
    }

    /// A lambda request's triples.
    fn lambda(&self, op: &str, input: &Input, s: &Scope, out: &mut Vec<Triple>) {
        let act = |a: &str| self.act(a);
        if let Some(i) = input.downcast_ref::<aws_sdk_lambda::operation::invoke::InvokeInput>() {
            out.push((act("InvokeFunction"), s.function(i.function_name().unwrap_or_default()), None));
        } else if let Some(i) =
            input.downcast_ref::<aws_sdk_lambda::operation::get_function::GetFunctionInput>()
        {
            out.push((act("GetFunction"), s.function(i.function_name().unwrap_or_default()), None));
        } else if let Some(i) = input.downcast_ref::<aws_sdk_lambda::operation::list_tags::ListTagsInput>() {
            out.push((act("ListTags"), s.function(i.resource().unwrap_or_default()), None));
        } else {
            out.push((act(op), "unknown".into(), None));
        }
    }

    /// A Secrets Manager or EventBridge request: the only secrets Sundial reads are targets'
    /// (`secret:target`); the bus it writes to is its own (`SUNDIAL_EVENT_BUS`), or, as a
    /// tenant, the tenant's target bus (`bus:target`, `eventBridge` targets).
    fn own_resource(&self, op: &str, scope: &Scope, out: &mut Vec<Triple>) {
        let tenant = scope.role().as_str() == "tenant";
        let r = match (self.service, op) {
            ("secretsmanager", "GetSecretValue" | "DescribeSecret") => "secret:target",
            ("events", "PutEvents" | "ListTagsForResource") if tenant => "bus:target",
            ("events", "PutEvents") => "bus:events",
            _ => "unknown",
        };
        out.push((self.act(op), r.into(), None));
    }
}

impl Observer for AccessRecorder {
    const NAME: &'static str = "SundialAccessRecorder";

    fn on_request(&self, meta: &Metadata, input: &Input) {
        let Some(scope) = current() else { return };
        for (action, resource, leading_key) in self.accesses(meta.name(), input, &scope) {
            // Only deletes are conditioned on the key in the construct's policies; keeping the
            // key of every read and write would make a line per item the suite touches.
            let leading_key = leading_key.filter(|_| action == "dynamodb:DeleteItem");
            write(Access { role: scope.role().as_str(), action, resource, leading_key });
        }
    }
}

/// Adds an [`AccessRecorder`] to each client.
pub fn record(clients: Clients) -> Clients {
    crate::intercept::with_interceptors(clients, |service| Observe(AccessRecorder::new(service)))
}
