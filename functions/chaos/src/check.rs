//! The end-of-run checker: pure functions over the final table state, the fenced resources and
//! the journal. No I/O, so each rule is unit-tested on hand-made histories.
//!
//! What it holds Sundial to (its promise of no lost fire and no accepted stale write,
//! docs/reliability.md):
//! - **fires**: every expected fire has exactly one execution, and no execution exists for an
//!   instant the schedule does not have (the primary key makes "doubled" impossible, so an extra
//!   instant is the only way to double a fire);
//! - **final**: every execution ends SUCCEEDED, FAILED, DEAD (…) or is reported as in flight;
//! - **edges**: each timeline step is an edge of `ExecStatus::can_move_to`, starts where the
//!   previous one ended, and the last one is the stored status;
//! - **tokens**: each claim raises the token by exactly one; each write that leaves RUNNING
//!   carries the token of the claim before it (a stale finish would carry an older one); the
//!   fenced resource accepted tokens in strictly increasing order, each issued by a claim;
//! - **effects**: at most one effect per execution, exactly one for each SUCCEEDED execution;
//! - **timeline times**: never go backwards by more than the run's clock tolerance (the skewed
//!   worker writes its own clock into the events it records).

use crate::effect::{EffectOutcome, Entry, FenceOutcome, ResourceRecord};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use sundial_model::{ExecStatus, Execution};

/// Everything the checker looks at.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// Expected scheduled instants (ms) by job id.
    pub expected: &'a BTreeMap<String, Vec<i64>>,
    /// Every execution in the table.
    pub executions: &'a [Execution],
    /// Every fenced resource.
    pub resources: &'a [ResourceRecord],
    /// The journal.
    pub journal: &'a [Entry],
    /// The tick outage `[start, end)` (ms), if there was one.
    pub outage: Option<(i64, i64)>,
    /// How far back an audit time may step (ms): the largest clock skew in the run plus slack.
    pub clock_tolerance_ms: i64,
}

/// Order statistics of a set of millisecond values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Lag {
    /// Samples.
    pub count: usize,
    /// Smallest (negative = started before its instant).
    pub min_ms: i64,
    /// Median.
    pub p50_ms: i64,
    /// 99th percentile (nearest rank).
    pub p99_ms: i64,
    /// Largest.
    pub max_ms: i64,
}

impl Lag {
    /// Statistics of `v` (all zero when empty).
    pub fn of(mut v: Vec<i64>) -> Lag {
        if v.is_empty() {
            return Lag::default();
        }
        v.sort_unstable();
        let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Lag { count: v.len(), min_ms: v[0], p50_ms: rank(0.50), p99_ms: rank(0.99), max_ms: v[v.len() - 1] }
    }
}

/// What the checker found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Fires expected.
    pub fires_expected: usize,
    /// Executions found.
    pub executions: usize,
    /// Expected fires with no execution (`job@ms`): lost fires.
    pub missing: Vec<String>,
    /// Executions at instants the schedule does not have.
    pub unexpected: Vec<String>,
    /// Executions by final status.
    pub by_status: BTreeMap<String, usize>,
    /// Executions not in a final status, with what they are doing.
    pub not_final: Vec<String>,
    /// Timeline steps off the allowed edges, or not chained.
    pub bad_edges: Vec<String>,
    /// Token and time rules broken by a timeline.
    pub timeline_errors: Vec<String>,
    /// Claims that took over an expired lease (from the timelines).
    pub takeovers: usize,
    /// Executions whose effect was applied more than once.
    pub doubled_effects: Vec<String>,
    /// SUCCEEDED executions without their effect.
    pub succeeded_without_effect: Vec<String>,
    /// Effects applied in all.
    pub effects_applied: u64,
    /// Handler runs whose effect was already applied by an earlier holder (duplicates
    /// absorbed by the idempotent write).
    pub duplicates_absorbed: usize,
    /// Resource writes accepted out of token order, or with a token no claim issued.
    pub stale_accepted: Vec<String>,
    /// Resource writes refused for a stale token (fence or effect).
    pub stale_refused_resource: usize,
    /// Execution writes refused for a stale token, as the workers reported them.
    pub stale_refused_store: u64,
    /// Start lag (first handler start − scheduled) of fires before the outage.
    pub lag_before_outage: Lag,
    /// Start lag after the outage ends: first start − max(scheduled, outage end), for fires
    /// scheduled from the outage's start on that had not started when it ended.
    pub lag_after_outage: Lag,
    /// The part of `lag_after_outage` for fires scheduled in the outage (start − outage end):
    /// how fast the backlog was worked off.
    pub lag_backlog: Lag,
    /// The part of `lag_after_outage` for fires scheduled after it (start − scheduled).
    pub lag_steady_after: Lag,
    /// Fires scheduled in the outage that started during it (queued ahead by the last tick
    /// before it, with their SQS delay): on time, not part of the backlog.
    pub ran_during_outage: usize,
    /// How late the tick created executions (created − scheduled; negative = ahead), for fires
    /// before the outage: the trigger's share of the start lag.
    pub created_lag_before_outage: Lag,
}

