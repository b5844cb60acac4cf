//! Swarm workloads: the jobs and the operator actions of a run, drawn from its seed.
//!
//! Every run gets a different mix (swarm testing: a feature left out of a run cannot mask a bug
//! in another): which schedule classes (every few seconds and every minute, the E# class;
//! every few minutes and hourly, the bucket class; daily in a zone, the D# class), which misfire
//! and concurrency policies, how many tenants, how often operators pause, resume, edit, delete
//! or trigger a job now while the tick runs, and whether jobs wait for each other (`after`:
//! a job on an earlier job of its tenant, for the same period, with a drawn status and deadline
//! policy; docs/dependencies.md), and whether jobs take events (`events`, each or
//! `oncePerPeriod`) from an at-least-once source that repeats deliveries and dies mid-call
//! ([`EventPlan`]).

use crate::ledger::HANDLER;
use crate::{between, chance};
use sundial_core::control::catch_up::CatchUp;
use sundial_model::{ConcurrencyPolicy, JobDefinition, RetryPolicy, Target};
use sundial_schedule::{MisfirePolicy, ScheduleSpec};

/// How big a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Jobs created at the start.
    pub jobs: u32,
    /// Tenants the jobs belong to.
    pub tenants: u32,
    /// How long jobs fire (simulated minutes); faults happen inside this window.
    pub firing_minutes: i64,
    /// Operator actions per simulated hour.
    pub ops_per_hour: u32,
    /// Operator cancels per simulated hour, of a job's newest running (else queued) execution;
    /// drawn from a stream of their own, so a shape without them draws what it always did.
    pub cancels_per_hour: u32,
}

impl Default for Profile {
    fn default() -> Self {
        Profile { jobs: 24, tenants: 3, firing_minutes: 180, ops_per_hour: 12, cancels_per_hour: 0 }
    }
}

/// The schedules a run draws from: (expressions, zone). An entry with `|` is a schedule of
/// several expressions (`schedule.expressions`, docs/schedule.md): the job fires at the union
/// of their instants, once per instant where two meet.
pub const SCHEDULES: [(&str, &str); 12] = [
    ("*/10 * * * * *", "UTC"),
    ("*/15 * * * * *", "UTC"),
    ("0 * * * * *", "UTC"),
    ("30 */2 * * * *", "UTC"),
    ("0 */5 * * * *", "UTC"),
    ("0 7,37 * * * *", "UTC"),
    ("0 0 * * * *", "UTC"),
    ("0 30 */2 * * *", "America/New_York"),
    ("0 0 9 * * *", "Europe/Berlin"),
    ("0 45 6 * * *", "Asia/Kolkata"),
    // Every second and every third minute: the two meet every sixth.
    ("0 */2 * * * *|0 */3 * * * *", "UTC"),
    // On the quarter hour, and at :20 past every fifth minute, in a zone.
    ("0 */15 * * * *|20 */5 * * * *|0 0 */2 * * *", "America/New_York"),
];

/// How many of [`SCHEDULES`] a job's first draw and an edit's choose from (the first ten, as
/// they always have: a seed draws what it drew); the schedules of several expressions are
/// drawn from a stream of their own ([`several_expressions`]).
const DRAWN_SCHEDULES: u64 = 10;

/// The index in [`SCHEDULES`] of `spec`'s expressions and zone, if it is one of them.
pub fn schedule_index(spec: &ScheduleSpec) -> Option<usize> {
    let exprs: Vec<&str> = std::iter::once(spec.expression.as_str())
        .chain(spec.expressions.iter().map(String::as_str))
        .collect();
    SCHEDULES.iter().position(|(e, z)| e.split('|').eq(exprs.iter().copied()) && *z == spec.timezone)
}

/// Where the several-expressions draws start in the seed's stream (clear of every other draw).
const SEVERAL_DRAWS: u64 = 2_200_000;

/// One job in ten fires on a schedule of several expressions instead of its drawn one.
fn several_expressions(seed: u64, i: u64, s: usize) -> usize {
    let n = SEVERAL_DRAWS + i * 2;
    if chance(seed, n, 100) {
        DRAWN_SCHEDULES as usize + between(seed, n + 1, 0, (SCHEDULES.len() - 11) as u64) as usize
    } else {
        s
    }
}

