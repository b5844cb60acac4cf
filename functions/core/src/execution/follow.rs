//! Queued-ahead executions follow their job's changes (paused, resumed and edited jobs).
//!
//! The tick and the API queue fires up to a minute ahead, so when a job is paused, resumed,
//! edited or deleted, executions already exist for instants after the change. Whether each
//! runs is decided by the job's state *at its instant*:
//!
//! | change | queued-ahead READY execution (never claimed, instant after the change) |
//! |---|---|
//! | pause | **held**: a worker that receives it at its instant while the pause lasts leaves it READY and held, and drops the message; the resume decides |
//! | resume | held ones whose instant is still ahead are **released**: the job is enabled at their instant. Held ones whose instant the pause covered are **taken over** by the resume's catch-up if it replays their instant ([`replays`]: `CaughtUp`, run at their paced start), else **canceled** (code `Paused`, [`close_window`]) |
//! | edit | instants the new schedule keeps are **amended** to the new definition and version; the others are **canceled** (code `Superseded`) |
//! | calendar edit (a re-plan: same definition, new calendar chain) | instants the schedule on the new chain drops are **canceled** (code `Superseded`); the others are kept |
//! | delete | **canceled** (held ones whose instant the pause covered: code `Paused`) |
//!
//! Manual runs, backfills and fires a backfill took over are never touched (they run whatever
//! the job's state), nor is anything already claimed. A held fire stays READY as long as its
//! pause: the reconciler re-sends it after each backoff (not a lost delivery, not a missed
//! start), and the worker that receives it judges the hold again. The API applies this right
//! after its change; a put by a scan that read the job before the change and wrote after this
//! sweep is judged by the worker before its first claim ([`at_claim`]), from the marks the job
//! keeps.

use chrono::{DateTime, Duration, Utc};
use sundial_model::{ExecStatus, Execution, Job, JobState};
use sundial_schedule::Schedule;
use sundial_store::executions::{ExecStore, Snapshot};
use sundial_store::StoreError;

/// What a job change does to one execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Nothing (not queued ahead, not READY, manual, or already as it should be).
    Keep,
    /// Hold it (the job is paused).
    Hold,
    /// Release its hold (the job is enabled again), then look again.
    Release,
    /// Move it to the job's current definition (an edit kept its instant).
    Amend,
    /// Cancel it: an edit removed its instant (`Superseded`), or the job was deleted.
    Cancel(&'static str),
}

/// Whether `at` is an instant of `schedule`.
fn fires_at(schedule: &Schedule, at: DateTime<Utc>) -> bool {
    schedule.next_after(at - Duration::milliseconds(1)) == Some(at)
}

/// A READY execution the trigger queued (not a manual run or a backfill, nor a fire a backfill
/// took over: those run whatever the job's state).
fn queued_ready(e: &Execution) -> bool {
    e.status == ExecStatus::Ready && e.is_scheduled_fire() && !e.is_caught_up()
}

/// An execution on another definition than the job's: amended if `schedule` (the job's) still
/// fires at its instant, canceled as superseded otherwise.
fn amend_or_supersede(schedule: Option<&Schedule>, e: &Execution) -> Follow {
    match schedule {
        Some(_) if sundial_mutants::active(sundial_mutants::Mutant::EditKeepsDroppedFires) => Follow::Amend,
        Some(sch) if fires_at(sch, e.scheduled_at) => Follow::Amend,
        _ => Follow::Cancel(sundial_model::retry::codes::SUPERSEDED),
    }
}

/// Planned on an older calendar chain than the job's, as far as versions tell: the job uses a
/// business calendar and the execution was made under an earlier job version (a calendar
/// re-plan bumps the version and leaves the definition as it was).
fn on_older_chain(job: &Job, e: &Execution) -> bool {
    !job.calendar_versions.is_empty() && e.def_version < job.version
}

/// Whether `schedule` (the job's now; `None`: not known here, so no) no longer fires at the
/// execution's instant.
fn dropped_by(schedule: Option<&Schedule>, e: &Execution) -> bool {
    schedule.is_some_and(|sch| !fires_at(sch, e.scheduled_at))
}

