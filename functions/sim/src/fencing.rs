//! The claims and fencing of every execution, judged from the store's own writes and the
//! target's own invocations (docs/simulation.md, "claims" and "invocations").
//!
//! The simulated DynamoDB reports every write it applies, with the process whose request made
//! it ([`sundial_simaws::Aws::on_write`]); [`WriteLog`] keeps those on execution items (the items
//! with a fencing token), reduced to what fencing is about: status, token, lease owner, lease
//! expiry. The simulated target records every invocation it receives, with the worker process
//! that made it ([`crate::ledger::Ledger::invocations`]). From them:
//!
//! - **claims**: a claim (a write that makes an execution RUNNING under a new holder, or raises
//!   its token) raises the token above every token the execution had; a takeover (a claim of a
//!   RUNNING execution) lands only once the lease it takes over has expired, give or take the
//!   workers' largest clock skew;
//! - **stale writes**: once a newer claim has landed, no write of an older holder lands on the
//!   execution: a process whose last claim of it carries a token below the execution's current
//!   one changes neither the status nor the lease of the RUNNING execution (a zombie's finish,
//!   heartbeat or note is fenced; a CAS on a waiting execution, such as a worker cancelling a
//!   RETRY_WAIT fire, or on a RUNNING one whose lease has expired, is not a holder's write);
//! - **invocations**: the target is invoked at most once per claim (execution and token): a
//!   second invocation under the same token is a second run no fence can tell apart;
//! - **custody**: a worker deletes an execution's message only when something else stands for
//!   it: the execution is final or running, held by a pause, or another copy of its message is
//!   live in a queue (a wait's re-send, a newer chain). Deleting the last copy of a READY or
//!   RETRY_WAIT execution leaves it to the reconciler's safety net: a lost delivery the product
//!   made itself (a message acknowledged on a store error, or on a claim it could not make yet).
//!   A copy a fault lost on its send in the last 15 minutes excuses it, and so does a copy
//!   sent within [`CUSTODY_GAP_MS`] after the delete (a re-send marked before it, sent after).

use crate::ledger::Invoked;
use crate::violation::Violation;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use sundial_simaws::AppliedWrite;

/// What fencing looks at in one version of an execution item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fenced {
    /// Status (`st`).
    pub status: String,
    /// Fencing token (`tok`).
    pub token: u64,
    /// Lease owner (`lo`), if any.
    pub owner: Option<String>,
    /// Lease expiry (`lu`, ms), if any.
    pub lease_until: Option<i64>,
}

/// One write applied to an execution item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecWrite {
    /// The process whose request applied it.
    pub process: String,
    /// When (simulated ms).
    pub at_ms: i64,
    /// The execution (`pk|sk`).
    pub item: String,
    /// Before (`None`: created).
    pub old: Option<Fenced>,
    /// After (`None`: deleted).
    pub new: Option<Fenced>,
}

fn s(item: &serde_json::Map<String, Value>, a: &str) -> Option<String> {
    item.get(a).and_then(|v| v.get("S")).and_then(Value::as_str).map(str::to_string)
}

fn n(item: &serde_json::Map<String, Value>, a: &str) -> Option<i64> {
    item.get(a).and_then(|v| v.get("N")).and_then(Value::as_str).and_then(|x| x.parse().ok())
}

fn fenced(item: &serde_json::Map<String, Value>) -> Option<Fenced> {
    Some(Fenced {
        status: s(item, "st")?,
        token: n(item, "tok")? as u64,
        owner: s(item, "lo"),
        lease_until: n(item, "lu"),
    })
}

/// A delete of the last copy is no custody finding when a new copy is sent within this long
/// after it (ms): the process that raised the generation, marked first, sends second (the
/// reconciler's re-sends go out once its looks are done), and a stale copy dropped in between
/// leaves the fire to that send, not to the reconciler's next look minutes later.
pub const CUSTODY_GAP_MS: i64 = 30_000;

/// What custody needs of an execution now: its status and whether a pause holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Now {
    status: String,
    held: bool,
}

