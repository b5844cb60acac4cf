//! `sundial`: the command-line tool.
//!
//! Subcommands:
//! - `preview`: print the next fires of a schedule expression (pure, no AWS).
//! - `capacity`: the capacity model for a load, fed by the benches' measured costs (pure).
//! - `provision`: create Sundial's tables and queues on the endpoint in `AWS_ENDPOINT_URL`.
//! - `health`: check that the emulator answers and the tables and queues exist.
//! - `dev`: the local run: emulator, tables, tick, workers, API and a demo job ([`dev`]).
//! - `calendars`: business calendars (put, get, list, delete, versions) through the API
//!   ([`calendars`]).
//! - `jobs`, `executions`, `dlq`, `ops`: the API from the command line ([`api_cmds`]), against
//!   `--api-url` (the local run's, or the deployed one with `--auth jwt --token` or
//!   `--auth iam`) through the `sundial-client` crate; `--output json` for scripts.
//! - `tz-report`: jobs whose next fires move under the API's compiled tz database release
//!   ([`tz_report`]).
//! - `completions`: a shell completion script (bash, zsh, fish, elvish, powershell).

mod api_cmds;
mod calendars;
mod capacity;
mod client;
mod dev;
mod event_source;
mod local_aws;
mod preview;
mod provision;
mod resource_limits;
mod tz_report;

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
    /// The capacity model: tables, hot partitions, Lambda, SQS and monthly cost for a load,
    /// from the costs the benches measured.
    Capacity(capacity::CapacityArgs),
    /// Create tables, indexes and per-pool queues (with DLQs) on the configured endpoint.
    Provision(provision::ProvisionArgs),
    /// Check the emulator answers and that the tables and queues exist; prints one health line.
    Health(provision::ProvisionArgs),
    /// Run the whole system locally: emulator, tick, workers, API and a demo job.
    Dev {
        #[command(flatten)]
        args: dev::DevArgs,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// Create, list, show, edit, pause, resume, delete, trigger and backfill jobs.
    Jobs {
        #[command(subcommand)]
        cmd: api_cmds::JobsCmd,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// Create, show, list, delete business calendars and read their versions.
    Calendars {
        #[command(subcommand)]
        cmd: calendars::CalendarsCmd,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// Set, show, list and delete platform-wide resource limits (docs/resources.md).
    Resources {
        #[command(subcommand)]
        cmd: resource_limits::ResourcesCmd,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// Every worker pool's queues: waiting, in flight, delayed, dead letters, saturation
    /// (operators only).
    Pools {
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// Put events on a tenant's event queue (the local run prints its own; docs/events.md).
    Events {
        #[command(subcommand)]
        cmd: event_source::EventsCmd,
    },
    /// List, show (with the timeline) and cancel executions.
    Executions {
        #[command(subcommand)]
        cmd: api_cmds::ExecCmd,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// List and replay dead executions.
    Dlq {
        #[command(subcommand)]
        cmd: api_cmds::DlqCmd,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// The operations audit log.
    Ops {
        #[command(subcommand)]
        cmd: api_cmds::OpsCmd,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// The tzdb upgrade report: jobs whose next fires would change under the API's compiled tz
    /// database release, fire by fire (old and new instant, local time). Run it after
    /// upgrading chrono-tz; see docs/schedule.md, "tz database upgrades".
    TzReport {
        #[command(flatten)]
        args: tz_report::TzReportArgs,
        #[command(flatten)]
        api: client::ApiArgs,
    },
    /// Print a shell completion script: `sundial completions bash > ~/.local/share/bash-completion/completions/sundial`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    // The local run's calls are recorded too when SUNDIAL_IAM_RECORD is set (the tests set it).
    sundial_testkit::access::install();
    let cli = Cli::parse();
    if matches!(cli.command, Command::Dev { .. }) {
        // The local run prints one line per execution for a person to read: logs stay at WARN
        // unless asked for. The default is set before any thread exists (the runtime is built
        // below), then logging starts the same way as in every deployed binary.
        if std::env::var_os("AWS_LAMBDA_LOG_LEVEL").is_none() && std::env::var_os("RUST_LOG").is_none() {
            std::env::set_var("RUST_LOG", "warn");
        }
        dev::init_logging();
    }
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt.block_on(run(cli)),
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Preview(args) => preview::run(args),
        Command::Capacity(args) => capacity::run(args),
        Command::Provision(args) => provision::run(args, false).await,
        Command::Health(args) => provision::run(args, true).await,
        Command::Dev { args, api } => dev::run(args, &api).await,
        Command::Jobs { cmd, api } => api_cmds::jobs(&api, cmd).await,
        Command::Calendars { cmd, api } => calendars::calendars(&api, cmd).await,
        Command::Resources { cmd, api } => resource_limits::resources(&api, cmd).await,
        Command::Pools { api } => resource_limits::pools(&api).await,
        Command::Events { cmd } => event_source::run(cmd).await,
        Command::Executions { cmd, api } => api_cmds::executions(&api, cmd).await,
        Command::Dlq { cmd, api } => api_cmds::dlq(&api, cmd).await,
        Command::Ops { cmd, api } => api_cmds::ops(&api, cmd).await,
        Command::TzReport { args, api } => match tz_report::run(&api, args).await {
            Ok(true) => return ExitCode::from(tz_report::CHANGED_EXIT),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        },
        Command::Completions { shell } => {
            use clap::CommandFactory;
            use std::io::Write;
            // Into a buffer first: `generate` panics when stdout is closed early (`| head`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "sundial", &mut script);
            std::io::stdout().write_all(&script).map_err(anyhow::Error::from)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use std::collections::BTreeSet;

    fn env_names(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        for a in cmd.get_arguments() {
            if let Some(name) = a.get_env() {
                out.insert(name.to_string_lossy().into_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            env_names(sub, out);
        }
    }

    #[test]
    fn the_arguments_read_exactly_the_variables_resources_json_gives_them() {
        let mut read = BTreeSet::new();
        env_names(&Cli::command(), &mut read);
        let json: serde_json::Value =
            serde_json::from_str(sundial_model::resources::RESOURCES_JSON).unwrap_or_else(|e| panic!("{e}"));
        let declared: BTreeSet<String> = json["envLoaders"]["ApiArgs"]["names"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| json["env"][k.as_str().unwrap_or_default()].as_str().map(str::to_string))
            .collect();
        assert!(!declared.is_empty());
        assert_eq!(read, declared);
    }

    #[test]
    fn completions_cover_the_new_commands_and_flags() {
        let mut out = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut Cli::command(), "sundial", &mut out);
        let script = String::from_utf8_lossy(&out);
        for word in ["completions", "versions", "--auth", "--region", "--all", "--cursor"] {
            assert!(script.contains(word), "{word} missing from the bash completions");
        }
        Cli::command().debug_assert();
    }
}