/// Decides what the job as it is now (`schedule`: its parsed schedule) does to `s`, for a change
/// at `changed_at`. Pure.
pub fn decide(job: &Job, schedule: Option<&Schedule>, s: &Snapshot, changed_at: DateTime<Utc>) -> Follow {
    let e = &s.exec;
    if !queued_ready(e) || e.fire_at <= changed_at {
        return Follow::Keep;
    }
    match job.state {
        JobState::Deleted if sundial_mutants::active(sundial_mutants::Mutant::DeletedJobRuns) => Follow::Keep,
        JobState::Paused if sundial_mutants::active(sundial_mutants::Mutant::PauseNotEnforced) => {
            Follow::Keep
        }
        JobState::Deleted => Follow::Cancel(sundial_model::retry::codes::CANCELED),
        JobState::Paused if s.held.is_some() => Follow::Keep,
        JobState::Paused => Follow::Hold,
        // A completed job's fires run as an enabled job's: it only stopped creating new ones.
        JobState::Enabled | JobState::Completed if s.held.is_some() => Follow::Release,
        JobState::Enabled | JobState::Completed if e.definition != job.definition => {
            amend_or_supersede(schedule, e)
        }
        // Same definition, another calendar chain: the schedules are compared, not definitions.
        JobState::Enabled | JobState::Completed if on_older_chain(job, e) && dropped_by(schedule, e) => {
            Follow::Cancel(sundial_model::retry::codes::SUPERSEDED)
        }
        JobState::Enabled | JobState::Completed => Follow::Keep,
    }
}

/// What a worker does with READY `s` when it is due, before claiming it, given the job as it is
/// now (`job`, `None` if unknown). Held by a pause: see [`held_at_claim`]. Otherwise, for a
/// scheduled execution never claimed, the job catches one put by a scan that raced a pause or
/// an edit after the API's sweep, from the job's marks at the execution's scheduled instant: its
/// last pause window (paused at the instant and still → hold it for the resume; resumed since →
/// cancel), when its current
/// definition took effect (before the instant and different → amend, or cancel if the new
/// schedule does not fire then), and when it was last re-planned on a new calendar chain (before
/// the instant, and the schedule on that chain does not fire then → cancel). `schedule` must be the job's with
/// its recorded chain. Pure.
pub fn at_claim(job: Option<&Job>, schedule: Option<&Schedule>, s: &Snapshot) -> Follow {
    let e = &s.exec;
    if s.held.is_some() && e.status == ExecStatus::Ready {
        return held_at_claim(job, s);
    }
    let Some(job) = job else { return Follow::Keep };
    if !queued_ready(e) || !e.never_claimed() {
        return Follow::Keep;
    }
    // Judged at the fire's scheduled instant, not its delivery: a fire owed before a change and
    // put late (a catch-up, or the change's own settling of what the job owed) is delivered at
    // or after the change, but was due while the job was as it was then.
    let at = e.scheduled_at;
    if job.state == JobState::Deleted
        && job.updated_at <= at
        && !sundial_mutants::active(sundial_mutants::Mutant::DeletedJobRuns)
    {
        return Follow::Cancel(sundial_model::retry::codes::CANCELED);
    }
    let enforced = !sundial_mutants::active(sundial_mutants::Mutant::PauseNotEnforced);
    // Paused at its instant and still paused: held for the resume to decide, as the pause's
    // own sweep would have (its catch-up may replay it; else the window's close cancels it).
    // The full mix's seed 1053: a fire the sweep missed was canceled here, and the resume's
    // `catchUp: all` could not replay it.
    let still_paused = job.state == JobState::Paused
        && job.paused.is_some_and(|(from, until)| until.is_none() && from <= at);
    if still_paused && enforced {
        return Follow::Hold;
    }
    if job.paused_at(at) && enforced {
        return Follow::Cancel(sundial_model::retry::codes::PAUSED);
    }
    if e.definition != job.definition && job.edited_at <= at {
        return amend_or_supersede(schedule, e);
    }
    let replanned = job.replanned_at.is_some_and(|r| r <= at);
    if replanned && on_older_chain(job, e) && dropped_by(schedule, e) {
        return Follow::Cancel(sundial_model::retry::codes::SUPERSEDED);
    }
    Follow::Keep
}

/// [`at_claim`], then the job's `fireOnce` batch covers (`covers`, read with the job): an
/// ordinary scheduled fire never claimed whose instant a batch stands for is canceled
/// (`CoveredByBatch`; docs/simulation.md, K6), unless the job's own marks cancel it first. Pure.
pub fn at_claim_covered(
    job: Option<&Job>,
    schedule: Option<&Schedule>,
    covers: &[sundial_model::BatchCover],
    s: &Snapshot,
) -> Follow {
    match at_claim(job, schedule, s) {
        Follow::Keep | Follow::Amend if covered(covers, s) => {
            Follow::Cancel(sundial_model::retry::codes::COVERED_BY_BATCH)
        }
        f => f,
    }
}

