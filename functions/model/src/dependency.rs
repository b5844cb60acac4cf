//! Per-period dependencies (docs/dependencies.md): a job may declare, in `after`, the runs of
//! other jobs of its tenant that must have ended well before each of its fires starts, and what
//! happens when they have not by a deadline.
//!
//! **The period rule.** A fire of a job stands for the period from its scheduled instant to the
//! next one. The upstream run a downstream fire at instant `t` waits for is the upstream's fire
//! whose period contains `t` (`same`: the upstream's last fire at or before `t`), the one before
//! it (`previous`), or the one whose period contains `t + offsetSecs` (`offset`). Instants are
//! absolute, so the rule holds between jobs in different zones and across DST changes: each
//! job's fires are its own schedule's, computed in its own zone with its own DST policy.
//!
//! Everything here is pure; the worker reads the upstream jobs and executions and asks
//! [`verdict`] what to do.

mod types;

pub use types::{Dependency, DependencyPeriod, DependencyStatus, OnDependencyDeadline};

use crate::definition::{invalid, ValidationError};
use crate::ExecStatus;
use chrono::{DateTime, Duration, Utc};
use sundial_schedule::Schedule;

/// Most upstreams one job may wait for.
pub const MAX_UPSTREAMS: usize = 8;

/// Largest `offsetSecs` either way (31 days).
pub const MAX_OFFSET_SECS: i64 = 31 * 86_400;

/// Longest `dependencyDeadlineSecs` (7 days, like the start deadline).
pub const MAX_DEPENDENCY_DEADLINE_SECS: u32 = 7 * 86_400;

/// How long a waiting fire's copy sleeps before it looks again when nothing wakes it (SQS's
/// longest delay): a backstop for a lost wake, not how a fire learns of its upstream.
pub const BACKSTOP_SECS: i64 = 900;

/// How soon a fire whose upstream run does not exist yet looks again (ms): the upstream's
/// instant has not come, its job is paused, or a backfill has not put it yet. The upstream's
/// own finish cannot wake a fire that could not register on it.
pub const MISSING_UPSTREAM_POLL_MS: i64 = 60_000;

impl DependencyStatus {
    /// Whether an upstream run in `status` satisfies the dependency.
    pub fn satisfied_by(self, status: ExecStatus) -> bool {
        match self {
            DependencyStatus::Succeeded => status == ExecStatus::Succeeded,
            DependencyStatus::Final => status.is_terminal(),
        }
    }
}

impl Dependency {
    /// The upstream's scheduled instant that a downstream fire at `at` waits for, on the
    /// upstream's `schedule`; `None` when the upstream has no such fire (before its first).
    pub fn upstream_instant(&self, at: DateTime<Utc>, upstream: &Schedule) -> Option<DateTime<Utc>> {
        match self.period {
            DependencyPeriod::Same => upstream.prev_at_or_before(at),
            DependencyPeriod::Previous => {
                let same = upstream.prev_at_or_before(at)?;
                upstream.prev_at_or_before(same - Duration::milliseconds(1))
            }
            DependencyPeriod::Offset => {
                upstream.prev_at_or_before(at + Duration::seconds(self.offset_secs.unwrap_or(0)))
            }
        }
    }

    /// Whether this edge can make a fire wait for a run of its own job that waits for it:
    /// `same` and a non-negative offset look at the present or the future, `previous` and a
    /// negative offset strictly at the past (they cannot close a cycle of waits).
    pub fn looks_back(&self) -> bool {
        match self.period {
            DependencyPeriod::Same => false,
            DependencyPeriod::Previous => true,
            DependencyPeriod::Offset => self.offset_secs.unwrap_or(0) < 0,
        }
    }
}

