//! The worker processes: children of the `chaos` binary itself (`chaos worker`), started with
//! the run's environment, killed and restarted, stopped past their lease and resumed.

use super::config::RunConfig;
use super::outcome::FleetStats;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Duration;
use tokio::process::{Child, Command};

struct WorkerProc {
    child: Child,
    gen: u32,
}

/// The worker processes.
pub(super) struct Fleet {
    exe: PathBuf,
    env: Vec<(String, String)>,
    dir: PathBuf,
    skew_ms: i64,
    procs: Vec<WorkerProc>,
    pub(super) stats: FleetStats,
}

fn signal(pid: u32, sig: &str) {
    // Only ever our own children, by pid.
    let _ = std::process::Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
}

impl Fleet {
    /// No process yet: worker 0 gets the run's clock skew, every worker `env`, logs in `dir`.
    pub(super) fn new(rc: &RunConfig, env: Vec<(String, String)>, dir: PathBuf) -> Fleet {
        Fleet {
            exe: rc.worker_exe.clone(),
            env,
            dir,
            skew_ms: rc.skew_ms,
            procs: Vec::new(),
            stats: FleetStats::default(),
        }
    }

    fn spawn(&mut self, index: usize, gen: u32) -> Result<Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("worker-{index}.log")))
            .context("opening a worker log")?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("worker")
            .envs(self.env.iter().cloned())
            .env("SUNDIAL_WORKER_ID", format!("w{index}-g{gen}"))
            .env(crate::worker::SKEW_MS, if index == 0 { self.skew_ms.to_string() } else { "0".into() })
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        self.stats.starts += 1;
        cmd.spawn().context("starting a chaos worker")
    }

    pub(super) fn start(&mut self, n: usize) -> Result<()> {
        for i in 0..n {
            let child = self.spawn(i, 0)?;
            self.procs.push(WorkerProc { child, gen: 0 });
        }
        Ok(())
    }

    pub(super) async fn kill_and_restart(&mut self, i: usize, down: Duration) -> Result<()> {
        let p = &mut self.procs[i];
        let _ = p.child.start_kill();
        let _ = p.child.wait().await;
        self.stats.kills += 1;
        tokio::time::sleep(down).await;
        let gen = self.procs[i].gen + 1;
        let child = self.spawn(i, gen)?;
        self.procs[i] = WorkerProc { child, gen };
        Ok(())
    }

    pub(super) async fn pause(&mut self, i: usize, for_: Duration) {
        let Some(pid) = self.procs[i].child.id() else { return };
        signal(pid, "STOP");
        self.stats.pauses += 1;
        tokio::time::sleep(for_).await;
        signal(pid, "CONT");
    }

    pub(super) async fn stop_all(&mut self) {
        for p in &mut self.procs {
            if let Some(pid) = p.child.id() {
                signal(pid, "CONT");
                signal(pid, "TERM");
            }
        }
        for p in &mut self.procs {
            if tokio::time::timeout(Duration::from_secs(8), p.child.wait()).await.is_err() {
                let _ = p.child.start_kill();
                let _ = p.child.wait().await;
            }
        }
    }
}