/// Whether `s` is an ordinary fire (scheduled, or a `oncePerPeriod` event's) or a backfilled
/// one, READY, never claimed and not held, at an instant one of `covers` stands for. A backfill
/// reads the covers before it puts, but a batch may register between that read and the put
/// (seed 2016); the backfilled fire's claim then finds the cover.
fn covered(covers: &[sundial_model::BatchCover], s: &Snapshot) -> bool {
    let e = &s.exec;
    e.status == ExecStatus::Ready
        && ((e.stands_for_fire() && !e.is_caught_up()) || e.is_backfilled())
        && e.never_claimed()
        && s.held.is_none()
        && e.missed_range.is_none()
        && e.child.is_none()
        && covers.iter().any(|c| c.covers(e.scheduled_at))
}

/// A held execution at its instant. A hold is only a pause's note, written without a condition
/// on the job, so it can be stale: a pause's hold that landed after a concurrent resume's sweep,
/// or one that a resume's sweep left behind when it failed part-way. So the job decides: still
/// paused, in a window that began by the instant → `Hold`: it stays READY and held (the worker
/// drops the message) for the resume to decide, which may replay it (`catchUp`); paused at the
/// instant in a window that has ended (or the job gone) → cancel (`Paused`); enabled at the
/// instant → `Release`, and the fire runs. When the job's last pause window began after the
/// instant, the window that held it is no longer recorded (the job keeps only its last one),
/// so the hold stands and the fire is canceled. Pure.
fn held_at_claim(job: Option<&Job>, s: &Snapshot) -> Follow {
    let paused = Follow::Cancel(sundial_model::retry::codes::PAUSED);
    let Some(job) = job.filter(|j| j.state != JobState::Deleted) else { return paused };
    let at = s.exec.fire_at;
    if job.state == JobState::Paused && job.paused.is_some_and(|(from, until)| until.is_none() && from <= at)
    {
        return Follow::Hold;
    }
    let earlier_window = job.paused.is_some_and(|(from, _)| from > at);
    if job.paused_at(at) || earlier_window {
        return paused;
    }
    Follow::Release
}

/// Whether a backfill (a resume's catch-up) that replays the instant of `s`, an execution that
/// already has it, takes `s` over to run it ([`ExecStore::catch_up`]): a fire the trigger queued,
/// READY and never claimed, that the job's pause kept from running: held, or put at an instant
/// the job was paused (a scan that raced the pause), which its worker would cancel. Anything
/// else is the backfill's "existing". Pure.
pub fn replays(job: &Job, s: &Snapshot) -> bool {
    if sundial_mutants::active(sundial_mutants::Mutant::CatchUpSkipsHeld) {
        return false;
    }
    let e = &s.exec;
    queued_ready(e)
        && e.never_claimed()
        && e.child.is_none()
        && (s.held.is_some() || job.paused_at(e.scheduled_at))
}

/// What a resumed (or deleted) job does to `s`, an execution of its last pause window, once its
/// catch-up replayed the instants `replayed` (none without one): a queued-ahead fire the pause
/// kept from running, held or put at a paused instant, is canceled (`Paused`), as its worker
/// would at its next delivery. Nothing while the job is still paused (the resume decides), and
/// nothing for an instant the catch-up replayed. Pure.
pub fn after_window(job: &Job, s: &Snapshot, replayed: &[DateTime<Utc>]) -> Follow {
    let e = &s.exec;
    if job.state == JobState::Paused
        || !queued_ready(e)
        || !e.never_claimed()
        || e.child.is_some()
        || replayed.contains(&e.scheduled_at)
    {
        return Follow::Keep;
    }
    let verdict = match s.held {
        Some(_) => held_at_claim(Some(job), s),
        None if job.paused_at(e.scheduled_at) => Follow::Cancel(sundial_model::retry::codes::PAUSED),
        None => Follow::Keep,
    };
    match verdict {
        Follow::Cancel(code) => Follow::Cancel(code),
        _ => Follow::Keep,
    }
}

