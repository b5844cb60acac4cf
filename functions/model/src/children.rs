//! Parent and child executions (`docs/children.md`): the pure rules.
//!
//! A job with `shards: N` or `broadcast: {members}` fires as usual: one execution per fire,
//! the *parent*, keyed `(job, scheduled_at)`. The worker that claims the parent does not call
//! the target; it creates one child execution per [`ChildKey`] ([`plan`], [`child_of`]),
//! conditionally (a repeated fan-out creates nothing twice), and moves the parent
//! RUNNING → WAITING under its fencing token. Each child is an ordinary execution (claimed,
//! fenced, retried, timed out, re-sent by the reconciler, dead-lettered on its own) whose
//! invocation names its shard or member and whose id is its own idempotency key. The parent
//! only aggregates: each child's final status is recorded on it ([`Tally`]), and the write that
//! records the last one completes it ([`verdict`]): SUCCEEDED, or FAILED naming the children
//! that did not succeed.
//!
//! The child abstraction is the [`ChildKey`]: a shard index, a broadcast member, and (reserved
//! for map-reduce children emitted at run time) an item key. Everything below the key (the
//! store, the worker, the reconciler, the API) handles any kind the same way.

mod types;

pub use crate::limits::MAX_CHILDREN;
pub use types::{Broadcast, ChildKey, Tally};

use crate::{AuditEvent, ExecStatus, Execution, JobDefinition, ValidationError};
use chrono::{DateTime, Utc};

/// Audit code of a parent's RUNNING → WAITING event and of each child's creation event.
pub const FAN_OUT_CODE: &str = "fan_out";
/// Error code of a parent some of whose children did not succeed.
pub const CHILDREN_FAILED_CODE: &str = "ChildrenFailed";

/// Where a child sits among its siblings, as its invocation tells the handler.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Position {
    /// Shard index (sharded jobs).
    pub shard_index: Option<u32>,
    /// Shard count (sharded jobs).
    pub shard_total: Option<u32>,
    /// Broadcast member.
    pub member: Option<String>,
    /// Map item key (reserved).
    pub item: Option<String>,
}

impl Position {
    /// The position of `e` (all `None` for an execution that is not a child).
    pub fn of(e: &Execution) -> Self {
        match &e.child {
            None => Position::default(),
            Some(ChildKey::Shard(i)) => {
                Position { shard_index: Some(*i), shard_total: e.definition.shards, ..Default::default() }
            }
            Some(ChildKey::Member(m)) => Position { member: Some(m.clone()), ..Default::default() },
            Some(ChildKey::Item(k)) => Position { item: Some(k.clone()), ..Default::default() },
        }
    }
}

/// How a parent ends once every child is final.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParentEnd {
    /// Every child succeeded.
    Succeeded,
    /// Some did not: their tags, and a message naming them.
    Failed {
        /// Tags of the children that did not succeed (FAILED, DEAD, CANCELED), in order.
        failed: Vec<String>,
        /// `"2 of 8 children did not succeed: s2 (DEAD), s5 (FAILED)"`.
        message: String,
    },
}

impl ParentEnd {
    /// The parent's final status.
    pub fn status(&self) -> ExecStatus {
        match self {
            ParentEnd::Succeeded => ExecStatus::Succeeded,
            ParentEnd::Failed { .. } => ExecStatus::Failed,
        }
    }
}

/// The parent's end, once every child is counted; `None` while some are not.
pub fn verdict(t: &Tally) -> Option<ParentEnd> {
    if t.total == 0 || (t.finished.len() as u32) < t.total {
        return None;
    }
    let bad: Vec<(&String, &ExecStatus)> =
        t.finished.iter().filter(|(_, st)| **st != ExecStatus::Succeeded).collect();
    if bad.is_empty() {
        return Some(ParentEnd::Succeeded);
    }
    let mut bad = bad;
    // Shards in index order (s2 before s10), members by name.
    bad.sort_by_key(|(tag, _)| (ChildKey::parse(tag), (*tag).clone()));
    let named: Vec<String> = bad.iter().map(|(tag, st)| format!("{tag} ({})", st.as_str())).collect();
    Some(ParentEnd::Failed {
        failed: bad.iter().map(|(tag, _)| (*tag).clone()).collect(),
        message: format!("{} of {} children did not succeed: {}", bad.len(), t.total, named.join(", ")),
    })
}