impl Report {
    /// Every broken rule, one line each (empty = the run kept its promise).
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut add = |what: &str, items: &[String]| {
            if !items.is_empty() {
                let shown: Vec<&str> = items.iter().take(5).map(String::as_str).collect();
                v.push(format!("{what}: {} (e.g. {})", items.len(), shown.join("; ")));
            }
        };
        add("lost fires", &self.missing);
        add("executions at unscheduled instants", &self.unexpected);
        add("executions not final", &self.not_final);
        add("transitions off the allowed edges", &self.bad_edges);
        add("timeline token/time errors", &self.timeline_errors);
        add("doubled effects", &self.doubled_effects);
        add("succeeded without effect", &self.succeeded_without_effect);
        add("stale writes accepted", &self.stale_accepted);
        v
    }
}

/// Checks one execution's timeline; returns (edge errors, token/time errors, takeovers).
pub fn check_timeline(e: &Execution, tolerance_ms: i64) -> (Vec<String>, Vec<String>, usize) {
    let id = e.id();
    let (mut edges, mut errs, mut takeovers) = (Vec::new(), Vec::new(), 0);
    let Some(first) = e.timeline.first() else {
        errs.push(format!("{id}: empty timeline"));
        return (edges, errs, 0);
    };
    if first.from.is_some() || first.to != ExecStatus::Ready || first.token != 0 || first.attempt != 0 {
        errs.push(format!("{id}: first event is not the creation (None -> READY, token 0): {first:?}"));
    }
    for w in e.timeline.windows(2) {
        let (prev, ev) = (&w[0], &w[1]);
        if ev.is_note_after(prev) {
            // A note (re-sent, held, amended): no transition, token and attempt kept.
            if ev.at < prev.at - tolerance_ms {
                errs.push(format!(
                    "{id}: note at {} is {} ms before the previous event",
                    ev.at,
                    prev.at - ev.at
                ));
            }
            continue;
        }
        if ev.from != Some(prev.to) {
            edges.push(format!("{id}: event from {:?} follows an event into {:?}", ev.from, prev.to));
        }
        if !prev.to.can_move_to(ev.to) {
            edges.push(format!("{id}: {:?} -> {:?} is not an allowed edge", prev.to, ev.to));
        }
        if ev.to == ExecStatus::Running {
            if ev.token != prev.token + 1 || ev.attempt != prev.attempt + 1 {
                errs.push(format!(
                    "{id}: claim set token {} attempt {} after token {} attempt {}",
                    ev.token, ev.attempt, prev.token, prev.attempt
                ));
            }
            if prev.to == ExecStatus::Running {
                takeovers += 1;
            }
        } else if ev.from == Some(ExecStatus::Running) && ev.token != prev.token {
            errs.push(format!(
                "{id}: {:?} written with token {} while the holder's token was {}: a stale write",
                ev.to, ev.token, prev.token
            ));
        }
        if ev.at < prev.at - tolerance_ms {
            errs.push(format!("{id}: event at {} is {} ms before the previous one", ev.at, prev.at - ev.at));
        }
    }
    if let Some(last) = e.timeline.last() {
        if last.to != e.status {
            errs.push(format!("{id}: stored status {:?} but the timeline ends in {:?}", e.status, last.to));
        }
        if last.token != e.fencing_token {
            errs.push(format!(
                "{id}: stored token {} but the timeline ends at {}",
                e.fencing_token, last.token
            ));
        }
    }
    (edges, errs, takeovers)
}