/// One job of the run.
#[derive(Debug, Clone)]
pub struct JobPlan {
    /// Tenant.
    pub tenant: String,
    /// Job id.
    pub job_id: String,
    /// Its first definition (version marker `params.v = 1`).
    pub def: JobDefinition,
}

/// An operator action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    /// Pause the job.
    Pause,
    /// Resume it, replaying what `catch_up` asks of the paused window (docs/api.md, resume),
    /// its replays started `pace_secs` apart.
    Resume {
        /// What the resume replays; the operator falls back to none when the window has more
        /// fires than a catch-up may replay (the 400 a user gets), and the record says so.
        catch_up: CatchUp,
        /// Seconds between two replays' starts.
        pace_secs: u32,
    },
    /// Edit it: new parameters (the next version marker), maybe another schedule.
    Edit {
        /// The schedule to switch to, if the edit changes it.
        schedule: Option<usize>,
    },
    /// Delete it.
    Delete,
    /// Trigger a run now.
    TriggerNow,
    /// Cancel the job's newest running execution, else its newest queued one.
    Cancel,
    /// Backfill the job's past (`POST /v1/jobs/{jobId}/backfill`): the fires from `back_ms`
    /// before the call to `len_ms` after that, started `pace_secs` apart.
    Backfill {
        /// How far back the range starts (ms before the call).
        back_ms: i64,
        /// How long it is (ms; it ends before the call).
        len_ms: i64,
        /// Seconds between two backfilled executions' starts.
        pace_secs: u32,
    },
}

/// An operator action at a simulated instant.
#[derive(Debug, Clone)]
pub struct Op {
    /// When (ms).
    pub at_ms: i64,
    /// Which job (index into [`Workload::jobs`]).
    pub job: usize,
    /// What.
    pub kind: OpKind,
}

/// How the event source dies during an event's first delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderCrash {
    /// Right after the event's key is claimed (`EVT#{key}` recorded), before its execution is
    /// put: the state a sender killed between `claim_event_key` and `put_new` leaves.
    AfterClaim,
    /// Its task aborted this long (ms) into the call, at whatever await point it is in.
    After(u64),
}

/// One event for a job, and how the source delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPlan {
    /// When it is first sent (ms).
    pub at_ms: i64,
    /// Which job (index into [`Workload::jobs`]).
    pub job: usize,
    /// Its deduplication key; `None`: the source dedups by sending the first delivery's
    /// instant as `at` on every repeat.
    pub key: Option<String>,
    /// How long before `at_ms` it happened (`at` in the recent past), if it says.
    pub past_ms: Option<i64>,
    /// Repeated deliveries (at-least-once), each this long after the first (ms); a short one
    /// races the first delivery.
    pub repeats_ms: Vec<i64>,
    /// How the first delivery's first attempt dies, if it does.
    pub crash: Option<SenderCrash>,
}

/// The run's jobs and actions.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Jobs, created at `start_ms`.
    pub jobs: Vec<JobPlan>,
    /// Actions, in time order.
    pub ops: Vec<Op>,
    /// Events, in time order of their first delivery.
    pub events: Vec<EventPlan>,
    /// When the jobs are created (ms).
    pub start_ms: i64,
    /// When firing ends (every schedule's `end`, ms).
    pub end_ms: i64,
    /// A tenant whose executions running at once the workers cap (`SUNDIAL_TENANT_MAX_RUNNING`
    /// `tenant=N`), and the cap, if the seed draws one.
    pub tenant_limit: Option<(String, u32)>,
}

