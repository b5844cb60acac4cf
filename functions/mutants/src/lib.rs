//! Planted protocol bugs (docs/simulation.md, "Planted bugs").
//!
//! Each [`Mutant`] is a small, plausible change to production code (a condition dropped, a
//! partition skipped, a message deleted on the wrong branch), planted where the real code
//! decides, behind `if sundial_mutants::active(Mutant::X) { .. }`. The production crates
//! compile the branch only with their `mutants` feature (which turns on this crate's `on`);
//! without it [`active`] is a constant `false` and nothing of a mutant is in the binary. With
//! it, one build carries every mutant and [`activate`] switches at most one on, by name, at run
//! time: the simulator's catalog test (`functions/sim/tests/mutants.rs`) runs each and fails
//! unless the simulator's invariants kill it.

#![forbid(unsafe_code)]

/// One planted bug. [`Mutant::ALL`] lists them; [`Mutant::name`] is the name a run selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mutant {
    /// The finish write conditions on the status only, not on the fencing token and owner: a
    /// zombie that lost its lease can overwrite the outcome of the claim that took over.
    FinishUnfenced,
    /// The execution put is unconditional: a second put of one (job, instant) overwrites the
    /// first execution (its history and token) instead of finding it.
    PutOverwrites,
    /// The reconciler never reads partition 5 of the `open` index.
    ReconcileSkipsPartition,
    /// A store error while handling a delivery deletes the message instead of returning it.
    WorkerAcksStoreError,
    /// A claim refused as held or not yet available deletes the message instead of returning it.
    WorkerAcksRefusedClaim,
    /// A scan that cannot read a time bucket skips it and still advances the watermark.
    TickSkipsFailedBucket,
    /// A claim (a retry or a takeover) keeps the fencing token instead of raising it.
    ClaimReusesToken,
    /// The event call no longer claims the event's key: a redelivered keyed event makes a new
    /// execution.
    EventSkipsKeyClaim,
    /// A claim may take over a RUNNING execution whose lease is still live.
    TakeoverLiveLease,
    /// A heartbeat extends the lease without checking the token and owner.
    HeartbeatUnfenced,
    /// A runner does not act on a cancel requested while it runs (the heartbeat reports the
    /// flag; the run goes on to its end). It replaces a cancel flag written without the token
    /// it read, an equivalent mutant: the request re-reads and flags whichever attempt runs, so
    /// no behaviour differed.
    CancelIgnored,
    /// A fire of a job with `after` does not wait for its upstream.
    DependencyNeverWaits,
    /// A pause is not honoured for fires already queued: the pause's sweep does not hold them
    /// and a worker does not check the job's pause at the fire's instant.
    PauseNotEnforced,
    /// A change (pause, edit, delete) after a tick outage does not settle the fires owed before it.
    SettleDropsOwed,
    /// The `maxRuns` count admits one fire past the limit (`<=` for `<`).
    MaxRunsOffByOne,
    /// Distinct keyed events at one instant are not moved apart: the second lands on the first's
    /// execution.
    EventsNotNudged,
    /// A SERIALIZE job's fire does not wait for the job's running fire.
    SerializeNeverWaits,
    /// A FAILED or DEAD fire writes no `ExecutionDead` outcome event.
    OutcomeDeadDropped,
    /// A `fireOnce` batch does not register on its job before its first claim, so two
    /// overlapping batches can each run their shared instants.
    BatchSkipsRegistry,
    /// An edit of the schedule does not cancel the fires queued for instants the new schedule
    /// does not have.
    EditKeepsDroppedFires,
    /// The tick's verification pass tracks nothing: an every-minute or daily fire whose message
    /// was lost is never put in the `open` index, so nothing repairs it.
    VerifyTracksNothing,
    /// A delete is not honoured for fires already queued: the delete's sweep does not cancel
    /// them and a worker does not check the job's deletion at the fire's instant.
    DeletedJobRuns,
    /// A resume's catch-up does not take over the fires the pause held at its window's
    /// instants (it counts them as existing) and the window's close cancels them (`Paused`):
    /// the review's "resume with catch-up loses the paused window's queued-ahead fires".
    CatchUpSkipsHeld,
    /// A resource limit admits one holder more than its limit (the gate's bound off by one).
    ResourceLimitOffByOne,
    /// A tenant's running gate admits one execution more than the tenant's limit.
    TenantGateOffByOne,
}