/// Cancels the fires of `job`'s last pause window, through `now`, that the pause kept from
/// running and its resume's catch-up did not replay (`replayed`; see [`after_window`]). The
/// window holds only what was queued ahead of the pause and what was made by hand or by a
/// backfill: the tick makes nothing for a paused job. Returns their public ids.
pub async fn close_window(
    execs: &ExecStore,
    job: &Job,
    replayed: &[DateTime<Utc>],
    now: DateTime<Utc>,
    actor: &str,
) -> Result<Vec<String>, StoreError> {
    let Some((from, until)) = job.paused else { return Ok(Vec::new()) };
    let replayed =
        if sundial_mutants::active(sundial_mutants::Mutant::CatchUpSkipsHeld) { &[] } else { replayed };
    let to = until.unwrap_or(now).min(now).timestamp_millis();
    let now_ms = now.timestamp_millis();
    let mut canceled = Vec::new();
    for s in execs.fires_between(&job.tenant, &job.job_id, from.timestamp_millis(), to).await? {
        if let Follow::Cancel(code) = after_window(job, &s, replayed) {
            if execs.cancel_ready(&s.exec, code, actor, now_ms).await? {
                canceled.push(s.exec.id());
            }
        }
    }
    Ok(canceled)
}

/// What [`follow_change`] did (public execution ids).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Followed {
    /// Held by a pause.
    pub held: Vec<String>,
    /// Released by a resume.
    pub released: Vec<String>,
    /// Moved to the new definition.
    pub amended: Vec<String>,
    /// Canceled (superseded by an edit, or the job deleted).
    pub canceled: Vec<String>,
}