/// The definition of job `i` with schedule `s` and version marker `v`.
pub fn definition(seed: u64, i: u64, s: usize, v: i64, start_ms: i64, end_ms: i64) -> JobDefinition {
    let (exprs, zone) = SCHEDULES[s % SCHEDULES.len()];
    let mut exprs = exprs.split('|');
    let mut spec = ScheduleSpec::new(exprs.next().unwrap_or_default(), zone);
    spec.expressions = exprs.map(String::from).collect();
    let every_few_secs = spec.expression.starts_with("*/");
    spec.start = Some(crate::world::ms(start_ms));
    spec.end = Some(crate::world::ms(end_ms));
    let n = 1000 + i * 16;
    let misfire = match between(seed, n, 0, 99) {
        0..=59 => MisfirePolicy::FireAll { cap: sundial_model::MAX_FIRE_ALL_CAP },
        60..=84 => MisfirePolicy::FireOnce,
        _ => MisfirePolicy::Skip,
    };
    // SERIALIZE only where a run (up to 2 s, a few retries) fits the period: a SERIALIZE job
    // that fires faster than it runs builds a backlog without end, on AWS as here.
    let concurrency = match between(seed, n + 1, 0, 99) {
        0..=64 => ConcurrencyPolicy::Allow,
        65..=84 if !every_few_secs => ConcurrencyPolicy::Serialize,
        65..=84 => ConcurrencyPolicy::Allow,
        85..=94 => ConcurrencyPolicy::Forbid,
        _ => ConcurrencyPolicy::Replace,
    };
    let pool = if chance(seed, n + 2, 300) { "batch" } else { "default" };
    // A third of the ALLOW jobs that fire at most once a minute run 20 to 50 s (under their
    // 60 s timeout): long enough that a takeover still runs when the worker it took over from
    // wakes from a stall (a zombie whose late writes the fence must refuse).
    let allowed = concurrency == ConcurrencyPolicy::Allow && !every_few_secs;
    let slow = allowed && chance(seed, n + 6, 333);
    // Two slow jobs in three commit their progress every few seconds (crate::checkpoints): a
    // takeover or a retry resumes from it, and a zombie's late commit meets the fence. A
    // quarter of the other jobs that could run slow do, and checkpoint: enough long runs
    // that a stall finds one to freeze (faults::STALL_AIM_MS).
    let checkpoints = (slow && chance(seed, CHECKPOINT_DRAWS + i * 2, 667))
        || (allowed && !slow && chance(seed, CHECKPOINT_DRAWS + i * 2 + 1, 250));
    let params = if checkpoints {
        serde_json::json!({ "v": v, "workMs": [20_000, 50_000], "checkpointEveryMs": crate::checkpoints::EVERY_MS })
    } else if slow {
        serde_json::json!({ "v": v, "workMs": [20_000, 50_000] })
    } else {
        serde_json::json!({ "v": v })
    };
    let mut def = JobDefinition::new(spec, Target::in_process(HANDLER))
        .with_params(params)
        .with_pool(pool)
        .with_misfire(misfire)
        .with_concurrency(concurrency)
        .with_retry(RetryPolicy {
            max_attempts: 6,
            base_delay_secs: 1,
            max_delay_secs: 10,
            max_age_secs: 86_400,
        })
        .with_timeout_secs(60);
    if chance(seed, n + 3, 200) {
        def = def.with_start_deadline_secs(120);
    }
    // Some jobs give each fire one attempt and track their outcomes (docs/outcomes.md): a
    // simulated failure is then a dead fire, whose ExecutionDead the `outcomes` invariant
    // looks for; later successes are their recoveries.
    if chance(seed, n + 4, 150) {
        def.retry.max_attempts = 1;
        def.outcome_events =
            Some(sundial_model::outcome::OutcomeEvents { succeeded: chance(seed, n + 5, 500) });
    }
    def.max_runs = max_runs(seed, i);
    // (never before the start deadline: the API refuses that)
    def.finish_deadline_secs = finish_deadline(seed, i).map(|f| f.max(def.start_deadline_secs.unwrap_or(0)));
    def
}

/// Where the checkpoint draws start in the seed's stream (clear of every other draw).
const CHECKPOINT_DRAWS: u64 = 3_400_000;

/// Where the finish-deadline draws start in the seed's stream (clear of every other draw).
const FINISH_DRAWS: u64 = 3_200_000;