#[derive(Debug, Default)]
struct Log {
    writes: Vec<ExecWrite>,
    /// Each execution as it is now (by `job@ms`).
    now: BTreeMap<String, Now>,
    /// The last instant a send of each execution's message was lost to a fault (ms).
    lost: BTreeMap<String, i64>,
    /// When each execution's message was sent to a queue workers receive from (ms).
    sent: BTreeMap<String, Vec<i64>>,
    custody: Vec<(i64, String, Violation)>,
}

/// Every write to an execution item of the run, in apply order, and the custody check fed by
/// the simulated SQS's deletes.
#[derive(Debug, Clone, Default)]
pub struct WriteLog(Arc<Mutex<Log>>);

impl WriteLog {
    /// Installs the log on `aws`, keeping the writes to `table`'s execution items.
    pub fn install(&self, aws: &sundial_simaws::Aws, table: &str) {
        let (log, table) = (self.clone(), table.to_string());
        aws.on_write(Arc::new(move |w: &AppliedWrite| {
            if w.table != table {
                return;
            }
            let (old, new) = (w.old.as_ref().and_then(fenced), w.new.as_ref().and_then(fenced));
            if old.is_none() && new.is_none() {
                return;
            }
            let any = w.new.as_ref().or(w.old.as_ref());
            let item =
                any.map(|i| format!("{}|{}", s(i, "pk").unwrap_or_default(), s(i, "sk").unwrap_or_default()));
            let item = item.unwrap_or_default();
            if let Ok(mut g) = log.0.lock() {
                let now = w.new.as_ref().and_then(|i| {
                    Some(Now { status: s(i, "st")?, held: i.contains_key(sundial_store::items::attr::HELD) })
                });
                match now {
                    Some(n) => g.now.insert(execution_of(&item), n),
                    None => g.now.remove(&execution_of(&item)),
                };
                g.writes.push(ExecWrite {
                    process: w.process.clone().unwrap_or_default(),
                    at_ms: w.at_ms,
                    item,
                    old,
                    new,
                });
            }
        }));
        let log = self.clone();
        aws.on_delete(Arc::new(
            move |process: Option<&str>, body: &str, live: &mut dyn Iterator<Item = &str>, now: i64| {
                log.deleted(process.unwrap_or_default(), body, live, now);
            },
        ));
    }

    /// Notes that a send of `body` was lost to a fault at `at_ms`.
    pub fn lost_send(&self, body: &str, at_ms: i64) {
        if let Some(id) = crate::world::execution_of_message(body) {
            if let Ok(mut g) = self.0.lock() {
                g.lost.insert(id, at_ms);
            }
        }
    }

    /// Notes that `body` was sent to `queue` at `at_ms` (a dead-letter queue's copies are
    /// parked, not sent for a worker).
    pub fn sent(&self, queue: &str, body: &str, at_ms: i64) {
        if queue.ends_with("-dlq") {
            return;
        }
        if let Some(id) = crate::world::execution_of_message(body) {
            if let Ok(mut g) = self.0.lock() {
                g.sent.entry(id).or_default().push(at_ms);
            }
        }
    }

    /// The custody check at one delete (module doc).
    fn deleted(&self, process: &str, body: &str, live: &mut dyn Iterator<Item = &str>, at_ms: i64) {
        let Some(id) = crate::world::execution_of_message(body) else { return };
        let Ok(mut g) = self.0.lock() else { return };
        let Some(now) = g.now.get(&id).cloned() else { return };
        if !matches!(now.status.as_str(), "READY" | "RETRY_WAIT") || now.held {
            return;
        }
        if g.lost.get(&id).is_some_and(|t| at_ms - t < 15 * 60_000) {
            return;
        }
        if g.custody.iter().any(|(_, _, v)| v.execution.as_deref() == Some(id.as_str())) {
            return;
        }
        let (job, ms) = id.rsplit_once('@').unwrap_or((id.as_str(), ""));
        let stamp = format!("\"s\":{ms}");
        let mut other = false;
        for b in live {
            other |= b.contains(&stamp)
                && b.contains(job)
                && crate::world::execution_of_message(b).as_deref() == Some(id.as_str());
            if other {
                break;
            }
        }
        if !other {
            g.custody.push((at_ms, process.to_string(), Violation {
                invariant: "custody",
                detail: format!(
                    "{process} deleted the last message of the execution at {} while it was {} (not held): only the reconciler can start it now",
                    crate::world::ms(at_ms),
                    now.status
                ),
                execution: Some(id),
            }));
        }
    }