impl Mutant {
    /// Every mutant, in catalog order.
    pub const ALL: [Mutant; 25] = [
        Mutant::FinishUnfenced,
        Mutant::PutOverwrites,
        Mutant::ReconcileSkipsPartition,
        Mutant::WorkerAcksStoreError,
        Mutant::WorkerAcksRefusedClaim,
        Mutant::TickSkipsFailedBucket,
        Mutant::ClaimReusesToken,
        Mutant::EventSkipsKeyClaim,
        Mutant::TakeoverLiveLease,
        Mutant::HeartbeatUnfenced,
        Mutant::CancelIgnored,
        Mutant::DependencyNeverWaits,
        Mutant::PauseNotEnforced,
        Mutant::SettleDropsOwed,
        Mutant::MaxRunsOffByOne,
        Mutant::EventsNotNudged,
        Mutant::SerializeNeverWaits,
        Mutant::OutcomeDeadDropped,
        Mutant::BatchSkipsRegistry,
        Mutant::EditKeepsDroppedFires,
        Mutant::VerifyTracksNothing,
        Mutant::DeletedJobRuns,
        Mutant::CatchUpSkipsHeld,
        Mutant::ResourceLimitOffByOne,
        Mutant::TenantGateOffByOne,
    ];

    /// The name a run selects it by (kebab case).
    pub fn name(self) -> &'static str {
        match self {
            Mutant::FinishUnfenced => "finish-unfenced",
            Mutant::PutOverwrites => "put-overwrites",
            Mutant::ReconcileSkipsPartition => "reconcile-skips-partition",
            Mutant::WorkerAcksStoreError => "worker-acks-store-error",
            Mutant::WorkerAcksRefusedClaim => "worker-acks-refused-claim",
            Mutant::TickSkipsFailedBucket => "tick-skips-failed-bucket",
            Mutant::ClaimReusesToken => "claim-reuses-token",
            Mutant::EventSkipsKeyClaim => "event-skips-key-claim",
            Mutant::TakeoverLiveLease => "takeover-live-lease",
            Mutant::HeartbeatUnfenced => "heartbeat-unfenced",
            Mutant::CancelIgnored => "cancel-ignored",
            Mutant::DependencyNeverWaits => "dependency-never-waits",
            Mutant::PauseNotEnforced => "pause-not-enforced",
            Mutant::SettleDropsOwed => "settle-drops-owed",
            Mutant::MaxRunsOffByOne => "max-runs-off-by-one",
            Mutant::EventsNotNudged => "events-not-nudged",
            Mutant::SerializeNeverWaits => "serialize-never-waits",
            Mutant::OutcomeDeadDropped => "outcome-dead-dropped",
            Mutant::BatchSkipsRegistry => "batch-skips-registry",
            Mutant::EditKeepsDroppedFires => "edit-keeps-dropped-fires",
            Mutant::VerifyTracksNothing => "verify-tracks-nothing",
            Mutant::DeletedJobRuns => "deleted-job-runs",
            Mutant::CatchUpSkipsHeld => "catch-up-skips-held",
            Mutant::ResourceLimitOffByOne => "resource-limit-off-by-one",
            Mutant::TenantGateOffByOne => "tenant-gate-off-by-one",
        }
    }

    /// The mutant named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Mutant> {
        Mutant::ALL.into_iter().find(|m| m.name() == name)
    }
}

#[cfg(feature = "on")]
static ACTIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether `m` is the mutant switched on. Always `false` without the `on` feature.
#[inline(always)]
pub fn active(m: Mutant) -> bool {
    #[cfg(feature = "on")]
    {
        ACTIVE.load(std::sync::atomic::Ordering::Relaxed) == m as usize + 1
    }
    #[cfg(not(feature = "on"))]
    {
        let _ = m;
        false
    }
}

/// Whether this build carries the mutants (the `on` feature).
pub const COMPILED: bool = cfg!(feature = "on");

/// Switches `m` on (`None`: every mutant off), process-wide. Refused (false) in a build without
/// the mutants, where nothing could be switched on.
pub fn activate(m: Option<Mutant>) -> bool {
    #[cfg(feature = "on")]
    {
        ACTIVE.store(m.map_or(0, |m| m as usize + 1), std::sync::atomic::Ordering::Relaxed);
        true
    }
    #[cfg(not(feature = "on"))]
    {
        m.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mutant_has_a_distinct_name_that_parses_back() {
        let names: std::collections::BTreeSet<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), Mutant::ALL.len());
        for m in Mutant::ALL {
            assert_eq!(Mutant::parse(m.name()), Some(m));
        }
        assert_eq!(Mutant::parse("no-such-mutant"), None);
    }

    #[test]
    fn without_the_feature_nothing_can_be_switched_on() {
        if !COMPILED {
            assert!(!activate(Some(Mutant::FinishUnfenced)));
            assert!(!active(Mutant::FinishUnfenced));
            assert!(activate(None));
        }
    }
}