/// One job in seven must finish each fire within 10 s, 30 s, a minute or five of its instant
/// (`finishDeadlineSecs`, docs/outcomes.md): tight enough that slow runs, retries, waits and
/// faults miss it; the same in every version of the job (an edit keeps it).
pub fn finish_deadline(seed: u64, i: u64) -> Option<u32> {
    let n = FINISH_DRAWS + i * 2;
    chance(seed, n, 143).then(|| [10, 30, 60, 300][between(seed, n + 1, 0, 3) as usize])
}

/// Some jobs end after a few scheduled fires (`maxRuns`, docs/schedule.md), the same limit in
/// every version of the job (an edit keeps it): the `max_runs` invariant checks the count.
pub fn max_runs(seed: u64, i: u64) -> Option<u64> {
    let n = i * 10 + 1_000_000;
    chance(seed, n, 150).then(|| between(seed, n + 1, 2, 6))
}

/// Draws the workload of `seed`.
pub fn draw(seed: u64, profile: &Profile, start_ms: i64) -> Workload {
    let end_ms = start_ms + profile.firing_minutes * 60_000;
    let jobs: Vec<JobPlan> = (0..profile.jobs)
        .map(|i| {
            let i = u64::from(i);
            let s = several_expressions(seed, i, between(seed, 100 + i, 0, DRAWN_SCHEDULES - 1) as usize);
            JobPlan {
                tenant: format!("tenant{}", between(seed, 200 + i, 0, u64::from(profile.tenants.max(1)) - 1)),
                job_id: format!("job{i:04}"),
                def: definition(seed, i, s, 1, start_ms, end_ms),
            }
        })
        .collect();
    let mut jobs = jobs;
    add_dependencies(seed, &mut jobs);
    add_step_functions(seed, &mut jobs);
    add_ecs(seed, &mut jobs);
    add_resources(seed, &mut jobs);
    let mut ops = Vec::new();
    let hours = (profile.firing_minutes as u64).div_ceil(60);
    let count = u64::from(profile.ops_per_hour) * hours;
    for k in 0..count {
        let n = 10_000 + k * 8;
        let job = between(seed, n, 0, u64::from(profile.jobs.max(1)) - 1) as usize;
        let at_ms =
            start_ms + between(seed, n + 1, 60_000, (end_ms - start_ms - 60_000).max(60_000) as u64) as i64;
        let kind = match between(seed, n + 2, 0, 99) {
            0..=34 => OpKind::Pause,
            35..=69 => OpKind::Edit {
                schedule: chance(seed, n + 3, 300)
                    .then(|| between(seed, n + 4, 0, DRAWN_SCHEDULES - 1) as usize),
            },
            70..=94 => OpKind::TriggerNow,
            _ => OpKind::Delete,
        };
        if kind == OpKind::Pause {
            // Every pause is resumed after 30 s to 90 min (sometimes inside the queued-ahead
            // window, racing the tick), unless the job is deleted first.
            let back = at_ms + between(seed, n + 5, 30_000, 90 * 60_000) as i64;
            ops.push(Op { at_ms: back, job, kind: resume(seed, k) });
        }
        ops.push(Op { at_ms, job, kind });
    }
    add_cancels(seed, *profile, &jobs, (start_ms, end_ms), &mut ops);
    add_backfills(seed, *profile, (start_ms, end_ms), &mut ops);
    ops.sort_by_key(|o| o.at_ms);
    let events = add_events(seed, &mut jobs, start_ms, end_ms);
    let tenant_limit = tenant_limit(seed, profile.tenants);
    Workload { jobs, ops, events, start_ms, end_ms, tenant_limit }
}

/// Where the tenant-limit draws start in the seed's stream (clear of every other draw).
const TENANT_LIMIT_DRAWS: u64 = 3_900_000;

/// In half the seeds one tenant may run at most 1 to 3 executions at once, in every pool
/// (the workers' `tenant_limits`, a running gate in the table): its fires wait their turn.
fn tenant_limit(seed: u64, tenants: u32) -> Option<(String, u32)> {
    let n = TENANT_LIMIT_DRAWS;
    chance(seed, n, 500).then(|| {
        let t = between(seed, n + 1, 0, u64::from(tenants.max(1)) - 1);
        (format!("tenant{t}"), between(seed, n + 2, 1, 3) as u32)
    })
}

