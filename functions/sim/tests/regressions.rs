//! Seeds that once broke an invariant, each replayed in the shape that found it and named with
//! the finding (docs/simulation.md, "A regression seed"). A seed here fails again if its defect
//! comes back. The simulator needs no emulator: like the fresh seeds, these run in the MiniStack
//! pass only.

use sundial_sim::run::{describe, run, RunOptions};

/// CI's faults-only shape (`tests/sim.rs`): 12 jobs firing for an hour, every fault, no
/// operator actions.
fn faults_only(seed: u64) -> RunOptions {
    let mut o = RunOptions::new(seed);
    o.profile.jobs = 12;
    o.profile.firing_minutes = 60;
    o.profile.ops_per_hour = 0;
    // The shape that found them had no zombies yet.
    o.stalls = false;
    o
}

fn holds(o: RunOptions) {
    if std::env::var("SUNDIAL_EMULATOR").is_ok_and(|v| v == "moto") {
        eprintln!("regression seeds ran in the MiniStack pass");
        return;
    }
    let seed = o.seed;
    let out = run(&o).unwrap_or_else(|e| panic!("seed {seed} could not run: {e:#}"));
    assert!(out.violations.is_empty(), "{}", describe(&out));
}

/// Seed 13, faults only. On b2bc332 (issue 50): two `FireMissed` events for one fire, an SDK
/// retry of a `PutEvents` whose answer was lost, counted as two reports; now one report with
/// one `eventId`, its transport repeat recognized. On 9fdebe0: a keyless event sent again with
/// its stamp was given a new millisecond and ran twice (fixed in 23d48c7).
#[test]
fn seed_13_a_missed_start_is_one_report_and_a_keyless_event_one_run() {
    holds(faults_only(13));
}

/// Seed 2718281, faults only. On b2bc332 (issue 50): eight fires with two `FireMissed` events
/// each (SDK retries of lost `PutEvents` answers). With an intermediate fix of 9fdebe0, a key
/// redelivered while its instant moved landed on another event's execution.
#[test]
fn seed_2718281_missed_starts_repeated_by_the_transport_are_one_report_each() {
    holds(faults_only(2_718_281));
}

/// Open (docs/simulation.md, K11): seed 227 of CI's faults shape, once the workload drew slow
/// jobs and event twins (issue 50): 7 copies of one fire's message live at once (28 sent), an
/// every-15-s ECS job whose runs fail and retry in an SQS fault window. Ignored until fixed.
#[test]
#[ignore = "open: K11, message copies of a retrying fire"]
fn seed_227_a_retrying_fire_keeps_at_most_six_copies_live() {
    holds(faults_only(227));
}

/// Open (K11): seeds 244 and 269 of CI's faults shape: 8 copies of one fire's message live at
/// once (15 and 49 sent). Ignored until fixed.
#[test]
#[ignore = "open: K11, message copies"]
fn seeds_244_and_269_keep_at_most_six_copies_live() {
    holds(faults_only(244));
    holds(faults_only(269));
}

/// Open (K12): seed 291 of CI's faults shape: a fire of job0000 at 23:37:00 has no execution
/// (16 executions in the whole run). Not yet diagnosed. Ignored until fixed.
#[test]
#[ignore = "open: K12, a lost fire"]
fn seed_291_every_fire_has_its_execution() {
    holds(faults_only(291));
}
