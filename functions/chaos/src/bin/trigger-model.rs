//! `trigger-model`: explores every case of the trigger-plane model (the fixed protocol on each
//! instance, and each broken variant on its own) and prints one line per case; `--all-faults`
//! also explores the instance with every fault at once (about 5.9 million states: build with
//! `--release`). Exits non-zero if the fixed protocol breaks a property or a broken variant
//! goes uncaught.
use clap::Parser;
use sundial_chaos::trigger_model::{cases, explore, extended_bounds, report_line, Flaw};

/// Exhaustive check of the trigger plane for small instances.
#[derive(Debug, Parser)]
struct Args {
    /// Also explore every fault at once (run it with `--release`).
    #[arg(long)]
    all_faults: bool,
}

fn main() {
    let a = Args::parse();
    let mut failed = false;
    let mut all = cases();
    if a.all_faults {
        all.push((Flaw::None, extended_bounds()));
    }
    for (flaw, b) in all {
        let e = explore(&b, flaw);
        println!("{}", report_line(&b, flaw, &e));
        let broken = e.safety.is_some() || e.liveness.is_some();
        failed |= if flaw == Flaw::None { broken } else { !broken };
    }
    if failed {
        eprintln!("the fixed protocol broke a property, or a broken variant went uncaught");
        std::process::exit(1);
    }
}