/// Where the resumes' catch-up draws start in the seed's stream (clear of every other draw).
const CATCH_UP_DRAWS: u64 = 80_000;

/// The resume of the `k`-th action's pause: half replay nothing, three in ten every fire of
/// the paused window (`catchUp: all`), one in five its latest (`last`), paced 0 to 3 s; drawn
/// from a stream of their own, so the actions' times and jobs stay what they were.
fn resume(seed: u64, k: u64) -> OpKind {
    let n = CATCH_UP_DRAWS + k * 2;
    let catch_up = match between(seed, n, 0, 99) {
        0..=49 => CatchUp::None,
        50..=79 => CatchUp::All,
        _ => CatchUp::Last,
    };
    OpKind::Resume { catch_up, pace_secs: between(seed, n + 1, 0, 3) as u32 }
}

/// Where the backfills' draws start in the seed's stream (clear of every other draw).
const BACKFILL_DRAWS: u64 = 3_300_000;

/// A backfill for every four operator actions an hour (own stream): of a drawn job, at a drawn
/// instant, over 0 to 20 minutes of its past ending at least a second before the call (often
/// over fires that ran, were paused, or were missed), paced 0 to 2 s.
fn add_backfills(seed: u64, profile: Profile, (start_ms, end_ms): (i64, i64), ops: &mut Vec<Op>) {
    let hours = (profile.firing_minutes as u64).div_ceil(60);
    for k in 0..u64::from(profile.ops_per_hour / 4) * hours {
        let n = BACKFILL_DRAWS + k * 8;
        let job = between(seed, n, 0, u64::from(profile.jobs.max(1)) - 1) as usize;
        let at_ms =
            start_ms + between(seed, n + 1, 120_000, (end_ms - start_ms - 60_000).max(120_000) as u64) as i64;
        let back_ms =
            between(seed, n + 2, 60_000, (at_ms - start_ms).clamp(60_000, 20 * 60_000) as u64) as i64;
        let len_ms = between(seed, n + 3, 0, (back_ms - 1_000) as u64) as i64;
        let pace_secs = between(seed, n + 4, 0, 2) as u32;
        ops.push(Op { at_ms, job, kind: OpKind::Backfill { back_ms, len_ms, pace_secs } });
    }
}

/// Where the cancels' draws start in the seed's stream (clear of every other draw).
const CANCEL_DRAWS: u64 = 70_000;

/// `profile.cancels_per_hour` operator cancels, each aimed at a fire of a drawn job: half a few
/// seconds into a slow job's run (long enough to be caught running), half just before any
/// job's fire (queued ahead).
fn add_cancels(
    seed: u64,
    profile: Profile,
    jobs: &[JobPlan],
    (start_ms, end_ms): (i64, i64),
    ops: &mut Vec<Op>,
) {
    let hours = (profile.firing_minutes as u64).div_ceil(60);
    let slow: Vec<usize> = (0..jobs.len()).filter(|&j| jobs[j].def.params.get("workMs").is_some()).collect();
    for k in 0..u64::from(profile.cancels_per_hour) * hours {
        let n = CANCEL_DRAWS + k * 4;
        let base =
            start_ms + between(seed, n + 1, 60_000, (end_ms - start_ms - 60_000).max(60_000) as u64) as i64;
        // Half aimed a few seconds into a slow job's run (still running), half before any
        // job's fire (queued ahead).
        let running = !slow.is_empty() && chance(seed, n + 2, 500);
        let job = if running {
            slow[between(seed, n, 0, slow.len() as u64 - 1) as usize]
        } else {
            between(seed, n, 0, jobs.len().max(1) as u64 - 1) as usize
        };
        let Some(fire) = next_fire(&jobs[job].def, start_ms, base) else { continue };
        let at_ms = if running {
            fire + between(seed, n + 3, 2_000, 15_000) as i64
        } else {
            fire - between(seed, n + 3, 5_000, 40_000) as i64
        };
        ops.push(Op { at_ms, job, kind: OpKind::Cancel });
    }
}

