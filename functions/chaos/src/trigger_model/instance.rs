//! An instance's fixed part: the jobs (schedules as minute bit sets, misfire policy, due
//! class), the clock's horizon, the shards, the catch-up budget and the fault budgets.

/// What happens to fires late by more than the job's threshold when they are planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Every missed fire gets an execution (drawing on the catch-up budget).
    FireAll,
    /// Missed fires get none; on-time fires are planned as usual.
    Skip,
}

/// Where a job's due entry lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// No due entry (paused, or exhausted).
    Off,
    /// The shard's every-minute partition `E#`.
    Every,
    /// The shard's admission partition `A#`.
    Admission,
    /// The due bucket of this minute.
    Bucket(u8),
}

/// A partition of a shard read at the start of its scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Partition {
    /// `A#{shard}`.
    Admission,
    /// `E#{shard}`.
    Every,
}

/// One job of an instance (its fixed part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSpec {
    /// Its name (the same name may appear for two tenants).
    pub name: char,
    /// Its tenant.
    pub tenant: u8,
    /// Its shard.
    pub shard: u8,
    /// Fire minutes of definition v1 (bit m = fires at minute m).
    pub v1: u16,
    /// Fire minutes of definition v2 (after an edit).
    pub v2: u16,
    /// Misfire policy.
    pub policy: Policy,
    /// Misfire threshold in minutes: a fire is missed when `fire + threshold < now`.
    pub threshold: u8,
    /// Enabled at the start (otherwise paused, with no due entry).
    pub enabled: bool,
    /// Its due class at the start (`Bucket` takes the minute of its first fire).
    pub start: Class,
    /// A job whose dispatch always fails (a removed pool): it fails its shard's scan.
    pub poison: bool,
}

impl JobSpec {
    /// An enabled `FireAll` job with threshold 0, in bucket class, tenant 0, shard 0.
    pub const fn new(name: char, v1: u16) -> JobSpec {
        JobSpec {
            name,
            tenant: 0,
            shard: 0,
            v1,
            v2: v1,
            policy: Policy::FireAll,
            threshold: 0,
            enabled: true,
            start: Class::Bucket(0),
            poison: false,
        }
    }

    pub(super) fn mask(&self, def: u8) -> u16 {
        if def == 2 {
            self.v2
        } else {
            self.v1
        }
    }

    pub(super) fn label(&self) -> String {
        format!("{}/t{}", self.name, self.tenant)
    }
}

/// The bit set of the minutes `0..n`.
pub const fn every(n: u8) -> u16 {
    ((1u32 << n) - 1) as u16
}

/// The size of one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// A short name for reports.
    pub name: &'static str,
    /// The last minute of the clock; fires lie in `0..horizon`.
    pub horizon: u8,
    /// Shards (each job names one below this).
    pub shards: u8,
    /// Most buckets one shard's walk reads per tick.
    pub max_buckets: u8,
    /// Catch-up budget: missed-fire executions per tenant per tick.
    pub per_tenant: u8,
    /// The jobs.
    pub jobs: Vec<JobSpec>,
    /// API pauses in one behaviour.
    pub pauses: u8,
    /// API resumes.
    pub resumes: u8,
    /// API edits (to definition v2).
    pub edits: u8,
    /// Messages lost in the queue.
    pub lose: u8,
    /// Messages duplicated.
    pub duplicate: u8,
    /// Sends that fail after the put.
    pub send_fails: u8,
    /// Ticks that die between two scan steps.
    pub tick_crashes: u8,
    /// Worker waits (concurrency policy or tenant limit): the message goes back to the queue.
    pub waits: u8,
    /// Worker panics.
    pub panics: u8,
    /// Receives after which the queue moves a message to the DLQ (flawed waits only).
    pub max_receives: u8,
    /// Claim and finish as separate steps of two workers (leases; scenario 10).
    pub two_workers: bool,
}

impl Bounds {
    /// An instance with these jobs and no API actions or faults.
    pub fn quiet(name: &'static str, horizon: u8, jobs: Vec<JobSpec>) -> Bounds {
        Bounds {
            name,
            horizon,
            shards: 1,
            max_buckets: 3,
            per_tenant: 1,
            jobs,
            pauses: 0,
            resumes: 0,
            edits: 0,
            lose: 0,
            duplicate: 0,
            send_fails: 0,
            tick_crashes: 0,
            waits: 0,
            panics: 0,
            max_receives: 2,
            two_workers: false,
        }
    }
}
