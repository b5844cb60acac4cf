//! The planted-bug catalog (docs/simulation.md, "Planted bugs"): every mutant of
//! `sundial_mutants::Mutant` is switched on, one per process, in a build that carries them
//! (`cargo test -p sundial-sim --features mutants --test mutants`), and the simulator must kill
//! it: some seed of the shape listed for it breaks an invariant. An unmutated run of each shape
//! and seed is clean first, so a kill is the mutant's doing.
//!
//! The simulator needs no emulator: the catalog runs in the MiniStack pass only. A build
//! without the feature (the workspace's `cargo test`) compiles and lints this file but has
//! nothing to switch on, and says so.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use sundial_mutants::Mutant;

/// How a mutant is hunted: the shape's `sim` options and the seed that kills it (found by
/// hand, `sim --mutant NAME --seeds N`, and kept: the test replays it, so a kill is never luck).
struct Hunt {
    args: &'static [&'static str],
    seed: u64,
}

/// Every fault (zombies, kills, network windows, outages), no operator actions; 10 jobs firing
/// for 30 minutes.
const FAULTS: &[&str] = &["--jobs", "10", "--minutes", "30", "--ops-per-hour", "0"];
/// Operator actions (pause, resume, edit, delete, trigger), no faults.
const OPS: &[&str] = &["--jobs", "10", "--minutes", "30", "--ops-per-hour", "30", "--no-faults"];
/// CI's faults-only shape, shorter: 12 jobs firing for 40 minutes.
const FAULTS_12: &[&str] = &["--jobs", "12", "--minutes", "40", "--ops-per-hour", "0"];
/// Operator cancels, no faults: 10 jobs firing for 30 minutes, 30 cancels an hour.
const CANCELS: &[&str] =
    &["--jobs", "10", "--minutes", "30", "--ops-per-hour", "0", "--cancels-per-hour", "30", "--no-faults"];
/// Faults and operator actions together: 24 jobs firing for an hour, 12 actions an hour.
const MIX_24: &[&str] = &["--jobs", "24", "--minutes", "60", "--ops-per-hour", "12"];

/// The hunt for `m`: a shape and a seed that kill it (found with the `sim` binary).
fn hunt(m: Mutant) -> Hunt {
    use Mutant::*;
    let (args, seed) = match m {
        FinishUnfenced => (FAULTS_12, 13),
        PutOverwrites => (FAULTS, 3),
        ReconcileSkipsPartition => (FAULTS_12, 14),
        WorkerAcksStoreError => (FAULTS_12, 11),
        WorkerAcksRefusedClaim => (FAULTS, 1),
        TickSkipsFailedBucket => (FAULTS_12, 2),
        ClaimReusesToken => (FAULTS, 1),
        EventSkipsKeyClaim => (OPS, 3),
        TakeoverLiveLease => (FAULTS, 3),
        HeartbeatUnfenced => (MIX_24, 7),
        CancelIgnored => (CANCELS, 5),
        EditKeepsDroppedFires => (OPS, 5),
        DependencyNeverWaits => (OPS, 4),
        PauseNotEnforced => (OPS, 2),
        SettleDropsOwed => (MIX_24, 12),
        MaxRunsOffByOne => (OPS, 4),
        EventsNotNudged => (OPS, 3),
        SerializeNeverWaits => (FAULTS, 6),
        OutcomeDeadDropped => (OPS, 2),
        BatchSkipsRegistry => (FAULTS, 4),
        VerifyTracksNothing => (MIX_24, 11),
        DeletedJobRuns => (MIX_24, 11),
        CatchUpSkipsHeld => (OPS, 1),
        ResourceLimitOffByOne => (MIX_24, 2),
        TenantGateOffByOne => (MIX_24, 7),
    };
    Hunt { args, seed }
}

/// Mutants the simulator does not kill yet, each with why: run like the others, and the test
/// fails if one is killed (take it off this list) or if one not on it survives.
const SURVIVES_TODAY: &[(Mutant, &str)] = &[(
    Mutant::BatchSkipsRegistry,
    "two overlapping fireOnce batches from two scans need a tick race the seeds rarely reach (K6b)",
)];

/// What one `sim` run said: whether it broke an invariant, how many fires it left to a known
/// gap (docs/simulation.md, "Known gaps"), and the lines that say which.
struct Said {
    broke: bool,
    known_gaps: u64,
    text: String,
}

