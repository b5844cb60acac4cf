//! Pure planning: which executions one job gets in one scan, and where its trigger position
//! moves. No I/O; `now` is an argument.

use chrono::{DateTime, Duration, Utc};
use std::collections::HashMap;
use sundial_model::Job;
use sundial_schedule::{plan_misfire, MisfirePolicy, PlannedFire, Schedule};

/// Most future fires one job gets per scan (an every-second job gets 60-120 per window).
pub const MAX_FIRES_PER_JOB: usize = 10_000;

/// What a scan does for one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPlan {
    /// Executions to create, ascending.
    pub fires: Vec<PlannedFire>,
    /// The new trigger position: the first fire after the window (`None`: exhausted).
    pub new_next: Option<DateTime<Utc>>,
    /// Fires that were late by more than the threshold.
    pub missed: u64,
    /// Missed fires that got no execution (policy `skip`, or beyond a `fire_all` cap).
    pub skipped: u64,
    /// The job was left for a later tick because the catch-up budget ran out.
    pub deferred: bool,
}

/// The catch-up rate limit of one tick (docs/trigger.md, "Misfires and catch-up": recovery must not
/// be a stampede). Only executions for *missed* fires count; on-time fires are never held back.
#[derive(Debug, Clone)]
pub struct CatchUpBudget {
    global: u64,
    global_left: u64,
    per_tenant: u64,
    used: HashMap<String, u64>,
}

impl CatchUpBudget {
    /// At most `global` missed-fire executions per tick in all, `per_tenant` per tenant.
    pub fn new(global: u64, per_tenant: u64) -> Self {
        CatchUpBudget { global, global_left: global, per_tenant, used: HashMap::new() }
    }

    /// Takes `n` tokens for `tenant`, or none. A job whose need exceeds the whole per-tenant
    /// budget is let through alone (first for its tenant in this tick), so it cannot starve; it
    /// still has to fit in what is left of the global budget. Only a job needing more than the
    /// whole global budget (a deployment whose budget is below one job's `fireAll` cap) goes
    /// past it, and then as the tick's only catch-up work.
    pub fn try_take(&mut self, tenant: &str, n: u64) -> bool {
        if n == 0 {
            return true;
        }
        let used = self.used.get(tenant).copied().unwrap_or(0);
        let alone = used == 0 && n > self.per_tenant;
        let whole_tick = n > self.global && self.global_left == self.global;
        if (used + n > self.per_tenant && !alone) || (n > self.global_left && !whole_tick) {
            return false;
        }
        if whole_tick {
            self.global_left = 0;
        }
        self.global_left = self.global_left.saturating_sub(n);
        self.used.insert(tenant.to_string(), used + n);
        true
    }

    /// Tokens used by a tenant so far.
    pub fn used_by(&self, tenant: &str) -> u64 {
        self.used.get(tenant).copied().unwrap_or(0)
    }
}

/// Plans one job: fires in `(last_scheduled, until]`, with the job's misfire policy applied to
/// fires late by more than its threshold at `now`.
pub fn plan_job(
    job: &Job,
    schedule: &Schedule,
    last_scheduled: DateTime<Utc>,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
    budget: &mut CatchUpBudget,
) -> JobPlan {
    let def = &job.definition;
    let threshold = Duration::seconds(i64::from(def.misfire_threshold_secs));
    let due = plan_misfire(schedule, last_scheduled, now.min(until), &def.misfire, threshold);
    let late_cutoff = now - threshold;
    let missed_execs =
        due.fires.iter().filter(|f| f.missed_range.is_some() || f.scheduled_at < late_cutoff).count() as u64;
    if !budget.try_take(&job.tenant, missed_execs) {
        return JobPlan { fires: Vec::new(), new_next: None, missed: due.missed, skipped: 0, deferred: true };
    }
    let mut fires = due.fires;
    let from = due.resume_after.max(last_scheduled);
    let future = schedule.fires_between(from, until, MAX_FIRES_PER_JOB);
    // Capped: resume right after the last planned fire, not at the window's end.
    let last = if future.len() == MAX_FIRES_PER_JOB { future[future.len() - 1] } else { until };
    fires.extend(future.into_iter().map(|f| PlannedFire { scheduled_at: f, missed_range: None }));
    JobPlan {
        // Never behind the read position: a window that ends before the job's next fire (a
        // catch-up walking old buckets) must not move the job back in time.
        new_next: schedule.next_after(last.max(last_scheduled)),
        fires,
        missed: due.missed,
        skipped: due.skipped,
        deferred: false,
    }
}

/// The policy's name for metrics (a low-cardinality dimension).
pub fn policy_name(p: &MisfirePolicy) -> &'static str {
    match p {
        MisfirePolicy::FireOnce => "fire_once",
        MisfirePolicy::FireAll { .. } => "fire_all",
        MisfirePolicy::Skip => "skip",
    }
}

#[cfg(test)]
mod tests {
    use super::CatchUpBudget;

    #[test]
    fn budget_enforces_global_and_per_tenant_limits() {
        // GIVEN 10 per tick in all, 4 per tenant
        let mut b = CatchUpBudget::new(10, 4);
        // THEN a tenant gets at most 4
        assert!(b.try_take("a", 3));
        assert!(!b.try_take("a", 2));
        assert!(b.try_take("a", 1));
        assert!(!b.try_take("a", 1));
        // AND other tenants share the rest of the global budget
        assert!(b.try_take("b", 4));
        assert!(!b.try_take("c", 4), "only 2 left globally");
        assert!(b.try_take("c", 2));
        assert!(!b.try_take("d", 1));
        // AND on-time work (0 tokens) is never held back
        assert!(b.try_take("d", 0));
    }

    #[test]
    fn a_job_going_alone_still_fits_in_the_global_budget() {
        // Issue 15: "alone" used to let a job through past the global budget.
        let mut b = CatchUpBudget::new(100, 30);
        assert!(b.try_take("a", 30));
        assert!(!b.try_take("b", 90), "90 > the 70 left globally, alone or not");
        assert!(b.try_take("b", 70), "70 fits");
        assert!(!b.try_take("c", 1), "the global budget is spent");
        // A job larger than the whole global budget goes only as the tick's first and only
        // catch-up work, so it never starves and nothing else goes past the budget with it.
        let mut b = CatchUpBudget::new(50, 30);
        assert!(b.try_take("a", 118));
        assert!(!b.try_take("b", 1));
        let mut b = CatchUpBudget::new(50, 30);
        assert!(b.try_take("x", 1));
        assert!(!b.try_take("a", 118), "not first: waits for a tick of its own");
    }

    #[test]
    fn a_job_needing_more_than_the_tenant_budget_goes_alone() {
        let mut b = CatchUpBudget::new(1000, 30);
        assert!(b.try_take("a", 118), "first for its tenant this tick: let through");
        assert!(!b.try_take("a", 1), "and then nothing else for that tenant");
        assert_eq!(b.used_by("a"), 118);
    }
}