/// Runs every check.
pub fn check(ev: &Evidence<'_>) -> Report {
    let mut r = Report {
        fires_expected: ev.expected.values().map(Vec::len).sum(),
        executions: ev.executions.len(),
        ..Default::default()
    };
    let found: BTreeSet<(String, i64)> =
        ev.executions.iter().map(|e| (e.job_id.clone(), e.scheduled_at.timestamp_millis())).collect();
    for (job, fires) in ev.expected {
        for ms in fires {
            if !found.contains(&(job.clone(), *ms)) {
                r.missing.push(sundial_model::keys::execution_id(job, *ms));
            }
        }
    }
    let expected: BTreeSet<(String, i64)> =
        ev.expected.iter().flat_map(|(j, v)| v.iter().map(move |ms| (j.clone(), *ms))).collect();
    let mut claim_tokens: HashMap<String, BTreeSet<u64>> = HashMap::new();
    for e in ev.executions {
        let id = e.id();
        if !expected.contains(&(e.job_id.clone(), e.scheduled_at.timestamp_millis())) {
            r.unexpected.push(id.clone());
        }
        *r.by_status.entry(e.status.as_str().to_string()).or_default() += 1;
        if !e.status.is_terminal() {
            r.not_final.push(format!(
                "{id} {} (token {}, lease until {:?}, owner {:?})",
                e.status.as_str(),
                e.fencing_token,
                e.lease_until,
                e.lease_owner
            ));
        }
        let (edges, errs, takeovers) = check_timeline(e, ev.clock_tolerance_ms);
        r.bad_edges.extend(edges);
        r.timeline_errors.extend(errs);
        r.takeovers += takeovers;
        claim_tokens.insert(
            e.global_id(),
            e.timeline.iter().filter(|x| x.to == ExecStatus::Running).map(|x| x.token).collect(),
        );
    }

    let resources: HashMap<&str, &ResourceRecord> =
        ev.resources.iter().map(|x| (x.execution.as_str(), x)).collect();
    for res in ev.resources {
        r.effects_applied += res.effects;
        if res.effects > 1 {
            r.doubled_effects.push(format!("{} applied {} times", res.execution, res.effects));
        }
        if res.tokens.windows(2).any(|w| w[1] <= w[0]) {
            r.stale_accepted.push(format!("{}: resource accepted tokens {:?}", res.execution, res.tokens));
        }
        let issued = claim_tokens.get(&res.execution);
        for t in res.tokens.iter().chain(res.applied_token.iter()) {
            if !issued.is_some_and(|s| s.contains(t)) {
                r.stale_accepted
                    .push(format!("{}: resource accepted token {t}, which no claim issued", res.execution));
            }
        }
        if let Some(a) = res.applied_token {
            if !res.tokens.contains(&a) {
                r.stale_accepted
                    .push(format!("{}: effect applied by token {a} that never fenced", res.execution));
            }
        }
    }
    for e in ev.executions {
        if e.status == ExecStatus::Succeeded
            && resources.get(e.global_id().as_str()).is_none_or(|x| x.effects != 1)
        {
            r.succeeded_without_effect.push(e.id());
        }
    }

    // The journal: refusals, absorbed duplicates, applied-at-most-once per the handlers, and
    // the first start of each execution.
    let mut applied_by: HashMap<&str, usize> = HashMap::new();
    let mut first_start: HashMap<&str, i64> = HashMap::new();
    for j in ev.journal {
        match j {
            Entry::Start { execution, at_ms, .. } => {
                let s = first_start.entry(execution.as_str()).or_insert(*at_ms);
                *s = (*s).min(*at_ms);
            }
            Entry::Fence { outcome: FenceOutcome::Refused, .. } => r.stale_refused_resource += 1,
            Entry::Fence { .. } => {}
            Entry::Effect { execution, outcome, .. } => match outcome {
                EffectOutcome::Applied | EffectOutcome::AppliedOnRetry => {
                    *applied_by.entry(execution.as_str()).or_default() += 1;
                }
                EffectOutcome::Absorbed => r.duplicates_absorbed += 1,
                EffectOutcome::Refused => r.stale_refused_resource += 1,
            },
            Entry::Metrics { stale_rejections, .. } => r.stale_refused_store += stale_rejections,
        }
    }
    for (exec, n) in applied_by {
        if n > 1 {
            r.doubled_effects.push(format!("{exec}: {n} handler runs each applied the effect"));
        }
    }

    let (mut before, mut after, mut created) = (Vec::new(), Vec::new(), Vec::new());
    let (mut backlog, mut steady) = (Vec::new(), Vec::new());
    for e in ev.executions {
        let sched = e.scheduled_at.timestamp_millis();
        let outage = ev.outage.filter(|(from, _)| sched >= *from);
        if outage.is_none() {
            created.push(e.created_at.timestamp_millis() - sched);
        }
        let Some(&start) = first_start.get(e.global_id().as_str()) else { continue };
        match outage {
            Some((_, until)) if start < until => r.ran_during_outage += 1,
            Some((_, until)) => {
                after.push(start - sched.max(until));
                if sched < until {
                    backlog.push(start - until);
                } else {
                    steady.push(start - sched);
                }
            }
            None => before.push(start - sched),
        }
    }
    r.lag_before_outage = Lag::of(before);
    r.lag_after_outage = Lag::of(after);
    r.lag_backlog = Lag::of(backlog);
    r.lag_steady_after = Lag::of(steady);
    r.created_lag_before_outage = Lag::of(created);
    r.missing.sort();
    r.unexpected.sort();
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use sundial_model::{AuditEvent, JobDefinition, Target};
    use sundial_schedule::ScheduleSpec;

    fn ev(at: i64, from: Option<ExecStatus>, to: ExecStatus, attempt: u32, token: u64) -> AuditEvent {
        AuditEvent { at, actor: "w".into(), from, to, attempt, token, code: None }
    }

    fn ms(v: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(v).unwrap_or_default()
    }

    fn exec(job: &str, sched: i64, timeline: Vec<AuditEvent>) -> Execution {
        let last = timeline.last().cloned().unwrap_or_else(|| ev(0, None, ExecStatus::Ready, 0, 0));
        Execution {
            tenant: "t".into(),
            job_id: job.into(),
            scheduled_at: ms(sched),
            fire_at: ms(sched),
            created_at: ms(sched),
            status: last.to,
            attempt: last.attempt,
            fencing_token: last.token,
            lease_owner: None,
            lease_until: None,
            available_at: sched,
            def_version: 1,
            definition: JobDefinition {
                schedule: ScheduleSpec::new("rate(5 seconds)", "UTC"),
                pool: "default".into(),
                target: Target::in_process("chaos-effect"),
                params: serde_json::Value::Null,
                params_ref: None,
                misfire: Default::default(),
                misfire_threshold_secs: 5,
                concurrency: Default::default(),
                retry: Default::default(),
                timeout_secs: 30,
                start_deadline_secs: None,
                finish_deadline_secs: None,
                resources: Vec::new(),
                priority: Default::default(),
                shards: None,
                broadcast: None,
                map_reduce: None,
                after: Vec::new(),
                dependency_deadline_secs: None,
                on_dependency_deadline: Default::default(),
                events: None,
                outcome_events: None,
                outcome_notify: None,
                auto_pause_after_dead_fires: None,
                max_runs: None,
            },
            missed_range: None,
            missed_except: Vec::new(),
            last_error: None,
            cancel_requested: false,
            timeline,
            child: None,
            children: None,
            map_reduce: None,
        }
    }

    /// READY → RUNNING(1) → RUNNING(2, takeover) → SUCCEEDED(2).
    fn taken_over_then_succeeded(job: &str, sched: i64) -> Execution {
        use ExecStatus::*;
        exec(
            job,
            sched,
            vec![
                ev(sched - 100, None, Ready, 0, 0),
                ev(sched + 10, Some(Ready), Running, 1, 1),
                ev(sched + 5_000, Some(Running), Running, 2, 2),
                ev(sched + 5_400, Some(Running), Succeeded, 2, 2),
            ],
        )
    }

    fn resource(id: &str, tokens: Vec<u64>, effects: u64, applied: Option<u64>) -> ResourceRecord {
        ResourceRecord { execution: id.into(), tokens, effects, applied_token: applied }
    }

    /// A journal start entry; `id` is the invocation's execution id (`{tenant}:{job}@{ms}`), as
    /// the chaos handler writes it.
    fn start(id: &str, token: u64, at: i64) -> Entry {
        Entry::Start { execution: id.into(), token, attempt: token as u32, worker: "w".into(), at_ms: at }
    }

    #[test]
    fn a_clean_history_with_a_takeover_passes() {
        // GIVEN two expected fires, both executed; one was taken over and its zombie refused
        let expected = BTreeMap::from([("j".to_string(), vec![10_000, 15_000])]);
        let execs = vec![taken_over_then_succeeded("j", 10_000), taken_over_then_succeeded("j", 15_000)];
        let resources =
            vec![resource("t:j@10000", vec![1, 2], 1, Some(2)), resource("t:j@15000", vec![2], 1, Some(2))];
        let journal = vec![
            start("t:j@10000", 1, 10_050),
            start("t:j@10000", 2, 15_020),
            Entry::Fence {
                execution: "j@15000".into(),
                token: 1,
                worker: "z".into(),
                outcome: FenceOutcome::Refused,
                at_ms: 20_000,
            },
            Entry::Metrics {
                worker: "z".into(),
                execution: "j@10000".into(),
                takeovers: 0,
                stale_rejections: 1,
                clock_skew: 0,
                outcome: None,
            },
        ];
        // WHEN checked
        let r = check(&Evidence {
            expected: &expected,
            executions: &execs,
            resources: &resources,
            journal: &journal,
            outage: None,
            clock_tolerance_ms: 0,
        });
        // THEN nothing is violated and the figures add up
        assert_eq!(r.violations(), Vec::<String>::new());
        assert_eq!((r.fires_expected, r.executions, r.takeovers), (2, 2, 2));
        assert_eq!((r.stale_refused_resource, r.stale_refused_store, r.effects_applied), (1, 1, 2));
        assert_eq!(r.lag_before_outage, Lag { count: 1, min_ms: 50, p50_ms: 50, p99_ms: 50, max_ms: 50 });
    }

    #[test]
    fn a_lost_fire_and_an_unscheduled_execution_are_reported() {
        let expected = BTreeMap::from([("j".to_string(), vec![10_000, 15_000])]);
        let execs = vec![taken_over_then_succeeded("j", 10_000), taken_over_then_succeeded("j", 12_345)];
        let resources =
            vec![resource("t:j@10000", vec![2], 1, Some(2)), resource("t:j@12345", vec![2], 1, Some(2))];
        let r = check(&Evidence {
            expected: &expected,
            executions: &execs,
            resources: &resources,
            journal: &[],
            outage: None,
            clock_tolerance_ms: 0,
        });
        assert_eq!(r.missing, vec!["j@15000".to_string()]);
        assert_eq!(r.unexpected, vec!["j@12345".to_string()]);
        assert_eq!(r.violations().len(), 2, "{:?}", r.violations());
    }

    #[test]
    fn a_stale_finish_an_illegal_edge_and_a_skipped_token_are_caught() {
        use ExecStatus::*;
        // GIVEN a finish written with the zombie's token 1 after the takeover set token 2
        let stale = exec(
            "j",
            1,
            vec![
                ev(0, None, Ready, 0, 0),
                ev(1, Some(Ready), Running, 1, 1),
                ev(2, Some(Running), Running, 2, 2),
                ev(3, Some(Running), Succeeded, 1, 1),
            ],
        );
        let (_, errs, _) = check_timeline(&stale, 0);
        assert!(errs.iter().any(|e| e.contains("stale write")), "{errs:?}");
        // GIVEN READY -> SUCCEEDED (not an edge) and a claim that skips a token
        let bad = exec("j", 2, vec![ev(0, None, Ready, 0, 0), ev(1, Some(Ready), Succeeded, 0, 0)]);
        let (edges, _, _) = check_timeline(&bad, 0);
        assert_eq!(edges.len(), 1, "{edges:?}");
        let skip = exec("j", 3, vec![ev(0, None, Ready, 0, 0), ev(1, Some(Ready), Running, 1, 3)]);
        let (_, errs, _) = check_timeline(&skip, 0);
        assert!(errs.iter().any(|e| e.contains("claim set token 3")), "{errs:?}");
    }

    #[test]
    fn time_may_step_back_only_within_the_tolerance() {
        use ExecStatus::*;
        let e = exec("j", 1, vec![ev(5_000, None, Ready, 0, 0), ev(2_000, Some(Ready), Running, 1, 1)]);
        assert_eq!(check_timeline(&e, 3_000).1.len(), 0);
        assert_eq!(check_timeline(&e, 2_999).1.len(), 1);
    }

    #[test]
    fn doubled_effects_out_of_order_tokens_and_unissued_tokens_are_caught() {
        let expected = BTreeMap::from([("j".to_string(), vec![10_000])]);
        let execs = vec![taken_over_then_succeeded("j", 10_000)];
        // GIVEN a resource that applied twice, accepted 2 then 1, and token 7 nobody issued
        let resources = vec![resource("t:j@10000", vec![2, 1, 7], 2, Some(2))];
        let journal = vec![
            Entry::Effect {
                execution: "j@10000".into(),
                token: 1,
                worker: "a".into(),
                outcome: EffectOutcome::Applied,
                at_ms: 1,
            },
            Entry::Effect {
                execution: "j@10000".into(),
                token: 2,
                worker: "b".into(),
                outcome: EffectOutcome::AppliedOnRetry,
                at_ms: 2,
            },
        ];
        let r = check(&Evidence {
            expected: &expected,
            executions: &execs,
            resources: &resources,
            journal: &journal,
            outage: None,
            clock_tolerance_ms: 0,
        });
        assert_eq!(r.doubled_effects.len(), 2, "{:?}", r.doubled_effects);
        assert_eq!(r.stale_accepted.len(), 2, "{:?}", r.stale_accepted);
        assert_eq!(r.succeeded_without_effect, vec!["j@10000".to_string()]);
    }

    #[test]
    fn non_final_executions_are_listed_with_what_they_are_doing() {
        use ExecStatus::*;
        let expected = BTreeMap::from([("j".to_string(), vec![1])]);
        let execs = vec![exec("j", 1, vec![ev(0, None, Ready, 0, 0), ev(1, Some(Ready), Running, 1, 1)])];
        let r = check(&Evidence {
            expected: &expected,
            executions: &execs,
            resources: &[],
            journal: &[],
            outage: None,
            clock_tolerance_ms: 0,
        });
        assert_eq!(r.not_final.len(), 1);
        assert!(r.not_final[0].starts_with("j@1 RUNNING"), "{:?}", r.not_final);
    }

    #[test]
    fn lag_after_the_outage_counts_from_its_end() {
        // GIVEN an outage [20 s, 50 s): a fire at 30 s starting at 52 s, one at 60 s at 60.3 s,
        // and one at 25 s that was queued ahead and started on time during the outage
        let expected = BTreeMap::from([("j".to_string(), vec![10_000, 25_000, 30_000, 60_000])]);
        let execs: Vec<Execution> =
            [10_000, 25_000, 30_000, 60_000].iter().map(|s| taken_over_then_succeeded("j", *s)).collect();
        let journal = vec![
            start("t:j@10000", 1, 10_200),
            start("t:j@25000", 1, 25_100),
            start("t:j@30000", 1, 52_000),
            start("t:j@60000", 1, 60_300),
        ];
        let r = check(&Evidence {
            expected: &expected,
            executions: &execs,
            resources: &[],
            journal: &journal,
            outage: Some((20_000, 50_000)),
            clock_tolerance_ms: 0,
        });
        assert_eq!(r.lag_before_outage.max_ms, 200);
        assert_eq!(r.ran_during_outage, 1);
        assert_eq!((r.lag_backlog.max_ms, r.lag_steady_after.max_ms), (2_000, 300));
        assert_eq!(r.created_lag_before_outage.count, 1);
        assert_eq!(
            r.lag_after_outage,
            Lag { count: 2, min_ms: 300, p50_ms: 300, p99_ms: 2_000, max_ms: 2_000 }
        );
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let l = Lag::of((1..=200).collect());
        assert_eq!((l.min_ms, l.p50_ms, l.p99_ms, l.max_ms, l.count), (1, 100, 198, 200, 200));
        assert_eq!(Lag::of(vec![]), Lag::default());
    }
}