/// The syntax of a job's `after` (ids, offsets, no upstream twice, at most
/// [`MAX_UPSTREAMS`]) and of its deadline. That each upstream exists and that no cycle forms
/// is the control plane's check, which reads the tenant's jobs ([`find_cycle`]).
pub fn validate(
    job_id: Option<&str>,
    after: &[Dependency],
    deadline_secs: Option<u32>,
) -> Result<(), ValidationError> {
    if after.len() > MAX_UPSTREAMS {
        return Err(invalid("after", format!("at most {MAX_UPSTREAMS} upstreams per job")));
    }
    for (i, d) in after.iter().enumerate() {
        let field = |f: &str| format!("after[{i}].{f}");
        crate::keys::validate_id("job", &d.job).map_err(|e| invalid(field("job"), e.reason))?;
        match (d.period, d.offset_secs) {
            (DependencyPeriod::Offset, None) => {
                return Err(invalid(field("offsetSecs"), "required with period \"offset\""));
            }
            (DependencyPeriod::Offset, Some(o)) if o.abs() > MAX_OFFSET_SECS => {
                return Err(invalid(
                    field("offsetSecs"),
                    format!("must be between -{MAX_OFFSET_SECS} and {MAX_OFFSET_SECS} (31 days)"),
                ));
            }
            (DependencyPeriod::Same | DependencyPeriod::Previous, Some(_)) => {
                return Err(invalid(field("offsetSecs"), "only with period \"offset\""));
            }
            _ => {}
        }
        if after[..i].iter().any(|o| o.job == d.job && o.period == d.period && o.offset_secs == d.offset_secs)
        {
            return Err(invalid(field("job"), format!("{:?} is listed twice for the same period", d.job)));
        }
        if Some(d.job.as_str()) == job_id && !d.looks_back() {
            return Err(invalid(
                field("period"),
                format!(
                    "a job cannot wait for its own run of the same period (cycle {0} → {0}); use \"previous\"",
                    d.job
                ),
            ));
        }
    }
    if let Some(d) = deadline_secs {
        if d == 0 || d > MAX_DEPENDENCY_DEADLINE_SECS {
            return Err(invalid(
                "dependencyDeadlineSecs",
                format!("must be between 1 and {MAX_DEPENDENCY_DEADLINE_SECS} (7 days)"),
            ));
        }
        if after.is_empty() {
            return Err(invalid("dependencyDeadlineSecs", "only with after"));
        }
    }
    Ok(())
}

/// A cycle of waits among a tenant's jobs, if `job` with upstreams `after` would close one:
/// the jobs along it, `job` first and last (`[a, b, c, a]`). Only edges that can wait for the
/// present or the future count ([`Dependency::looks_back`] edges always end in the past, so a
/// chain through one never waits for itself). `upstreams_of` gives every other job's `after`.
pub fn find_cycle<'a>(
    job: &'a str,
    after: &'a [Dependency],
    upstreams_of: &dyn Fn(&str) -> Option<&'a [Dependency]>,
) -> Option<Vec<String>> {
    // Depth-first from `job` along forward edges; a path back to `job` is the cycle.
    let forward = |deps: &'a [Dependency]| -> Vec<&'a str> {
        let mut v: Vec<&str> = deps.iter().filter(|d| !d.looks_back()).map(|d| d.job.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut path: Vec<&str> = vec![job];
    let mut stack: Vec<(Vec<&str>, usize)> = vec![(forward(after), 0)];
    let mut seen: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    while let Some((next, i)) = stack.last_mut() {
        let Some(&n) = next.get(*i) else {
            stack.pop();
            path.pop();
            continue;
        };
        *i += 1;
        if n == job {
            let mut cycle: Vec<String> = path.iter().map(|s| s.to_string()).collect();
            cycle.push(job.to_string());
            return Some(cycle);
        }
        if !seen.insert(n) {
            continue;
        }
        if let Some(deps) = upstreams_of(n) {
            path.push(n);
            stack.push((forward(deps), 0));
        }
    }
    None
}

/// What one upstream looks like to a waiting fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// The run exists with this status.
    Run(ExecStatus),
    /// The upstream job has no fire for that period, or the job is gone: nothing will ever
    /// satisfy the dependency.
    NoFire,
    /// The run's instant is known but its execution does not exist (yet).
    NotPut,
}

/// What a fire with dependencies does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every upstream is satisfied: go on to the claim.
    Go,
    /// Wait: look again at `look_at` (ms) unless woken first.
    Wait {
        /// When to look again.
        look_at: i64,
    },
    /// The deadline passed unsatisfied: apply the policy.
    Deadline(OnDependencyDeadline),
}