/// The first fire of `def` at or after `at` (ms), its schedule anchored at `start_ms`.
fn next_fire(def: &JobDefinition, start_ms: i64, at: i64) -> Option<i64> {
    let sch = sundial_schedule::Schedule::parse(&def.schedule, crate::world::ms(start_ms)).ok()?;
    sch.fires_between(crate::world::ms(at - 1), crate::world::ms(at + 86_400_000), 1)
        .first()
        .map(|t| t.timestamp_millis())
}

/// Where the event draws start in the seed's stream (clear of the jobs', the actions', the
/// dependencies' and the faults').
const EVENT_DRAWS: u64 = 600_000;

/// In half of the seeds, about a third of the jobs that wait for nobody take events (each, or
/// `oncePerPeriod` in two of five), and the source sends each 3 to 12 events an hour: three in
/// four with a key, one in four with `at` up to 20 minutes back, a third repeated up to three
/// times (a quarter of the repeats within half a second, racing the first delivery), one keyed
/// first delivery in six dying right after its key claim and one in ten aborted mid-call.
fn add_events(seed: u64, jobs: &mut [JobPlan], start_ms: i64, end_ms: i64) -> Vec<EventPlan> {
    use sundial_model::event::EventTrigger;
    let mut out = Vec::new();
    if !chance(seed, EVENT_DRAWS, 500) {
        return out;
    }
    let span = (end_ms - start_ms - 120_000).max(60_000) as u64;
    for (i, job) in jobs.iter_mut().enumerate() {
        let n = EVENT_DRAWS + 1 + i as u64 * 4;
        if !job.def.after.is_empty() || !chance(seed, n, 350) {
            continue;
        }
        job.def.events = Some(EventTrigger { once_per_period: chance(seed, n + 1, 400) });
        let count = between(seed, n + 2, 3, 12) * span.div_ceil(3_600_000);
        for k in 0..count {
            let m = EVENT_DRAWS + 100_000 + (i as u64) * 10_000 + k * 16;
            // Never on a whole second: an event at a fire's exact instant is that fire, by key.
            let at_ms = start_ms
                + 60_000
                + between(seed, m, 0, span) as i64 / 1000 * 1000
                + 1
                + between(seed, m + 1, 0, 997) as i64;
            let key = chance(seed, m + 2, 750).then(|| format!("evt-{}-{k}", job.job_id));
            let past_ms = chance(seed, m + 3, 250).then(|| between(seed, m + 4, 1, 1_200) as i64 * 1_000);
            let repeats_ms = if chance(seed, m + 5, 333) {
                (0..between(seed, m + 6, 1, 3))
                    .map(|r| {
                        if chance(seed, m + 7 + r, 250) {
                            between(seed, m + 10 + r, 0, 500) as i64
                        } else {
                            between(seed, m + 10 + r, 1_000, 40 * 60_000) as i64
                        }
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let crash = match between(seed, m + 14, 0, 99) {
                0..=15 if key.is_some() => Some(SenderCrash::AfterClaim),
                16..=25 => Some(SenderCrash::After(between(seed, m + 15, 0, 400))),
                _ => None,
            };
            // One keyed event in seven has a twin: another key at the same instant (two files
            // landing in one millisecond, or two bus events stamped with one whole second).
            let twin = key.as_ref().filter(|_| chance(seed, m + 16, 143)).map(|k| EventPlan {
                at_ms,
                job: i,
                key: Some(format!("{k}-twin")),
                past_ms,
                repeats_ms: Vec::new(),
                crash: None,
            });
            out.push(EventPlan { at_ms, job: i, key, past_ms, repeats_ms, crash });
            out.extend(twin);
        }
    }
    out.sort_by_key(|e| (e.at_ms, e.job));
    out
}

/// A dependency deadline the run's quiet period outlasts many times over.
pub const DEPENDENCY_DEADLINE_SECS: u32 = 300;

/// In half of the seeds, about a third of the jobs wait for an earlier job of their tenant
/// (indexes only go back, so no cycle forms): `same` period, `succeeded` or `final`, and each
/// deadline policy.
fn add_dependencies(seed: u64, jobs: &mut [JobPlan]) {
    use sundial_model::dependency::{Dependency, DependencyPeriod, DependencyStatus, OnDependencyDeadline};
    if !chance(seed, 50_000, 500) {
        return;
    }
    for i in 1..jobs.len() {
        let n = 50_001 + i as u64 * 4;
        let earlier: Vec<usize> = (0..i).filter(|k| jobs[*k].tenant == jobs[i].tenant).collect();
        if earlier.is_empty() || !chance(seed, n, 350) {
            continue;
        }
        let up = earlier[between(seed, n + 1, 0, earlier.len() as u64 - 1) as usize];
        let status =
            if chance(seed, n + 2, 300) { DependencyStatus::Final } else { DependencyStatus::Succeeded };
        let policy = match between(seed, n + 3, 0, 2) {
            0 => OnDependencyDeadline::Fail,
            1 => OnDependencyDeadline::Skip,
            _ => OnDependencyDeadline::Run,
        };
        let dep = Dependency {
            job: jobs[up].job_id.clone(),
            period: DependencyPeriod::Same,
            offset_secs: None,
            status,
        };
        let def = &mut jobs[i].def;
        def.after = vec![dep];
        def.dependency_deadline_secs = Some(DEPENDENCY_DEADLINE_SECS);
        def.on_dependency_deadline = policy;
    }
}

/// Where the resource draws start in the seed's stream (clear of every other draw).
const RESOURCE_DRAWS: u64 = 3_800_000;

/// A quarter of the in-process jobs name one or both of the platform's resources
/// ([`crate::resources::LIMITS`]: a limit of 2, and of 3 with a share of 2 a tenant); an edit
/// keeps them.
fn add_resources(seed: u64, jobs: &mut [JobPlan]) {
    let [(a, ..), (b, ..)] = crate::resources::LIMITS;
    for (i, job) in jobs.iter_mut().enumerate() {
        let n = RESOURCE_DRAWS + i as u64 * 2;
        if matches!(job.def.target, sundial_model::Target::InProcess(_)) && chance(seed, n, 250) {
            job.def.resources = match between(seed, n + 1, 0, 2) {
                0 => vec![a.to_string()],
                1 => vec![b.to_string()],
                _ => vec![a.to_string(), b.to_string()],
            };
        }
    }
}

/// About one job in twelve targets a state machine of its tenant's instead of the in-process
/// handler (quick, slow or failing: [`crate::stepfunctions::MACHINES`]); an edit keeps it.
fn add_step_functions(seed: u64, jobs: &mut [JobPlan]) {
    for (i, job) in jobs.iter_mut().enumerate() {
        let n = 2_000_000 + i as u64 * 4;
        if chance(seed, n, 85) {
            let kind = between(seed, n + 1, 0, crate::stepfunctions::MACHINES.len() as u64 - 1) as usize;
            job.def.target = crate::stepfunctions::target(&job.tenant, kind);
        }
    }
}

/// About one job in twelve (of those left to the in-process handler, as
/// [`add_step_functions`] takes its share) runs a task definition of its tenant's instead, on
/// FARGATE in the shared cluster. A run's ecs jobs take four turns from a seeded start, so that
/// a run with a few covers most: the quick, the slow and the failing definition, and the slow
/// one under a `timeoutSecs` shorter than its task with two attempts per fire (each attempt
/// times out and stops its task, then the fire is DEAD). One job in ten draws the definition
/// that never starts instead ([`crate::ecs::DEFINITIONS`]). An edit keeps the target, the
/// timeout and the attempts.
fn add_ecs(seed: u64, jobs: &mut [JobPlan]) {
    let mut turn = between(seed, 2_099_999, 0, 3);
    for (i, job) in jobs.iter_mut().enumerate() {
        let n = 2_100_000 + i as u64 * 4;
        let in_process = matches!(job.def.target, Target::InProcess(_));
        if !in_process || !chance(seed, n, 90) {
            continue;
        }
        let (kind, times_out) = match turn % 4 {
            _ if chance(seed, n + 1, 100) => (crate::ecs::NEVER, false),
            3 => (crate::ecs::SLOW, true),
            k => (k as usize, false),
        };
        turn += 1;
        job.def.target = crate::ecs::target(&job.tenant, kind);
        if times_out {
            job.def.timeout_secs = crate::ecs::SHORT_TIMEOUT_SECS;
            job.def.retry.max_attempts = job.def.retry.max_attempts.min(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_workload_and_another_seed_a_different_one() {
        let p = Profile::default();
        let a = draw(7, &p, 1_800_000_000_000);
        let b = draw(7, &p, 1_800_000_000_000);
        let c = draw(8, &p, 1_800_000_000_000);
        let shape = |w: &Workload| {
            (
                w.jobs.iter().map(|j| format!("{}/{}/{:?}", j.tenant, j.job_id, j.def)).collect::<Vec<_>>(),
                w.ops.iter().map(|o| (o.at_ms, o.job, format!("{:?}", o.kind))).collect::<Vec<_>>(),
                w.events.clone(),
            )
        };
        assert_eq!(shape(&a), shape(&b));
        assert_ne!(shape(&a), shape(&c));
        assert!(a.ops.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        assert!(a.ops.iter().all(|o| o.at_ms > a.start_ms));
    }

    #[test]
    fn some_seeds_draw_dependencies_on_earlier_jobs_of_the_same_tenant_and_others_none() {
        let p = Profile::default();
        let (mut with, mut without) = (0, 0);
        for seed in 0..20 {
            let w = draw(seed, &p, 1_800_000_000_000);
            let deps: Vec<(usize, usize)> = w
                .jobs
                .iter()
                .enumerate()
                .flat_map(|(i, j)| j.def.after.iter().map(move |d| (i, d.job.clone())))
                .map(|(i, up)| (i, w.jobs.iter().position(|j| j.job_id == up).unwrap_or(usize::MAX)))
                .collect();
            for (i, up) in &deps {
                assert!(up < i, "seed {seed}: job {i} waits for {up}");
                assert_eq!(w.jobs[*i].tenant, w.jobs[*up].tenant);
            }
            if deps.is_empty() {
                without += 1;
            } else {
                with += 1;
            }
        }
        assert!(with > 0 && without > 0, "{with} seeds with dependencies, {without} without");
    }

    #[test]
    fn some_seeds_draw_events_for_jobs_that_wait_for_nobody_and_others_none() {
        let p = Profile::default();
        let (mut with, mut without) = (0, 0);
        for seed in 0..20 {
            let w = draw(seed, &p, 1_800_000_000_000);
            for e in &w.events {
                let job = &w.jobs[e.job];
                assert!(job.def.events.is_some() && job.def.after.is_empty(), "seed {seed}: {e:?}");
                assert!(
                    e.at_ms > w.start_ms && e.at_ms < w.end_ms && e.at_ms % 1000 != 0,
                    "seed {seed}: {e:?}"
                );
                let at = e.at_ms - e.past_ms.unwrap_or(0);
                assert!(at % 1000 != 0 && e.at_ms - at <= 20 * 60_000, "seed {seed}: {e:?}");
                assert!(e.crash != Some(SenderCrash::AfterClaim) || e.key.is_some());
            }
            if w.events.is_empty() {
                without += 1;
            } else {
                with += 1;
            }
        }
        assert!(with > 0 && without > 0, "{with} seeds with events, {without} without");
    }

    #[test]
    fn every_drawn_definition_is_valid() {
        for seed in 0..20 {
            let w = draw(seed, &Profile::default(), 1_800_000_000_000);
            for j in &w.jobs {
                // (the simulated deployment's allowlist: an ECS network is the deployment's to give)
                let mut cfg = sundial_core::config::Config::local("v-", &crate::world::POOLS, 16);
                cfg.targets.tenants = Some(crate::run::tenant_targets());
                sundial_model::Job::new(
                    &cfg,
                    &j.tenant,
                    &j.job_id,
                    j.def.clone(),
                    crate::world::ms(w.start_ms),
                )
                .unwrap_or_else(|e| panic!("seed {seed} {}: {e}", j.job_id));
            }
        }
    }
}