/// Applies the job's current state to its executions queued after `now` (see the module doc),
/// and for a deleted job to those of its last pause window too ([`close_window`]). Each write
/// is a CAS on the execution as read: one that a worker claimed in between is left alone.
pub async fn follow_change(
    execs: &ExecStore,
    job: &Job,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<Followed, StoreError> {
    let schedule = crate::schedules::schedule_of(job).ok().map(|s| (*s).clone());
    let now_ms = now.timestamp_millis();
    let mut done = Followed::default();
    for mut s in execs.scheduled_after(&job.tenant, &job.job_id, now_ms).await? {
        // A release may be followed by an amendment (a paused job edited, then resumed).
        for _ in 0..2 {
            let id = s.exec.id();
            match decide(job, schedule.as_ref(), &s, now) {
                Follow::Keep => break,
                Follow::Hold => {
                    if execs.hold(&s.exec, job.version, actor, now_ms).await? {
                        done.held.push(id);
                    }
                    break;
                }
                Follow::Release => {
                    if !execs.release_hold(&s.exec, actor, now_ms).await? {
                        break;
                    }
                    done.released.push(id);
                    s.held = None;
                }
                Follow::Amend => {
                    if execs.amend(&s.exec, &job.definition, job.version, actor, now_ms).await? {
                        done.amended.push(id);
                    }
                    break;
                }
                Follow::Cancel(code) => {
                    if execs.cancel_ready(&s.exec, code, actor, now_ms).await? {
                        done.canceled.push(id);
                    }
                    break;
                }
            }
        }
    }
    if job.state == JobState::Deleted {
        done.canceled.extend(close_window(execs, job, &[], now, actor).await?);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_model::{Execution, JobDefinition, Target, MANUAL_CODE};
    use sundial_schedule::ScheduleSpec;
    use sundial_store::items::ms_to_dt;

    const T0: i64 = 1_796_040_005_000; // 2026-11-30T12:00:05Z

    fn job(expr: &str) -> Job {
        let def = JobDefinition::new(ScheduleSpec::new(expr, "UTC"), Target::http("https://x"));
        Job::new(&crate::config::Config::local("t-", &["default"], 8), "acme", "j", def, ms_to_dt(T0))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn queued(job: &Job, at_ms: i64) -> Snapshot {
        let s = Schedule::parse(&job.definition.schedule, job.anchor).unwrap_or_else(|e| panic!("{e}"));
        queued_on(job, &s, at_ms)
    }

    fn queued_on(job: &Job, s: &Schedule, at_ms: i64) -> Snapshot {
        let exec = Execution::ready(job, s, ms_to_dt(at_ms), None, ms_to_dt(T0), "tick");
        Snapshot {
            wait_gen: 0,
            wait_gen_sent: 0,
            looked_done: None,
            checked_through: None,
            exec,
            checkpoint: None,
            total_run_ms: 0,
            digest: None,
            open_due: None,
            resends: 0,
            held: None,
            missed_at: None,
            outbox: Vec::new(),
            finish_missed_at: None,
        }
    }

    #[test]
    fn a_pause_holds_a_resume_releases_and_past_or_manual_fires_are_kept() {
        let mut j = job("0 * * * * *");
        let fire = queued(&j, T0 + 55_000); // 12:01:00
        let change = ms_to_dt(T0 + 15_000);
        j.state = JobState::Paused;
        assert_eq!(decide(&j, None, &fire, change), Follow::Hold);
        let held = Snapshot { held: Some(2), ..fire.clone() };
        assert_eq!(decide(&j, None, &held, change), Follow::Keep);
        j.state = JobState::Enabled;
        assert_eq!(decide(&j, None, &held, change), Follow::Release);
        assert_eq!(decide(&j, None, &fire, ms_to_dt(T0 + 60_000)), Follow::Keep, "its instant passed");
        let mut manual = fire.clone();
        manual.exec.timeline[0].code = Some(MANUAL_CODE.into());
        j.state = JobState::Paused;
        assert_eq!(decide(&j, None, &manual, change), Follow::Keep);
    }

    #[test]
    fn an_edit_amends_kept_instants_and_cancels_removed_ones() {
        let v1 = job("0,30 * * * * *");
        let (on_minute, half) = (queued(&v1, T0 + 55_000), queued(&v1, T0 + 85_000));
        let mut v2 = v1.clone();
        v2.definition.schedule = ScheduleSpec::new("0 * * * * *", "UTC");
        v2.version = 2;
        let s2 = Schedule::parse(&v2.definition.schedule, v2.anchor).ok();
        let change = ms_to_dt(T0 + 15_000);
        assert_eq!(decide(&v2, s2.as_ref(), &on_minute, change), Follow::Amend);
        assert_eq!(
            decide(&v2, s2.as_ref(), &half, change),
            Follow::Cancel(sundial_model::retry::codes::SUPERSEDED)
        );
    }

    #[test]
    fn at_claim_keeps_a_fire_owed_before_a_change_though_it_was_put_at_the_change() {
        // GIVEN the 12:01 fire of an every-minute job, put late (a tick outage) by the change
        // that settles what the job owes, at 12:05:10: its delivery instant is the change's
        let change = ms_to_dt(T0 + 305_000);
        let v1 = job("0 * * * * *");
        let mut owed = queued(&v1, T0 + 55_000);
        owed.exec.fire_at = change;
        // WHEN the job is paused, deleted or edited at that instant
        let mut paused = v1.clone();
        paused.state = JobState::Paused;
        paused.paused = Some((change, None));
        let mut deleted = v1.clone();
        deleted.state = JobState::Deleted;
        deleted.updated_at = change;
        let mut edited = v1.clone();
        edited.definition.schedule = ScheduleSpec::new("0 */5 * * * *", "UTC");
        edited.version = 2;
        edited.edited_at = change;
        let s2 = Schedule::parse(&edited.definition.schedule, edited.anchor).ok();
        // THEN the worker keeps it as it was due: enabled, on v1, at 12:01 (pause decides by the
        // instant, and an edit applies after it)
        assert_eq!(at_claim(Some(&paused), None, &owed), Follow::Keep);
        assert_eq!(at_claim(Some(&deleted), None, &owed), Follow::Keep);
        assert_eq!(at_claim(Some(&edited), s2.as_ref(), &owed), Follow::Keep);
    }

    #[test]
    fn at_claim_cancels_a_fire_of_a_job_paused_before_its_instant_only() {
        let mut j = job("0 * * * * *");
        let fire = queued(&j, T0 + 55_000);
        j.state = JobState::Paused;
        j.paused = Some((ms_to_dt(T0 + 5_000), None));
        // still paused: held for the resume, whose catch-up may replay it (seed 1053)
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Hold);
        // resumed after its instant: it was paused then, canceled
        j.state = JobState::Enabled;
        j.paused = Some((ms_to_dt(T0 + 5_000), Some(ms_to_dt(T0 + 70_000))));
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Cancel(sundial_model::retry::codes::PAUSED));
        // resumed before its instant: enabled then
        j.paused = Some((ms_to_dt(T0 + 5_000), Some(ms_to_dt(T0 + 30_000))));
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Keep);
        // paused after its instant: it was enabled then
        j.state = JobState::Paused;
        j.paused = Some((ms_to_dt(T0 + 60_000), None));
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Keep);
        assert_eq!(at_claim(None, None, &fire), Follow::Keep, "no job item: nothing to say");
    }

    #[test]
    fn a_held_fire_stands_while_its_pause_lasts_and_is_canceled_only_if_the_job_was_paused_at_its_instant() {
        let mut j = job("0 * * * * *");
        let held = Snapshot { held: Some(2), ..queued(&j, T0 + 55_000) }; // 12:01:00
        let paused = Follow::Cancel(sundial_model::retry::codes::PAUSED);
        // still paused: the hold stands, READY, for the resume to decide
        j.state = JobState::Paused;
        j.paused = Some((ms_to_dt(T0 + 15_000), None));
        assert_eq!(at_claim(Some(&j), None, &held), Follow::Hold);
        // still paused, in a window that began after the instant: not the pause that held it
        j.paused = Some((ms_to_dt(T0 + 60_000), None));
        assert_eq!(at_claim(Some(&j), None, &held), paused);
        // resumed after the instant
        j.state = JobState::Enabled;
        j.paused = Some((ms_to_dt(T0 + 15_000), Some(ms_to_dt(T0 + 70_000))));
        assert_eq!(at_claim(Some(&j), None, &held), paused);
        // resumed before the instant: a stale hold (it landed after the resume's sweep, or the
        // sweep failed before reaching it)
        j.paused = Some((ms_to_dt(T0 + 15_000), Some(ms_to_dt(T0 + 25_000))));
        assert_eq!(at_claim(Some(&j), None, &held), Follow::Release);
        // the last window began after the instant: the one that held it is not recorded
        j.paused = Some((ms_to_dt(T0 + 70_000), Some(ms_to_dt(T0 + 80_000))));
        assert_eq!(at_claim(Some(&j), None, &held), paused);
        // no job, or a deleted one (deleted while paused too)
        assert_eq!(at_claim(None, None, &held), paused);
        j.state = JobState::Deleted;
        assert_eq!(at_claim(Some(&j), None, &held), paused);
        j.paused = Some((ms_to_dt(T0 + 15_000), None));
        assert_eq!(at_claim(Some(&j), None, &held), paused);
    }

    /// `s` with the note a backfill's take-over writes.
    fn caught_up(s: &Snapshot) -> Snapshot {
        let mut s = Snapshot { held: None, ..s.clone() };
        let note = sundial_model::AuditEvent::note(
            &s.exec,
            T0 + 80_000,
            "api:x",
            sundial_model::retry::codes::CAUGHT_UP,
        );
        s.exec.timeline.push(note);
        s
    }

    #[test]
    fn a_backfill_takes_over_the_fires_the_pause_kept_from_running_and_they_then_run_whatever_the_job() {
        // GIVEN an every-minute job paused at 12:00:20, and its 12:01 fire queued ahead
        let mut j = job("0 * * * * *");
        j.state = JobState::Paused;
        j.paused = Some((ms_to_dt(T0 + 15_000), None));
        let fire = queued(&j, T0 + 55_000);
        let held = Snapshot { held: Some(2), ..fire.clone() };
        // THEN a backfill of 12:01 takes it over, held or put unheld by a scan that raced the
        // pause, while the job is paused and once it is resumed
        assert!(replays(&j, &held) && replays(&j, &fire));
        j.state = JobState::Enabled;
        j.paused = Some((ms_to_dt(T0 + 15_000), Some(ms_to_dt(T0 + 70_000))));
        assert!(replays(&j, &held) && replays(&j, &fire));
        // AND not a fire of an instant the job was enabled at, nor one claimed, made by hand,
        // final, or taken over already
        assert!(!replays(&j, &queued(&j, T0 - 5_000)));
        let mut claimed = held.clone();
        claimed.exec.fencing_token = 1;
        let mut manual = held.clone();
        manual.exec.timeline[0].code = Some(MANUAL_CODE.into());
        let mut canceled = held.clone();
        canceled.exec.status = ExecStatus::Canceled;
        for s in [&claimed, &manual, &canceled, &caught_up(&held)] {
            assert!(!replays(&j, s), "{:?}", s.exec.timeline);
        }
        // AND once taken over its worker runs it, though the job was paused at its instant, and
        // a later pause or edit leaves it alone, as it does a backfill
        let paused = Follow::Cancel(sundial_model::retry::codes::PAUSED);
        assert_eq!(at_claim(Some(&j), None, &fire), paused);
        assert_eq!(at_claim(Some(&j), None, &caught_up(&held)), Follow::Keep);
        j.state = JobState::Paused;
        assert_eq!(decide(&j, None, &fire, ms_to_dt(T0 + 20_000)), Follow::Hold);
        assert_eq!(decide(&j, None, &caught_up(&held), ms_to_dt(T0 + 20_000)), Follow::Keep);
    }

    #[test]
    fn the_end_of_a_pause_cancels_the_fires_it_held_that_its_catch_up_did_not_replay() {
        // GIVEN an every-minute job paused at 12:00:20, its 12:01 and 12:02 fires held
        let mut j = job("0 * * * * *");
        let (one, two) = (queued(&j, T0 + 55_000), queued(&j, T0 + 115_000));
        let held = |s: &Snapshot| Snapshot { held: Some(2), ..s.clone() };
        let (one_at, two_at) = (one.exec.scheduled_at, two.exec.scheduled_at);
        let paused = Follow::Cancel(sundial_model::retry::codes::PAUSED);
        j.state = JobState::Paused;
        j.paused = Some((ms_to_dt(T0 + 15_000), None));
        // THEN while it lasts nothing is decided
        assert_eq!(after_window(&j, &held(&one), &[]), Follow::Keep);
        // WHEN it is resumed at 12:02:30: without a catch-up both are canceled; with catchUp
        // last, 12:01 only; with all, neither
        j.state = JobState::Enabled;
        j.paused = Some((ms_to_dt(T0 + 15_000), Some(ms_to_dt(T0 + 145_000))));
        assert_eq!(after_window(&j, &held(&one), &[]), paused);
        assert_eq!(after_window(&j, &held(&two), &[]), paused);
        assert_eq!(after_window(&j, &held(&one), &[two_at]), paused);
        assert_eq!(after_window(&j, &held(&two), &[two_at]), Follow::Keep);
        assert_eq!(after_window(&j, &held(&one), &[one_at, two_at]), Follow::Keep);
        // AND a fire put unheld at a paused instant (a scan that raced the pause) goes the same way
        assert_eq!(after_window(&j, &one, &[]), paused);
        // AND a fire of an instant the job was enabled at, one taken over, one made by hand are
        // left alone
        assert_eq!(after_window(&j, &queued(&j, T0 + 175_000), &[]), Follow::Keep);
        assert_eq!(after_window(&j, &caught_up(&held(&one)), &[]), Follow::Keep);
        let mut manual = held(&one);
        manual.exec.timeline[0].code = Some(MANUAL_CODE.into());
        assert_eq!(after_window(&j, &manual, &[]), Follow::Keep);
        // AND a job deleted while paused cancels what its pause held
        j.state = JobState::Deleted;
        j.paused = Some((ms_to_dt(T0 + 15_000), None));
        assert_eq!(after_window(&j, &held(&one), &[]), paused);
    }

    #[test]
    fn a_calendar_replan_supersedes_only_the_fires_the_new_chain_drops() {
        use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, Roll};
        let chain = |version: u64, holidays: &[&str]| {
            let spec = BusinessCalendarSpec {
                holidays: holidays.iter().map(|d| d.to_string()).collect(),
                ..Default::default()
            };
            std::sync::Arc::new(BusinessDays::single("hol", version, &spec).unwrap_or_else(|e| panic!("{e}")))
        };
        let mut def = JobDefinition::new(ScheduleSpec::new("0 1 12 * * *", "UTC"), Target::http("https://x"));
        def.schedule.business_calendar =
            Some(BusinessCalendarRef { calendar: "hol".into(), roll: Roll::Skip });
        let cfg = crate::config::Config::local("t-", &["default"], 8);
        let days1 = chain(1, &[]);
        let v1 = Job::new_with(&cfg, "acme", "j", def, ms_to_dt(T0), Some(days1.clone()))
            .unwrap_or_else(|e| panic!("{e}"));
        let s1 = Schedule::parse_with(&v1.definition.schedule, v1.anchor, Some(days1))
            .unwrap_or_else(|e| panic!("{e}"));
        let (today, tomorrow) =
            (queued_on(&v1, &s1, T0 + 55_000), queued_on(&v1, &s1, T0 + 86_400_000 + 55_000));
        // GIVEN a re-plan at 12:00:20 on v2 of the calendar, which makes Monday 11-30 a holiday
        let mut v2 = v1.clone();
        v2.version = 2;
        v2.calendar_versions = vec![("hol".into(), 2)];
        v2.replanned_at = Some(ms_to_dt(T0 + 15_000));
        let days2 = chain(2, &["2026-11-30"]);
        let s2 = Schedule::parse_with(&v2.definition.schedule, v2.anchor, Some(days2)).ok();
        let superseded = Follow::Cancel(sundial_model::retry::codes::SUPERSEDED);
        // THEN the sweep and the worker supersede today's fire and keep tomorrow's
        let change = ms_to_dt(T0 + 15_000);
        assert_eq!(decide(&v2, s2.as_ref(), &today, change), superseded);
        assert_eq!(decide(&v2, s2.as_ref(), &tomorrow, change), Follow::Keep);
        assert_eq!(at_claim(Some(&v2), s2.as_ref(), &today), superseded);
        assert_eq!(at_claim(Some(&v2), s2.as_ref(), &tomorrow), Follow::Keep);
        // AND a fire made under v2 is not judged again, nor one whose instant preceded the re-plan
        let mut made_under_v2 = today.clone();
        made_under_v2.exec.def_version = 2;
        assert_eq!(at_claim(Some(&v2), s2.as_ref(), &made_under_v2), Follow::Keep);
        v2.replanned_at = Some(ms_to_dt(T0 + 60_000));
        assert_eq!(at_claim(Some(&v2), s2.as_ref(), &today), Follow::Keep);
    }

    #[test]
    fn at_claim_sees_an_edit_before_the_instant_even_behind_a_later_pause() {
        let v1 = job("0,30 * * * * *");
        let fire = queued(&v1, T0 + 55_000);
        let mut v2 = v1.clone();
        v2.definition = v2.definition.clone().with_params(serde_json::json!({"v": 2}));
        v2.edited_at = ms_to_dt(T0 + 10_000);
        v2.state = JobState::Paused;
        v2.paused = Some((ms_to_dt(T0 + 58_000), None)); // paused after the instant
        let s2 = Schedule::parse(&v2.definition.schedule, v2.anchor).ok();
        assert_eq!(at_claim(Some(&v2), s2.as_ref(), &fire), Follow::Amend);
    }

    #[test]
    fn a_fire_a_batch_covers_is_canceled_at_its_first_claim_but_not_the_batch_or_a_retry() {
        let j = job("*/15 * * * * *");
        let covered_code = Follow::Cancel(sundial_model::retry::codes::COVERED_BY_BATCH);
        let cover =
            sundial_model::BatchCover { first: ms_to_dt(T0 + 10_000), through: ms_to_dt(T0 + 55_000) };
        let inside = queued(&j, T0 + 25_000);
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &inside), covered_code);
        assert_eq!(at_claim_covered(Some(&j), None, &[], &inside), Follow::Keep, "no cover");
        let last = queued(&j, T0 + 55_000);
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &last), covered_code, "through is included");
        let own = queued(&j, T0 + 10_000);
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &own), Follow::Keep, "the batch's own instant");
        let after = queued(&j, T0 + 70_000);
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &after), Follow::Keep);
        let mut batch = queued(&j, T0 + 25_000);
        batch.exec.missed_range = Some((ms_to_dt(T0 + 25_000), ms_to_dt(T0 + 85_000)));
        assert_eq!(
            at_claim_covered(Some(&j), None, &[cover], &batch),
            Follow::Keep,
            "a batch is not canceled"
        );
        let mut retry = queued(&j, T0 + 25_000);
        retry.exec.fencing_token = 1;
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &retry), Follow::Keep, "started once");
        let mut manual = queued(&j, T0 + 25_000);
        manual.exec.timeline[0].code = Some(MANUAL_CODE.into());
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &manual), Follow::Keep);
        // A backfilled fire put before the batch registered: the batch stands for its instant
        // (seed 2016)
        let mut backfilled = queued(&j, T0 + 25_000);
        backfilled.exec.timeline[0].code = Some(sundial_model::BACKFILL_CODE.into());
        assert_eq!(
            at_claim_covered(Some(&j), None, &[cover], &backfilled),
            covered_code,
            "a backfilled fire"
        );
        // An event's execution at a covered instant: of its own it is kept; with
        // `oncePerPeriod` it is the period's fire, which the batch ran (K14)
        let mut event = queued(&j, T0 + 25_000);
        event.exec.timeline[0].code = Some(sundial_model::event::EVENT_CODE.into());
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &event), Follow::Keep, "an event of its own");
        event.exec.definition.events = Some(sundial_model::event::EventTrigger { once_per_period: true });
        assert_eq!(at_claim_covered(Some(&j), None, &[cover], &event), covered_code, "a oncePerPeriod event");
        let mut paused = j.clone();
        paused.paused = Some((ms_to_dt(T0), None));
        paused.state = JobState::Paused;
        assert_eq!(
            at_claim_covered(Some(&paused), None, &[cover], &inside),
            Follow::Hold,
            "the job's own marks come first (still paused: held for the resume)"
        );
    }
}