    /// When another process first took over, at or after `since_ms`, an execution whose
    /// claim before that was made by a process named `prefix…` (a stalled worker's), if one did.
    pub fn taken_over_from(&self, prefix: &str, since_ms: i64) -> Option<i64> {
        let g = self.0.lock().ok()?;
        let start = g.writes.partition_point(|w| w.at_ms < since_ms);
        let taken = |i: usize| {
            let w = &g.writes[i];
            is_claim(w)
                && !w.process.starts_with(prefix)
                && w.old.as_ref().is_some_and(|o| o.status == "RUNNING")
                && g.writes[..i]
                    .iter()
                    .rev()
                    .find(|x| x.item == w.item && is_claim(x))
                    .is_some_and(|x| x.process.starts_with(prefix))
        };
        (start..g.writes.len()).find(|i| taken(*i)).map(|i| g.writes[i].at_ms)
    }

    /// The writes so far.
    pub fn writes(&self) -> Vec<ExecWrite> {
        self.0.lock().map(|g| g.writes.clone()).unwrap_or_default()
    }

    /// The custody violations so far, each with the instant of its delete (ms) and the process
    /// that deleted.
    pub fn custody(&self) -> Vec<(i64, String, Violation)> {
        let Ok(g) = self.0.lock() else { return Vec::new() };
        g.custody
            .iter()
            .filter(|(at, _, v)| {
                let sends = v.execution.as_ref().and_then(|id| g.sent.get(id));
                !sends.is_some_and(|s| s.iter().any(|t| *t >= *at && *t - *at <= CUSTODY_GAP_MS))
            })
            .cloned()
            .collect()
    }
}

/// Whether `w` is a claim: the execution becomes RUNNING under another holder (or another
/// claim of the same one), or its token rises.
fn is_claim(w: &ExecWrite) -> bool {
    let Some(new) = &w.new else { return false };
    match &w.old {
        None => new.status == "RUNNING",
        Some(old) => {
            new.token > old.token
                || (new.status == "RUNNING" && (old.status != "RUNNING" || old.owner != new.owner))
        }
    }
}

/// The claims and stale-write checks over `writes` (see the module doc). `max_skew_ms`: the
/// workers' largest clock skew, which a takeover may be early by.
pub fn check_writes(writes: &[ExecWrite], max_skew_ms: i64) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut by_item: BTreeMap<&str, Vec<&ExecWrite>> = BTreeMap::new();
    for w in writes {
        by_item.entry(w.item.as_str()).or_default().push(w);
    }
    for (item, ws) in by_item {
        let exec = Some(execution_of(item));
        let mut highest = 0u64;
        // Each process's last claim token on this execution.
        let mut claimed: BTreeMap<&str, u64> = BTreeMap::new();
        let mut reported = false;
        for w in ws {
            let (Some(old), Some(new)) = (&w.old, &w.new) else {
                if let Some(new) = &w.new {
                    highest = highest.max(new.token);
                }
                continue;
            };
            if is_claim(w) {
                if new.token <= highest && !reported {
                    reported = true;
                    out.push(Violation {
                        invariant: "claims",
                        detail: format!(
                            "{} claimed it with token {} at {}, not above the {highest} it had",
                            w.process,
                            new.token,
                            crate::world::ms(w.at_ms)
                        ),
                        execution: exec.clone(),
                    });
                }
                if old.status == "RUNNING" {
                    let live = old.lease_until.unwrap_or(0) - w.at_ms;
                    if live > max_skew_ms + 1_000 && !reported {
                        reported = true;
                        out.push(Violation {
                            invariant: "claims",
                            detail: format!(
                                "{} took it over at {} from {:?}, whose lease had {live} ms left",
                                w.process,
                                crate::world::ms(w.at_ms),
                                old.owner
                            ),
                            execution: exec.clone(),
                        });
                    }
                }
                highest = highest.max(new.token);
                claimed.insert(w.process.as_str(), new.token);
                continue;
            }
            highest = highest.max(new.token);
            let Some(mine) = claimed.get(w.process.as_str()) else { continue };
            let changed = old.status != new.status || old.lease_until != new.lease_until;
            // Only a holder writes a RUNNING execution (a finish, a heartbeat, a release); a
            // CAS on a waiting one (a worker cancelling a RETRY_WAIT fire whose cancel was
            // requested) is anyone's, whatever it once claimed.
            // A non-holder's CAS on a RUNNING execution whose lease has expired (a cancel that
            // ends an abandoned run, as a takeover would) is not a zombie's write either. The
            // claim path judges the expiry by its own clock, as a takeover does, so it may land
            // early by the same allowance a takeover has (seed 2152: 1.8 s after the lease ended).
            let live = old.lease_until.is_none_or(|lu| w.at_ms < lu - max_skew_ms - 1_000);
            if *mine < old.token && changed && old.status == "RUNNING" && live && !reported {
                reported = true;
                out.push(Violation {
                    invariant: "stale write",
                    detail: format!(
                        "{} (its claim: token {mine}) wrote {} → {} (lease {:?} → {:?}) at {} over token {}",
                        w.process,
                        old.status,
                        new.status,
                        old.lease_until,
                        new.lease_until,
                        crate::world::ms(w.at_ms),
                        old.token
                    ),
                    execution: exec.clone(),
                });
            }
        }
    }
    out
}