/// The instant (ms) from which a fire's dependency deadline counts: its scheduled instant, or
/// its latest replay (DEAD → READY) — a replay waits afresh for upstreams fixed since.
pub fn deadline_base(e: &crate::Execution) -> i64 {
    let replayed = e
        .timeline
        .iter()
        .rev()
        .find(|ev| ev.from == Some(ExecStatus::Dead) && ev.to == ExecStatus::Ready)
        .map(|ev| ev.at);
    replayed.unwrap_or(0).max(e.scheduled_at.timestamp_millis())
}

/// Whether `e` was condemned by its dependency deadline (`onDependencyDeadline: fail`): a
/// `DependencyNotMet` note since its [`deadline_base`]. The note is written on the READY item
/// before the claim that ends it DEAD, so a worker that takes over a claim whose worker died
/// in between ends it DEAD too instead of running it.
pub fn condemned(e: &crate::Execution) -> bool {
    let base = deadline_base(e);
    e.timeline.iter().any(|ev| {
        ev.at >= base
            && ev.from == Some(ExecStatus::Ready)
            && ev.to == ExecStatus::Ready
            && ev.code.as_deref() == Some(crate::retry::codes::DEPENDENCY_NOT_MET)
    })
}

/// The dependency deadline of `e` (ms): `dependencyDeadlineSecs`, else `startDeadlineSecs`,
/// else `retry.maxAgeSecs`, after [`deadline_base`].
pub fn deadline(e: &crate::Execution) -> i64 {
    let def = &e.definition;
    let secs = def.dependency_deadline_secs.or(def.start_deadline_secs).unwrap_or(def.retry.max_age_secs);
    deadline_base(e) + i64::from(secs) * 1_000
}

/// The decision for a fire of `e` at `now_ms`, given each upstream (in `after` order).
pub fn verdict(e: &crate::Execution, upstreams: &[(&Dependency, Upstream)], now_ms: i64) -> Verdict {
    let unmet: Vec<&(&Dependency, Upstream)> = upstreams
        .iter()
        .filter(|(d, u)| !matches!(u, Upstream::Run(s) if d.status.satisfied_by(*s)))
        .collect();
    if unmet.is_empty() {
        return Verdict::Go;
    }
    let deadline = deadline(e);
    if now_ms >= deadline || unmet.iter().all(|(_, u)| *u == Upstream::NoFire) {
        return Verdict::Deadline(e.definition.on_dependency_deadline);
    }
    // Registered on every existing run: its finish wakes us; the backstop only covers a lost
    // wake. A run not put yet cannot wake us: look again soon.
    let poll = if unmet.iter().any(|(_, u)| *u == Upstream::NotPut) {
        MISSING_UPSTREAM_POLL_MS
    } else {
        BACKSTOP_SECS * 1_000
    };
    Verdict::Wait { look_at: (now_ms + poll).min(deadline) }
}

