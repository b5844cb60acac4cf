//! The planted-bug catalog (docs/simulation.md, "Planted bugs"): every mutant of
//! `sundial_mutants::Mutant` is switched on, one per process, in a build that carries them
//! (`cargo test -p sundial-sim --features mutants --test mutants`), and the simulator must kill
//! it: some seed of the shape listed for it breaks an invariant. An unmutated run of each shape
//! and seed is clean first, so a kill is the mutant's doing.
//!
//! The simulator needs no emulator: the catalog runs in the MiniStack pass only.
#![cfg(feature = "mutants")]

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use sundial_mutants::Mutant;

/// How a mutant is hunted: the shape's `sim` options and the seeds tried, in order, until one
/// kills it.
struct Hunt {
    args: &'static [&'static str],
    seeds: &'static [u64],
}

/// CI's faults-only shape, smaller: 12 jobs firing for 40 minutes, every fault (zombies, kills,
/// network windows, outages), no operator actions.
const FAULTS: &[&str] = &["--jobs", "12", "--minutes", "40", "--ops-per-hour", "0"];
/// Operator actions (pause, resume, edit, delete, trigger) without faults.
const OPS: &[&str] = &["--jobs", "12", "--minutes", "40", "--ops-per-hour", "30", "--no-faults"];

/// The hunt for `m`.
fn hunt(m: Mutant) -> Hunt {
    use Mutant::*;
    match m {
        PauseNotEnforced
        | DeletedJobRuns
        | EditKeepsDroppedFires
        | DependencyNeverWaits
        | EventsNotNudged
        | EventSkipsKeyClaim
        | MaxRunsOffByOne
        | SerializeNeverWaits => Hunt { args: OPS, seeds: &[12, 14, 16] },
        _ => Hunt { args: FAULTS, seeds: &[13, 11, 15] },
    }
}

/// Runs `sim` on one seed of `args` with `mutant` (or none): whether it broke an invariant,
/// and the lines that say which.
fn sim(mutant: Option<Mutant>, args: &[&str], seed: u64) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim"));
    cmd.args(["--seed", &seed.to_string()]).args(args);
    if let Some(m) = mutant {
        cmd.args(["--mutant", m.name()]);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("sim could not start: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let said: Vec<&str> = text.lines().filter(|l| !l.starts_with('{')).collect();
    match out.status.code() {
        Some(0) => (false, said.join("\n")),
        Some(1) => (
            true,
            said.iter().filter(|l| l.contains("VIOLATION")).take(6).copied().collect::<Vec<_>>().join("\n"),
        ),
        _ => panic!(
            "sim {mutant:?} seed {seed} {args:?} crashed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            said.join("\n")
        ),
    }
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
    // The shapes are clean unmutated, on the first seed of each (the one most kills come from).
    let shapes: Vec<&'static [&'static str]> = vec![FAULTS, OPS];
    let base: Vec<Job<(bool, String)>> = shapes
        .iter()
        .map(|a| {
            let (a, seed) = (*a, if *a == FAULTS { 13 } else { 12 });
            Box::new(move || sim(None, a, seed)) as Job<(bool, String)>
        })
        .collect();
    for (broke, said) in in_parallel(base) {
        assert!(!broke, "an unmutated run broke an invariant, so no kill would mean anything:\n{said}");
    }
    let jobs: Vec<Job<Hunted>> = Mutant::ALL
        .into_iter()
        .map(|m| {
            Box::new(move || {
                let h = hunt(m);
                for &seed in h.seeds {
                    let (killed, said) = sim(Some(m), h.args, seed);
                    if killed {
                        return (m, Some((seed, said)));
                    }
                }
                (m, None)
            }) as Job<Hunted>
        })
        .collect();
    let results = in_parallel(jobs);
    let mut survived = Vec::new();
    for (m, kill) in &results {
        match kill {
            Some((seed, said)) => println!("killed {} on seed {seed}:\n{said}\n", m.name()),
            None => survived.push(m.name()),
        }
    }
    println!("{} of {} planted bugs killed", results.len() - survived.len(), results.len());
    assert!(survived.is_empty(), "planted bugs the simulator did not kill: {survived:?}");
}