/// Runs `sim` on one seed of `args` with `mutant` (or none).
fn sim(mutant: Option<Mutant>, args: &[&str], seed: u64) -> Said {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim"));
    cmd.args(["--seed", &seed.to_string()]).args(args);
    if let Some(m) = mutant {
        cmd.args(["--mutant", m.name()]);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("sim could not start: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let said: Vec<&str> = text.lines().filter(|l| !l.starts_with('{')).collect();
    // `seed N: X executions, Y effects, K known-gap fires, ...`
    let known_gaps = said
        .iter()
        .find_map(|l| l.split(", ").find_map(|p| p.strip_suffix(" known-gap fires")?.parse().ok()))
        .unwrap_or(0);
    let broke = match out.status.code() {
        Some(0) => false,
        Some(1) => true,
        _ => panic!(
            "sim {mutant:?} seed {seed} {args:?} crashed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            said.join("\n")
        ),
    };
    let shown: Vec<&str> =
        said.iter().filter(|l| l.contains("VIOLATION") || l.starts_with("seed ")).take(4).copied().collect();
    Said { broke, known_gaps, text: shown.join("\n") }
}

/// One job of [`in_parallel`].
type Job<T> = Box<dyn FnOnce() -> T + Send>;

/// A mutant and, if it was killed, the seed that killed it and what broke.
type Hunted = (Mutant, Option<(u64, String)>);

/// Runs `jobs` on two threads (this machine has two cores; each `sim` is one thread).
fn in_parallel<T: Send + 'static>(jobs: Vec<Job<T>>) -> Vec<T> {
    let queue = Arc::new(Mutex::new(jobs.into_iter().enumerate().collect::<Vec<_>>()));
    let done = Arc::new(Mutex::new(BTreeMap::new()));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (queue, done) = (queue.clone(), done.clone());
            std::thread::spawn(move || loop {
                let Some((i, job)) = queue.lock().ok().and_then(|mut q| q.pop()) else { return };
                let r = job();
                if let Ok(mut d) = done.lock() {
                    d.insert(i, r);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a worker thread panicked");
    }
    let done = Arc::try_unwrap(done).ok().expect("threads joined").into_inner().expect("not poisoned");
    done.into_values().collect()
}

#[test]
fn the_simulator_kills_every_planted_bug() {
    if std::env::var("SUNDIAL_EMULATOR").is_ok_and(|v| v == "moto") {
        eprintln!("the planted bugs ran in the MiniStack pass");
        return;
    }
    if !sundial_mutants::COMPILED {
        eprintln!("this build carries no planted bugs: `cargo test -p sundial-sim --features mutants --test mutants` runs them");
        return;
    }
    // Every shape and seed a hunt uses is clean unmutated: a kill must be the mutant's doing. A
    // kill is a broken invariant, or fires left to a known gap where the unmutated run left none.
    let pairs: Vec<(&'static [&'static str], u64)> = Mutant::ALL
        .into_iter()
        .map(hunt)
        .map(|h| (h.args, h.seed))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let base: Vec<Job<Said>> =
        pairs.iter().map(|&(a, seed)| Box::new(move || sim(None, a, seed)) as Job<Said>).collect();
    let mut gaps = BTreeMap::new();
    for (pair, said) in pairs.into_iter().zip(in_parallel(base)) {
        assert!(
            !said.broke,
            "an unmutated run broke an invariant, so no kill would mean anything:\n{}",
            said.text
        );
        gaps.insert(pair, said.known_gaps);
    }
    let gaps = Arc::new(gaps);
    let jobs: Vec<Job<Hunted>> = Mutant::ALL
        .into_iter()
        .map(|m| {
            let gaps = gaps.clone();
            Box::new(move || {
                let h = hunt(m);
                let said = sim(Some(m), h.args, h.seed);
                // Known-gap fires count on a seed whose unmutated run has none: there, any is
                // the mutant's doing; where the unmutated run has some, a different count may
                // be only a different interleaving.
                let base = gaps.get(&(h.args, h.seed)).copied().unwrap_or(0);
                let killed = said.broke || (base == 0 && said.known_gaps > 0);
                (m, killed.then_some((h.seed, said.text)))
            }) as Job<Hunted>
        })
        .collect();
    let results = in_parallel(jobs);
    let expected: BTreeMap<Mutant, &str> = SURVIVES_TODAY.iter().copied().collect();
    let (mut survived, mut now_killed) = (Vec::new(), Vec::new());
    for (m, kill) in &results {
        match (kill, expected.get(m)) {
            (Some((seed, said)), None) => println!("killed {} on seed {seed}:\n{said}\n", m.name()),
            (Some(_), Some(_)) => now_killed.push(m.name()),
            (None, Some(why)) => println!("survives (known): {}: {why}", m.name()),
            (None, None) => survived.push(m.name()),
        }
    }
    let killed = results.iter().filter(|(_, k)| k.is_some()).count();
    println!("{killed} of {} planted bugs killed", results.len());
    assert!(survived.is_empty(), "planted bugs the simulator did not kill: {survived:?}");
    assert!(now_killed.is_empty(), "killed now, take them off SURVIVES_TODAY: {now_killed:?}");
}