/// A one-line account of what is unmet, for the audit and the error message:
/// `close-books@1764547200000 is RUNNING; fx@… not put`.
pub fn describe_unmet(upstreams: &[(&Dependency, Upstream, Option<i64>)]) -> String {
    let mut parts = Vec::new();
    for (d, u, at) in upstreams {
        let id = match at {
            Some(ms) => crate::keys::execution_id(&d.job, *ms),
            None => d.job.clone(),
        };
        match u {
            Upstream::Run(s) if d.status.satisfied_by(*s) => {}
            Upstream::Run(s) => parts.push(format!("{id} is {}", s.as_str())),
            Upstream::NotPut => parts.push(format!("{id} does not exist yet")),
            Upstream::NoFire => parts.push(format!("{} has no run for this period", d.job)),
        }
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use sundial_schedule::ScheduleSpec;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn sched(expr: &str, tz: &str) -> Schedule {
        let anchor = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        Schedule::parse(&ScheduleSpec::new(expr, tz), anchor).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn dep(job: &str, period: DependencyPeriod, offset: Option<i64>) -> Dependency {
        Dependency { job: job.into(), period, offset_secs: offset, status: DependencyStatus::Succeeded }
    }

    #[test]
    fn the_same_period_is_the_upstream_fire_whose_period_contains_the_instant_across_zones_and_dst() {
        // Upstream daily 23:30 New York; downstream daily 06:00 London. Europe moves its clocks
        // on 2026-03-29, America on 2026-03-08: between them the offset is 4 h, not 5.
        let up = sched("0 30 23 * * *", "America/New_York");
        let d = dep("close", DependencyPeriod::Same, None);
        // 06:00 London on 2026-03-10 (GMT) = 06:00Z; NY is EDT since 03-08: 23:30 EDT = 03:30Z
        assert_eq!(d.upstream_instant(at("2026-03-10T06:00:00Z"), &up), Some(at("2026-03-10T03:30:00Z")));
        // before the US change: 23:30 EST = 04:30Z
        assert_eq!(d.upstream_instant(at("2026-03-05T06:00:00Z"), &up), Some(at("2026-03-05T04:30:00Z")));
        // after both: 06:00 BST = 05:00Z, 23:30 EDT = 03:30Z
        assert_eq!(d.upstream_instant(at("2026-03-30T05:00:00Z"), &up), Some(at("2026-03-30T03:30:00Z")));
        let prev = dep("close", DependencyPeriod::Previous, None);
        assert_eq!(prev.upstream_instant(at("2026-03-10T06:00:00Z"), &up), Some(at("2026-03-09T03:30:00Z")));
        // an instant equal to an upstream fire is in that fire's period
        assert_eq!(d.upstream_instant(at("2026-03-10T03:30:00Z"), &up), Some(at("2026-03-10T03:30:00Z")));
        let off = dep("close", DependencyPeriod::Offset, Some(-86_400));
        assert_eq!(off.upstream_instant(at("2026-03-10T06:00:00Z"), &up), Some(at("2026-03-09T03:30:00Z")));
    }

    #[test]
    fn offsets_are_required_with_offset_only_and_bounded() {
        let ok = |after: Vec<Dependency>| validate(Some("me"), &after, None);
        let e = ok(vec![dep("a", DependencyPeriod::Offset, None)]).unwrap_err();
        assert_eq!(e.field, "after[0].offsetSecs");
        let e = ok(vec![dep("a", DependencyPeriod::Same, Some(5))]).unwrap_err();
        assert_eq!(e.field, "after[0].offsetSecs");
        let e = ok(vec![dep("a", DependencyPeriod::Offset, Some(MAX_OFFSET_SECS + 1))]).unwrap_err();
        assert_eq!(e.field, "after[0].offsetSecs");
        let e = ok(vec![dep("a", DependencyPeriod::Same, None), dep("a", DependencyPeriod::Same, None)])
            .unwrap_err();
        assert_eq!(e.field, "after[1].job");
        let e = ok(vec![dep("bad id!", DependencyPeriod::Same, None)]).unwrap_err();
        assert_eq!(e.field, "after[0].job");
        let e = ok(vec![dep("me", DependencyPeriod::Same, None)]).unwrap_err();
        assert_eq!(e.field, "after[0].period");
        assert!(e.reason.contains("me → me"), "{e}");
        assert!(ok(vec![dep("me", DependencyPeriod::Previous, None)]).is_ok());
        let e = validate(Some("me"), &[], Some(60)).unwrap_err();
        assert_eq!(e.field, "dependencyDeadlineSecs");
        let e = validate(Some("me"), &[dep("a", DependencyPeriod::Same, None)], Some(0)).unwrap_err();
        assert_eq!(e.field, "dependencyDeadlineSecs");
    }

    #[test]
    fn a_cycle_through_present_edges_is_found_and_named_and_one_through_the_past_is_not() {
        let s = |j: &str| dep(j, DependencyPeriod::Same, None);
        let b_after = vec![s("c")];
        let c_after = vec![s("a")];
        let graph = |j: &str| -> Option<&[Dependency]> {
            match j {
                "b" => Some(&b_after),
                "c" => Some(&c_after),
                _ => None,
            }
        };
        let a_after = vec![s("b")];
        assert_eq!(
            find_cycle("a", &a_after, &graph),
            Some(vec!["a".to_string(), "b".into(), "c".into(), "a".into()])
        );
        // c waits for a's previous run: no wait ever closes on itself
        let c_back = vec![dep("a", DependencyPeriod::Previous, None)];
        let graph2 = |j: &str| -> Option<&[Dependency]> {
            match j {
                "b" => Some(&b_after),
                "c" => Some(&c_back),
                _ => None,
            }
        };
        assert_eq!(find_cycle("a", &a_after, &graph2), None);
        // a diamond is not a cycle
        let d_after = vec![s("b"), s("c")];
        let c_plain: Vec<Dependency> = vec![];
        let graph3 = |j: &str| -> Option<&[Dependency]> {
            match j {
                "b" => Some(&c_plain),
                "c" => Some(&c_plain),
                _ => None,
            }
        };
        assert_eq!(find_cycle("d", &d_after, &graph3), None);
    }

    #[test]
    fn a_fire_waits_until_its_deadline_then_applies_the_policy() {
        use crate::{JobDefinition, Target};
        let mut def = JobDefinition::new(ScheduleSpec::new("0 0 6 * * *", "UTC"), Target::http("https://x"));
        def.after = vec![dep("up", DependencyPeriod::Same, None)];
        def.dependency_deadline_secs = Some(3_600);
        def.on_dependency_deadline = OnDependencyDeadline::Skip;
        let cfg = crate::LocalDeployment::local("t-", &["default"], 16);
        let job = crate::Job::new(&cfg, "t", "down", def, at("2026-01-01T00:00:00Z"))
            .unwrap_or_else(|e| panic!("{e}"));
        let sch = Schedule::parse(&job.definition.schedule, job.anchor).unwrap_or_else(|e| panic!("{e:?}"));
        let e = crate::Execution::ready(
            &job,
            &sch,
            at("2026-03-10T06:00:00Z"),
            None,
            at("2026-03-10T05:59:00Z"),
            "t",
        );
        let d = &job.definition.after[0];
        let t0 = at("2026-03-10T06:00:00Z").timestamp_millis();
        assert_eq!(verdict(&e, &[(d, Upstream::Run(ExecStatus::Succeeded))], t0), Verdict::Go);
        assert_eq!(
            verdict(&e, &[(d, Upstream::Run(ExecStatus::Running))], t0),
            Verdict::Wait { look_at: t0 + BACKSTOP_SECS * 1_000 }
        );
        assert_eq!(
            verdict(&e, &[(d, Upstream::NotPut)], t0),
            Verdict::Wait { look_at: t0 + MISSING_UPSTREAM_POLL_MS }
        );
        // the backstop never sleeps past the deadline
        let late = t0 + 3_000_000;
        assert_eq!(
            verdict(&e, &[(d, Upstream::Run(ExecStatus::Dead))], late),
            Verdict::Wait { look_at: t0 + 3_600_000 }
        );
        assert_eq!(
            verdict(&e, &[(d, Upstream::Run(ExecStatus::Dead))], t0 + 3_600_000),
            Verdict::Deadline(OnDependencyDeadline::Skip)
        );
        // an upstream with no run for the period will never be satisfied: at once
        assert_eq!(verdict(&e, &[(d, Upstream::NoFire)], t0), Verdict::Deadline(OnDependencyDeadline::Skip));
        // final accepts any end
        let fin = Dependency { status: DependencyStatus::Final, ..d.clone() };
        assert_eq!(verdict(&e, &[(&fin, Upstream::Run(ExecStatus::Dead))], t0), Verdict::Go);
        // a replay counts the deadline afresh
        let mut replayed = e.clone();
        replayed.timeline.push(crate::AuditEvent {
            at: t0 + 7_200_000,
            actor: "api".into(),
            from: Some(ExecStatus::Dead),
            to: ExecStatus::Ready,
            attempt: 0,
            token: 1,
            code: None,
        });
        assert_eq!(deadline(&replayed), t0 + 7_200_000 + 3_600_000);
        // a fire condemned at its deadline stays condemned until a replay
        let mut doomed = e.clone();
        assert!(!condemned(&doomed));
        doomed.timeline.push(crate::AuditEvent::note(
            &e,
            t0 + 3_600_000,
            "w",
            crate::retry::codes::DEPENDENCY_NOT_MET,
        ));
        assert!(condemned(&doomed));
        doomed.timeline.push(crate::AuditEvent {
            at: t0 + 7_200_000,
            actor: "api".into(),
            from: Some(ExecStatus::Dead),
            to: ExecStatus::Ready,
            attempt: 0,
            token: 1,
            code: None,
        });
        assert!(!condemned(&doomed), "a replay waits afresh");
    }
}