/// The execution id (`job@ms`, as `Execution::id`) of an item key `T#{tenant}#J#{job}|E#{ms}`;
/// the key itself when it is not an ordinary execution's (the report still names it).
fn execution_of(item: &str) -> String {
    let parsed = item.split_once('|').and_then(|(pk, sk)| {
        let job = pk.split_once("#J#")?.1;
        let ms = sundial_model::keys::parse_exec_sk(sk)?;
        Some(sundial_model::keys::execution_id(job, ms))
    });
    parsed.unwrap_or_else(|| item.to_string())
}

/// The invocations check: at most one invocation per claim (execution, token).
pub fn check_invocations(invocations: &[Invoked]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<(&str, u64), &Invoked> = BTreeMap::new();
    for inv in invocations {
        if let Some(first) = seen.insert((inv.execution.as_str(), inv.token), inv) {
            if out.iter().any(|v: &Violation| v.execution.as_deref() == Some(inv.execution.as_str())) {
                continue;
            }
            out.push(Violation {
                invariant: "invocations",
                detail: format!(
                    "invoked twice under token {}: by {} at {} (attempt {}) and by {} at {} (attempt {})",
                    inv.token,
                    first.process,
                    crate::world::ms(first.at_ms),
                    first.attempt,
                    inv.process,
                    crate::world::ms(inv.at_ms),
                    inv.attempt
                ),
                execution: Some(inv.execution.clone()),
            });
        }
    }
    out
}

