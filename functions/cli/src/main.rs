//! `sundial`: the command-line tool.
//!
//! Subcommands:
//! - `preview`: print the next fires of a schedule expression (pure, no AWS).
//! - `provision`: create Sundial's tables and queues on the endpoint in `AWS_ENDPOINT_URL`.
//! - `health`: check that the emulator answers and the tables and queues exist.

mod preview;
mod provision;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "sundial", version, about = "Sundial: a correctness-first distributed job scheduler")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the next fires of a schedule as RFC 3339 UTC instants, one per line.
    Preview(preview::PreviewArgs),
    /// Create tables, indexes and per-pool queues (with DLQs) on the configured endpoint.
    Provision(provision::ProvisionArgs),
    /// Check the emulator answers and that the tables and queues exist; prints one health line.
    Health(provision::ProvisionArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Preview(args) => preview::run(args),
        Command::Provision(args) => provision::run(args, false).await,
        Command::Health(args) => provision::run(args, true).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