/// The children one fire of `def` runs as, or `None` for an ordinary job.
pub fn plan(def: &JobDefinition) -> Option<Vec<ChildKey>> {
    if let Some(n) = def.shards {
        return Some((0..n).map(ChildKey::Shard).collect());
    }
    def.broadcast.as_ref().map(|b| b.members.iter().cloned().map(ChildKey::Member).collect())
}

/// Whether `e` is a parent to fan out when claimed (a fire of a sharded or broadcast job that
/// is not itself a child).
pub fn fans_out(e: &Execution) -> bool {
    e.child.is_none() && plan(&e.definition).is_some()
}

/// The child `key` of `parent`, created READY at `now` by `actor`: same job, instant and
/// definition snapshot, available at once. The parent keeps the job's concurrency slot and
/// start deadline, so a child runs under `ALLOW` and reports no start deadline of its own.
pub fn child_of(parent: &Execution, key: ChildKey, now: DateTime<Utc>, actor: &str) -> Execution {
    let mut definition = parent.definition.clone();
    definition.concurrency = crate::ConcurrencyPolicy::Allow;
    definition.start_deadline_secs = None;
    definition.finish_deadline_secs = None;
    let now_ms = now.timestamp_millis();
    Execution {
        tenant: parent.tenant.clone(),
        job_id: parent.job_id.clone(),
        scheduled_at: parent.scheduled_at,
        fire_at: now,
        created_at: now,
        status: ExecStatus::Ready,
        attempt: 0,
        fencing_token: 0,
        lease_owner: None,
        lease_until: None,
        available_at: now_ms,
        def_version: parent.def_version,
        definition,
        missed_range: parent.missed_range,
        missed_except: parent.missed_except.clone(),
        last_error: None,
        cancel_requested: false,
        timeline: vec![AuditEvent {
            at: now_ms,
            actor: actor.to_string(),
            from: None,
            to: ExecStatus::Ready,
            attempt: 0,
            token: 0,
            code: Some(FAN_OUT_CODE.to_string()),
        }],
        child: Some(key),
        children: None,
        map_reduce: None,
    }
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ValidationError {
    ValidationError { field: field.into(), reason: reason.into() }
}

/// Checks `shards` and `broadcast` (called by [`JobDefinition::validate_with`]).
pub fn validate(def: &JobDefinition) -> Result<(), ValidationError> {
    if def.shards.is_some() && def.broadcast.is_some() {
        return Err(invalid(
            "broadcast",
            "a job is sharded (shards) or broadcast, not both: shards split one run's data, broadcast runs everything per member",
        ));
    }
    if let Some(n) = def.shards {
        if n == 0 || n > MAX_CHILDREN {
            return Err(invalid("shards", format!("must be between 1 and {MAX_CHILDREN}")));
        }
    }
    if let Some(b) = &def.broadcast {
        if b.members.is_empty() || b.members.len() > MAX_CHILDREN as usize {
            return Err(invalid("broadcast.members", format!("must list 1 to {MAX_CHILDREN} members")));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, m) in b.members.iter().enumerate() {
            crate::keys::validate_id("member", m)
                .map_err(|e| invalid(format!("broadcast.members[{i}]"), e.reason))?;
            if !seen.insert(m.as_str()) {
                return Err(invalid(format!("broadcast.members[{i}]"), format!("{m:?} is listed twice")));
            }
        }
    }
    Ok(())
}

/// The executions one fire of `def` makes at most: itself, its fan-out children (shards or
/// broadcast members) and, for map-reduce, its items (`mapReduce.maxItems`). With the field a
/// budget refusal names: the one that multiplies the fire.
pub fn executions_per_fire(def: &JobDefinition) -> (u64, &'static str) {
    let children = plan(def).map_or(0, |k| k.len() as u64);
    let items = def.map_reduce.as_ref().map_or(0, |m| m.limit());
    let field = if items > 0 {
        "mapReduce.maxItems"
    } else if def.broadcast.is_some() {
        "broadcast"
    } else if def.shards.is_some() {
        "shards"
    } else {
        "schedule.expression"
    };
    (1 + children + items, field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;
    use sundial_schedule::ScheduleSpec;

    fn def() -> JobDefinition {
        JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://example.com"))
    }

    #[test]
    fn child_keys_round_trip_through_tags_and_sort_parts() {
        for k in [ChildKey::Shard(0), ChildKey::Shard(99), ChildKey::Member("eu-west-1".into())] {
            assert_eq!(ChildKey::parse(&k.tag()), Some(k.clone()));
            assert_eq!(ChildKey::parse(&k.sort_part()), Some(k.clone()));
        }
        assert!(ChildKey::Shard(2).sort_part() < ChildKey::Shard(10).sort_part());
        for bad in ["", "s", "sx", "s123456", "m-", "m-a#b", "x-1", "m-a.b"] {
            assert_eq!(ChildKey::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_parent_ends_when_every_child_is_counted_and_names_the_failing_ones() {
        let mut t = Tally { total: 3, ..Default::default() };
        assert_eq!(verdict(&t), None);
        t.finished.insert("s0".into(), ExecStatus::Succeeded);
        t.finished.insert("s10".into(), ExecStatus::Dead);
        assert_eq!(verdict(&t), None, "one child still open");
        t.finished.insert("s2".into(), ExecStatus::Failed);
        let Some(ParentEnd::Failed { failed, message }) = verdict(&t) else { panic!("failed expected") };
        assert_eq!(failed, vec!["s2".to_string(), "s10".to_string()]);
        assert_eq!(message, "2 of 3 children did not succeed: s2 (FAILED), s10 (DEAD)");
        let ok = Tally {
            total: 2,
            finished: [("s0".into(), ExecStatus::Succeeded), ("s1".into(), ExecStatus::Succeeded)].into(),
        };
        assert_eq!(verdict(&ok), Some(ParentEnd::Succeeded));
    }

    #[test]
    fn validation_names_the_field() {
        let field = |d: &JobDefinition| validate(d).err().map(|e| e.field);
        let mut d = def();
        assert_eq!(field(&d), None);
        d.shards = Some(0);
        assert_eq!(field(&d).as_deref(), Some("shards"));
        d.shards = Some(MAX_CHILDREN + 1);
        assert_eq!(field(&d).as_deref(), Some("shards"));
        d.shards = Some(8);
        assert_eq!(field(&d), None);
        d.broadcast = Some(Broadcast { members: vec!["a".into()] });
        assert_eq!(field(&d).as_deref(), Some("broadcast"), "both refused");
        d.shards = None;
        assert_eq!(field(&d), None);
        d.broadcast = Some(Broadcast { members: vec![] });
        assert_eq!(field(&d).as_deref(), Some("broadcast.members"));
        d.broadcast = Some(Broadcast { members: vec!["a".into(), "b".into(), "a".into()] });
        assert_eq!(field(&d).as_deref(), Some("broadcast.members[2]"));
        d.broadcast = Some(Broadcast { members: vec!["a".into(), "b c".into()] });
        assert_eq!(field(&d).as_deref(), Some("broadcast.members[1]"));
    }

    #[test]
    fn a_child_is_an_ordinary_ready_execution_that_knows_only_its_own_shard() {
        let mut d = def();
        d.shards = Some(8);
        d.concurrency = crate::ConcurrencyPolicy::Forbid;
        d.start_deadline_secs = Some(60);
        let keys = plan(&d).unwrap_or_default();
        assert_eq!(keys.len(), 8);
        let at = crate::ms_to_dt(1_764_469_800_000);
        let cfg = crate::LocalDeployment::local("x-", &["default"], 8);
        let job = crate::Job::new(&cfg, "acme", "settle", d, at).unwrap_or_else(|e| panic!("{e}"));
        let sched = sundial_schedule::Schedule::parse(&job.definition.schedule, at)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let parent = Execution::ready(&job, &sched, at, None, at, "tick:1");
        assert!(fans_out(&parent));
        let c = child_of(&parent, keys[3].clone(), at, "worker:w");
        assert!(!fans_out(&c), "a child never fans out again");
        assert_eq!(c.definition.concurrency, crate::ConcurrencyPolicy::Allow);
        assert_eq!(c.definition.start_deadline_secs, None);
        assert_eq!(
            Position::of(&c),
            Position { shard_index: Some(3), shard_total: Some(8), ..Default::default() }
        );
        assert_eq!(c.id(), "settle@1764469800000.s3");
        assert_eq!(c.global_id(), "acme:settle@1764469800000.s3");
        assert_ne!(c.global_id(), parent.global_id());
    }
}