/// The overlap check of the fires that run one at a time (`serial`: the ids of the executions
/// whose own definitions are SERIALIZE or FORBID): no two such executions of one job run at once. A run taken over while it ran (a
/// zombie's, superseded by a higher token of the same execution that started before it ended)
/// is not counted: the takeover is the execution's run from then on.
pub fn check_overlaps(invocations: &[Invoked], serial: &std::collections::BTreeSet<&str>) -> Vec<Violation> {
    let mut by_job: BTreeMap<&str, Vec<&Invoked>> = BTreeMap::new();
    for i in invocations {
        let job = i.execution.split('@').next().unwrap_or_default();
        if serial.contains(i.execution.as_str()) && i.end_ms > i.at_ms {
            by_job.entry(job).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for (_, runs) in by_job {
        let live: Vec<&Invoked> = runs
            .iter()
            .copied()
            .filter(|r| {
                !runs.iter().any(|o| o.execution == r.execution && o.token > r.token && o.at_ms < r.end_ms)
            })
            .collect();
        for (k, a) in live.iter().enumerate() {
            if let Some(b) = live[k + 1..]
                .iter()
                .find(|b| b.execution != a.execution && b.at_ms < a.end_ms && a.at_ms < b.end_ms)
            {
                out.push(Violation {
                    invariant: "concurrency",
                    detail: format!(
                        "ran {} → {} while {} ran {} → {} (the job runs one fire at a time)",
                        crate::world::ms(b.at_ms),
                        crate::world::ms(b.end_ms),
                        a.execution,
                        crate::world::ms(a.at_ms),
                        crate::world::ms(a.end_ms)
                    ),
                    execution: Some(b.execution.clone()),
                });
                break;
            }
        }
    }
    out
}

/// The summary line: how often the run exercised fencing. `stalls`: the fault plan's zombies.
pub fn summary(writes: &[ExecWrite], invocations: &[Invoked], stalls: usize) -> String {
    let takeovers = writes
        .iter()
        .filter(|w| is_claim(w) && w.old.as_ref().is_some_and(|o| o.status == "RUNNING"))
        .count();
    let mut tokens: BTreeMap<&str, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for i in invocations {
        tokens.entry(i.execution.as_str()).or_default().insert(i.token);
    }
    let rerun = tokens.values().filter(|t| t.len() > 1).count();
    if std::env::var("SUNDIAL_SIM_DEBUG").is_ok() {
        for w in
            writes.iter().filter(|w| is_claim(w) && w.old.as_ref().is_some_and(|o| o.status == "RUNNING"))
        {
            let later: Vec<String> = writes
                .iter()
                .filter(|x| x.item == w.item && x.at_ms >= w.at_ms)
                .map(|x| {
                    format!(
                        "{} {} {:?}->{:?}",
                        crate::world::ms(x.at_ms),
                        x.process,
                        x.old.as_ref().map(|o| (&o.status, o.token)),
                        x.new.as_ref().map(|o| (&o.status, o.token))
                    )
                })
                .collect();
            eprintln!(
                "takeover {} at {} by {} from {:?}: {later:#?}",
                w.item,
                crate::world::ms(w.at_ms),
                w.process,
                w.old.as_ref().and_then(|o| o.owner.clone())
            );
        }
    }
    format!(
        "fencing: {stalls} worker stalls, {takeovers} takeovers, {} invocations, {rerun} executions invoked under more than one token (a naive target runs each again)\n",
        invocations.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(status: &str, token: u64, owner: &str, lu: Option<i64>) -> Option<Fenced> {
        Some(Fenced { status: status.into(), token, owner: Some(owner.into()), lease_until: lu })
    }

    fn w(p: &str, at: i64, old: Option<Fenced>, new: Option<Fenced>) -> ExecWrite {
        ExecWrite { process: p.into(), at_ms: at, item: "e".into(), old, new }
    }

    #[test]
    fn a_takeover_after_expiry_then_the_zombies_fenced_silence_is_clean() {
        let ws = [
            w("a", 0, None, f("READY", 0, "", None)),
            w("a", 10, f("READY", 0, "", None), f("RUNNING", 1, "a", Some(30_010))),
            w("b", 40_000, f("RUNNING", 1, "a", Some(30_010)), f("RUNNING", 2, "b", Some(70_000))),
            w("b", 41_000, f("RUNNING", 2, "b", Some(70_000)), f("SUCCEEDED", 2, "b", None)),
        ];
        assert_eq!(check_writes(&ws, 0), Vec::new());
    }

    #[test]
    fn a_zombies_finish_over_a_newer_claim_is_a_stale_write() {
        let ws = [
            w("a", 10, f("READY", 0, "", None), f("RUNNING", 1, "a", Some(30_010))),
            w("b", 40_000, f("RUNNING", 1, "a", Some(30_010)), f("RUNNING", 2, "b", Some(70_000))),
            w("a", 45_000, f("RUNNING", 2, "b", Some(70_000)), f("SUCCEEDED", 2, "b", None)),
        ];
        let v = check_writes(&ws, 0);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, "stale write");
    }

    #[test]
    fn a_former_holder_cancelling_a_waiting_fire_by_cas_is_not_a_stale_write() {
        // MIX_24 seed 9: a worker that once claimed token 1 cancels the fire in RETRY_WAIT at
        // token 3, its cancel requested: a CAS on the current token, not a holder's write.
        let ws = [
            w("a", 10, f("READY", 0, "", None), f("RUNNING", 1, "a", Some(30_010))),
            w("a", 20, f("RUNNING", 1, "a", Some(30_010)), f("RETRY_WAIT", 1, "a", None)),
            w("b", 99, f("RETRY_WAIT", 1, "a", None), f("RUNNING", 3, "b", Some(30_099))),
            w("b", 120, f("RUNNING", 3, "b", Some(30_099)), f("RETRY_WAIT", 3, "b", None)),
            w("a", 200, f("RETRY_WAIT", 3, "b", None), f("CANCELED", 3, "b", None)),
        ];
        assert_eq!(check_writes(&ws, 0), Vec::new());
    }

    #[test]
    fn a_cancel_of_an_abandoned_run_after_its_lease_expired_is_not_a_stale_write() {
        // Full mix seed 154: a worker that once held token 1 ends the run of token 3, its lease
        // expired and its cancel requested, by a CAS on token 3.
        let ws = [
            w("a", 10, f("READY", 0, "", None), f("RUNNING", 1, "a", Some(30_010))),
            w("b", 40_000, f("RUNNING", 1, "a", Some(30_010)), f("RUNNING", 3, "b", Some(70_000))),
            w("a", 75_000, f("RUNNING", 3, "b", Some(70_000)), f("CANCELED", 3, "b", None)),
        ];
        assert_eq!(check_writes(&ws, 0), Vec::new());
    }

    #[test]
    fn a_cancel_that_ends_an_expired_lease_by_its_own_clock_is_not_a_stale_write() {
        // Full mix seed 2152: the claim path's cancel of a RUNNING run whose lease expired, by a
        // worker that once held token 1, lands on token 2 within the skew allowance of the
        // lease's end (the allowance a takeover gets too); a write while the lease still has
        // more than that left is a zombie's.
        let at = |t| {
            [
                w("a", 10, f("READY", 0, "", None), f("RUNNING", 1, "a", Some(30_010))),
                w("a", 20, f("RUNNING", 1, "a", Some(30_010)), f("RETRY_WAIT", 1, "a", None)),
                w("b", 40_000, f("RETRY_WAIT", 1, "a", None), f("RUNNING", 2, "b", Some(70_000))),
                w("a", t, f("RUNNING", 2, "b", Some(70_000)), f("CANCELED", 2, "b", None)),
            ]
        };
        assert_eq!(check_writes(&at(69_500), 500), Vec::new());
        assert_eq!(check_writes(&at(71_759), 500), Vec::new());
        assert_eq!(check_writes(&at(60_000), 500)[0].invariant, "stale write");
    }

    #[test]
    fn a_claim_that_keeps_the_token_or_takes_a_live_lease_is_reported() {
        let reuse = [
            w("a", 10, f("READY", 0, "", None), f("RUNNING", 1, "a", Some(30_010))),
            w("a", 20, f("RUNNING", 1, "a", Some(30_010)), f("RETRY_WAIT", 1, "a", None)),
            w("b", 99, f("RETRY_WAIT", 1, "a", None), f("RUNNING", 1, "b", Some(30_099))),
        ];
        assert_eq!(check_writes(&reuse, 0)[0].invariant, "claims");
        let live = [
            w("a", 10, f("READY", 0, "", None), f("RUNNING", 1, "a", Some(30_010))),
            w("b", 5_000, f("RUNNING", 1, "a", Some(30_010)), f("RUNNING", 2, "b", Some(35_000))),
        ];
        assert!(check_writes(&live, 4_000)[0].detail.contains("lease had"));
    }

    #[test]
    fn a_second_invocation_under_one_token_is_reported() {
        let i = |p: &str, tok: u64| Invoked {
            execution: "j@1".into(),
            token: tok,
            attempt: 1,
            process: p.into(),
            at_ms: 0,
            end_ms: 0,
        };
        assert!(check_invocations(&[i("a", 1), i("b", 2)]).is_empty());
        assert_eq!(check_invocations(&[i("a", 1), i("b", 1)]).len(), 1);
    }
}
