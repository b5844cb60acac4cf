//! Every DynamoDB key format in one place. [`KEY_FORMATS`] lists their shapes, and a test fails
//! when a key function here has no shape there or a shape is missing from the README's
//! access-pattern table ("Data model: access patterns").
//!
//! Why the shapes:
//! - Every job and execution key starts with `T#{tenant}#`: the API builds keys from the
//!   tenant of the caller's token, so one tenant can never address another's items.
//! - Each job is its own partition (`T#{tenant}#J#{job}`): a tenant with a million jobs that
//!   fire every minute must not funnel its advances into one 1,000-WCU partition.
//! - The due index is keyed by `{minute}#{shard}`: one minute's fires spread over `shards`
//!   partitions, never one hot "due now" key (docs/trigger.md, "Shards"). The shard is a stable
//!   hash of the job id modulo a logical shard count much larger than any number of scanners.
//! - Executions sort under their job by scheduled instant: `(job, scheduled_at)` *is* the
//!   primary key, so "one execution per `(job, scheduled_at)`" needs no extra index.
//! - A job's concurrency slot sits in its executions' partition (`SLOT`), so its policy reads
//!   and writes stay on the job's own partition; a tenant's running gate is one item per tenant
//!   (`T#{tenant}#RUN`), touched only by tenants with a running limit.
//! - Business calendars live in one partition per tenant (`T#{tenant}#CAL`): a tenant has a
//!   few dozen, edited a few times a year, and "list my calendars" is then one Query. The
//!   current definition (`C#{calendar}`) and the immutable version snapshots
//!   (`CV#{calendar}#{version}`) have distinct prefixes so the listing never reads snapshots.
//! - A child execution of a sharded or broadcast fire (`docs/children.md`) sorts right after
//!   its parent (`E#{scheduled ms}#C#{child}`): same partition, so "the children of this fire"
//!   is one Query (`begins_with E#{ms}#C#`), and the parent's key is a prefix of its children's.
//! - The operations log is one partition per tenant (`T#{tenant}#OPS`) sorted by time, so
//!   "what happened lately" is one Query.

pub use crate::children::ChildKey;

/// The shape of every key format, as the README's access-pattern table writes it (`{...}` is a
/// part filled in; parts never contain `#`).
pub const KEY_FORMATS: &[&str] = &[
    "T#{tenant}#J#{job}",
    "DEF",
    "DEF#B#{first ms}",
    "BATCHES",
    "EVT#{event key}",
    "EVTI#{ms}",
    "V#{version}",
    "T#{tenant}",
    "J#{job}",
    "T#{tenant}#OPS",
    "O#{ms}#{job}#{action}#{subject}#{nonce}",
    "SLOT",
    "OUTCOMES",
    "RUNS",
    "T#{tenant}#RUN",
    "T#{tenant}#RUN#{gate shard}",
    "T#{tenant}#QUOTA",
    "T#{tenant}#IDEM#{key}",
    "IDEM",
    "RUN",
    "{epoch minute}#{shard}",
    "A#{shard}",
    "E#{shard}",
    "D#{minute of day}#{shard}",
    "{next ms}#{tenant}#{job}",
    "W#{shard}",
    "WM",
    "E#{scheduled ms}",
    "E#{scheduled ms}#C#{child}",
    "T#{tenant}#S#{status}",
    "{scheduled ms}#{job}",
    "OPEN#{part}",
    "T#{tenant}#CAL",
    "C#{calendar}",
    "CV#{calendar}#{version}",
    "RESOURCES",
    "L#{resource}",
    "R#{resource}#RUN",
    "R#{resource}#RUN#{gate shard}",
];

/// Partitions of the `open` index (executions not yet final): the reconciler reads each with
/// one Query per run, so a run costs these Queries plus one read per execution that is due
/// for a look. A fixed, small count: the index holds only open executions.
pub const OPEN_PARTITIONS: u32 = 16;

/// Sort key of a job's current definition item.
pub const JOB_DEF_SK: &str = "DEF";
/// Sort key of a shard watermark item.
pub const WATERMARK_SK: &str = "WM";

/// Sort key of a `fireOnce` batch's cover (docs/simulation.md, K6): a batch keyed at
/// `first_ms`, at its first claim, marks its range on its job's partition, next to the definition
/// item (`DEF` is a prefix), so the one read a fire's first claim makes of its job
/// (`begins_with DEF`) also returns every range a batch covers.
pub fn batch_cover_sk(first_ms: i64) -> String {
    format!("{JOB_DEF_SK}#B#{first_ms:015}")
}

/// Sort key of a job's batch registry: its `fireOnce` batches in the order they settled, which
/// decides which of two overlapping batches stands for the instants they share (the earlier).
/// Outside `DEF` on purpose: a fire's first claim does not read it.
pub const BATCH_REGISTRY_SK: &str = "BATCHES";

/// Sort key of an event key's record on its job (`EVT#{key}`, under [`job_pk`]): the instant
/// the first event with this key was given (docs/dependencies.md, "Event triggers").
pub fn event_sk(key: &str) -> String {
    format!("EVT#{key}")
}

/// Sort key of the record saying which event key holds instant `ms` of a job (an event's own
/// instant, docs/dependencies.md "Event triggers"): `EVTI#{ms}`, never an `EVT#` prefix.
pub fn event_instant_sk(ms: i64) -> String {
    format!("EVTI#{ms}")
}

pub use sundial_schedule::id::{validate_id, KeyError};
pub use sundial_schedule::minute::{minute_of, minute_of_day, minute_start};

/// Partition key of a job (definition + version snapshots) and of its executions.
pub fn job_pk(tenant: &str, job_id: &str) -> String {
    format!("T#{tenant}#J#{job_id}")
}

/// The prefix of every definition snapshot's sort key (a job's versions, in order).
pub const JOB_VERSION_SK_PREFIX: &str = "V#";

/// Sort key of an immutable definition snapshot.
pub fn job_version_sk(version: u64) -> String {
    format!("{JOB_VERSION_SK_PREFIX}{version:010}")
}

/// `by_tenant` index partition key.
pub fn tenant_pk(tenant: &str) -> String {
    format!("T#{tenant}")
}

/// `by_tenant` index sort key of a job.
pub fn tenant_job_sk(job_id: &str) -> String {
    format!("J#{job_id}")
}

/// The job id of a `by_tenant` index sort key ([`tenant_job_sk`]).
pub fn job_of_tenant_sk(sk: &str) -> Option<&str> {
    sk.strip_prefix("J#")
}

/// Partition key of the tenant's operations audit log (in the jobs table): one partition per
/// tenant, so "what happened lately" is one Query and no other tenant's entries share it.
pub fn ops_pk(tenant: &str) -> String {
    format!("T#{tenant}#OPS")
}

/// Prefix of every operations-log sort key.
pub const OPS_SK_PREFIX: &str = "O#";

/// Sort key of an operations-log entry: its time (ms, zero-padded, so a Query reads newest
/// first backwards), the job, the action, a subject (new version, execution id or range) and a
/// random nonce, so two entries in the same millisecond stay distinct.
pub fn ops_sk(at_ms: i64, job_id: &str, action: &str, subject: &str, nonce: u64) -> String {
    format!("{OPS_SK_PREFIX}{at_ms:015}#{job_id}#{action}#{subject}#{nonce:016x}")
}

/// Whether `sk` is an operations-log sort key (a cursor must be one).
pub fn is_ops_sk(sk: &str) -> bool {
    sk.starts_with(OPS_SK_PREFIX)
}

/// Sort key of a job's concurrency slot item (in the executions table, under the job's
/// partition key, next to its executions).
pub const JOB_SLOT_SK: &str = "SLOT";

/// Sort key of a job's outcome item (in the executions table, under the job's partition key):
/// its dead fires since the last success, who auto-paused it, who recovered it
/// (docs/outcomes.md).
pub const JOB_OUTCOMES_SK: &str = "OUTCOMES";

/// Sort key of a job's run-count item (in the executions table, under the job's partition key):
/// how many scheduled fires the trigger created for a job with `maxRuns` (docs/schedule.md).
pub const JOB_RUNS_SK: &str = "RUNS";

/// Partition key of an Idempotency-Key record ([`crate::store::idem`]; the key is any visible
/// ASCII, up to 255 characters).
pub fn idempotency_pk(tenant: &str, key: &str) -> String {
    format!("T#{tenant}#IDEM#{key}")
}

/// Sort key of an Idempotency-Key record.
pub const IDEMPOTENCY_SK: &str = "IDEM";

/// Partition key of a tenant's quota counters (in the jobs table; [`crate::store::quota`]).
pub fn tenant_quota_pk(tenant: &str) -> String {
    format!("T#{tenant}#QUOTA")
}

/// Partition key of a tenant's running gate (in the executions table): shard 0 of it. A tenant
/// with a large limit has its gate split over several items ([`tenant_running_shard_pk`]).
pub fn tenant_running_pk(tenant: &str) -> String {
    format!("T#{tenant}#RUN")
}

/// Partition key of shard `shard` of a tenant's running gate: shard 0 is
/// [`tenant_running_pk`] (the single gate of small limits), the others `T#{tenant}#RUN#{shard}`,
/// each its own partition, so one busy tenant's claims and finishes spread over several.
pub fn tenant_running_shard_pk(tenant: &str, shard: u32) -> String {
    if shard == 0 {
        tenant_running_pk(tenant)
    } else {
        format!("T#{tenant}#RUN#{shard}")
    }
}

/// Sort key of a tenant's running gate.
pub const TENANT_RUNNING_SK: &str = "RUN";

/// The key of one entry in a leased gate (a tenant's running gate, a resource's holder gate):
/// the holder's execution id (relative in a tenant's gate, global in a resource's) and the
/// admission that took it, `{execution}#{admission}`. Keyed by the admission, not the
/// execution alone, so an admission that fails (a duplicate delivery, a takeover whose claim
/// loses) gives back only what it took, never a live holder's entry of the same execution.
pub fn gate_entry(execution: &str, admission: &str) -> String {
    format!("{execution}#{admission}")
}

/// The execution of a gate entry ([`gate_entry`]); an entry without an admission part is the
/// execution id itself.
pub fn gate_entry_execution(entry: &str) -> &str {
    entry.split_once('#').map_or(entry, |(e, _)| e)
}

/// Partition key of the platform's resource limits (in the jobs table): one partition for all
/// of them, since they are few (one per guarded downstream), set by operators and listed in
/// one Query. Not under `T#`: a resource limit spans tenants (`docs/resources.md`).
pub const RESOURCES_PK: &str = "RESOURCES";

/// Sort key of a resource limit's definition under [`RESOURCES_PK`].
pub fn resource_limit_sk(resource: &str) -> String {
    format!("{RESOURCE_LIMIT_SK_PREFIX}{resource}")
}

/// Prefix of every resource-limit sort key (the listing's `begins_with`).
pub const RESOURCE_LIMIT_SK_PREFIX: &str = "L#";

/// Partition key of shard `shard` of a resource's holder gate (in the executions table, sort
/// key [`TENANT_RUNNING_SK`]): the same leased map as a tenant's running gate, but one per
/// resource for the whole platform, entries keyed by the global execution id (tenants share it)
/// and the admission ([`gate_entry`]).
pub fn resource_running_shard_pk(resource: &str, shard: u32) -> String {
    if shard == 0 {
        format!("R#{resource}#RUN")
    } else {
        format!("R#{resource}#RUN#{shard}")
    }
}

/// `due` index partition key of a time bucket: `{epoch minute}#{shard}`.
pub fn due_bucket(minute: i64, shard: u32) -> String {
    format!("{minute}#{shard:05}")
}

/// `due` index partition key of a shard's admission class: jobs just created, resumed or
/// edited. Scanned on every tick regardless of the watermark, because the tick queues ahead:
/// a job written into an already-scanned minute bucket would otherwise never be seen. The
/// first scan that dispatches the job moves it to its regular bucket (or the every class).
pub fn admission_bucket(shard: u32) -> String {
    format!("A#{shard:05}")
}

/// `due` index partition key of the "every bucket" class: jobs that fire at least once a minute
/// stay here and are never moved between buckets (their trigger position is the shard
/// watermark), which saves the index delete + put of an advance on every fire.
pub fn every_bucket(shard: u32) -> String {
    format!("E#{shard:05}")
}

/// `due` index partition key of the daily class: jobs that fire at most once a day and always
/// in the same UTC minute of the day (`minute_of_day`, 0..1440), like most business jobs
/// (`0 0 9 * * MON-FRI` in one zone). They stay here from fire to fire (position: the shard
/// watermark), so a fire costs no advance; the tick reads the partition of each minute it walks.
pub fn daily_bucket(minute_of_day: u32, shard: u32) -> String {
    format!("D#{minute_of_day:04}#{shard:05}")
}

/// `due` index sort key: next fire (ms, zero-padded so it sorts) then the job's partition key.
pub fn due_sk(next_fire_ms: i64, tenant: &str, job_id: &str) -> String {
    format!("{next_fire_ms:015}#{tenant}#{job_id}")
}

/// Partition key of a shard's watermark item (in the jobs table).
pub fn watermark_pk(shard: u32) -> String {
    format!("W#{shard:05}")
}

/// Whether `pk` is a shard watermark's partition key ([`watermark_pk`]).
pub fn is_watermark_pk(pk: &str) -> bool {
    pk.starts_with("W#")
}

/// Whether `pk` is the first item of a running gate (a tenant's, [`tenant_running_pk`], or a
/// resource's, [`resource_running_shard_pk`] of shard 0): the metering classes both as the
/// tenant gate's cost.
pub fn is_gate_pk(pk: &str) -> bool {
    pk.ends_with("#RUN")
}

/// The logical shard of a job: FNV-1a 64 of the tenant and job id, modulo `shards`. Stable
/// across processes and releases (never `std`'s randomly keyed hasher).
pub fn shard_of(tenant: &str, job_id: &str, shards: u32) -> u32 {
    let h = sundial_hash::Fnv1a::new().write(tenant.as_bytes()).write(b"/").write(job_id.as_bytes());
    (h.finish() % u64::from(shards.max(1))) as u32
}

/// Prefix of every execution sort key under its job (a Query by job is `begins_with` it).
pub const EXEC_SK_PREFIX: &str = "E#";

/// The largest scheduled instant an execution sort key holds (15 digits of ms, year 33658).
pub const MAX_SCHEDULED_MS: i64 = 999_999_999_999_999;

/// Sort key of an execution under its job: the scheduled instant in ms, zero-padded.
pub fn exec_sk(scheduled_ms: i64) -> String {
    format!("{EXEC_SK_PREFIX}{scheduled_ms:015}")
}

/// The scheduled instant (ms) of an execution sort key (`None` for a child's, see
/// [`parse_any_exec_sk`]).
pub fn parse_exec_sk(sk: &str) -> Option<i64> {
    sk.strip_prefix(EXEC_SK_PREFIX)?.parse().ok()
}

/// Sort key of a child execution: its parent's ([`exec_sk`]), `#C#`, the child's key part
/// ([`ChildKey::sort_part`]: shards zero-padded, so children list in index order).
pub fn exec_child_sk(scheduled_ms: i64, child: &ChildKey) -> String {
    format!("{}#C#{}", exec_sk(scheduled_ms), child.sort_part())
}

/// The prefix every child sort key of the parent at `scheduled_ms` starts with.
pub fn children_sk_prefix(scheduled_ms: i64) -> String {
    format!("{}#C#", exec_sk(scheduled_ms))
}

/// (scheduled ms, child) of any execution sort key, a parent's or a child's.
pub fn parse_any_exec_sk(sk: &str) -> Option<(i64, Option<ChildKey>)> {
    match sk.split_once("#C#") {
        None => parse_exec_sk(sk).map(|ms| (ms, None)),
        Some((parent, part)) => Some((parse_exec_sk(parent)?, Some(ChildKey::parse(part)?))),
    }
}

/// The id of a child execution: its parent's id (tenant-relative or global), `.`, the child's
/// tag (`nightly@1764469800000.s3`); the parent's id itself when `child` is `None`. Distinct
/// per child, so each child is its own idempotency key.
pub fn child_execution_id(parent_id: &str, child: Option<&ChildKey>) -> String {
    match child {
        None => parent_id.to_string(),
        Some(c) => format!("{parent_id}.{}", c.tag()),
    }
}

/// Splits an execution id that may name a child (`{job}@{ms}` or `{job}@{ms}.{child tag}`).
pub fn parse_execution_ref(id: &str) -> Result<(String, i64, Option<ChildKey>), KeyError> {
    match id.split_once('.') {
        None => parse_execution_id(id).map(|(j, ms)| (j, ms, None)),
        Some((parent, tag)) => {
            let child = ChildKey::parse(tag).ok_or_else(|| KeyError {
                field: "executionId",
                reason: format!("{id:?}: {tag:?} is not a child (s<index>, m-<member> or i-<item>)"),
            })?;
            parse_execution_id(parent).map(|(j, ms)| (j, ms, Some(child)))
        }
    }
}

/// The job id of a job partition key ([`job_pk`]).
pub fn job_of_pk(pk: &str) -> Option<&str> {
    pk.rsplit_once("#J#").map(|(_, job)| job)
}

/// The public execution id: `{job}@{scheduled ms}`. Deterministic from (job, scheduled_at), so a
/// repeated trigger computes the same id and handlers can use it as an idempotency key.
pub fn execution_id(job_id: &str, scheduled_ms: i64) -> String {
    format!("{job_id}@{scheduled_ms}")
}

/// The id an execution carries outside the system (`{tenant}:{job}@{scheduled ms}`): the
/// invocation's `executionId`, hence the `Idempotency-Key` header, the inbox key of the
/// idempotency crate and the FIFO deduplication id. It names the tenant, so two tenants' jobs
/// with one name firing at one instant never share an idempotency key.
pub fn global_execution_id(tenant: &str, job_id: &str, scheduled_ms: i64) -> String {
    format!("{tenant}:{job_id}@{scheduled_ms}")
}

/// Splits an execution id into (job, scheduled ms).
pub fn parse_execution_id(id: &str) -> Result<(String, i64), KeyError> {
    let bad =
        || KeyError { field: "executionId", reason: format!("{id:?} is not of the form <jobId>@<epoch ms>") };
    let (job, ms) = id.rsplit_once('@').ok_or_else(bad)?;
    validate_id("executionId", job).map_err(|_| bad())?;
    let ms: i64 = ms.parse().map_err(|_| bad())?;
    if ms < 0 {
        return Err(bad());
    }
    Ok((job.to_string(), ms))
}

/// `open` index partition key: partition `part` of [`OPEN_PARTITIONS`] (an execution's is
/// [`open_part`] of its job).
pub fn open_partition(part: u32) -> String {
    format!("OPEN#{part}")
}

/// The `open` partition of a job's executions (FNV-1a of `(tenant, job)`, like the shard).
pub fn open_part(tenant: &str, job_id: &str) -> u32 {
    shard_of(tenant, job_id, OPEN_PARTITIONS)
}

/// (tenant, job) of a job partition key ([`job_pk`]).
pub fn parse_job_pk(pk: &str) -> Option<(&str, &str)> {
    pk.strip_prefix("T#")?.split_once("#J#")
}

/// Partition key of a tenant's business calendars (current definitions and version snapshots).
pub fn calendar_pk(tenant: &str) -> String {
    format!("T#{tenant}#CAL")
}

/// Sort key of a calendar's current definition.
pub fn calendar_sk(calendar: &str) -> String {
    format!("C#{calendar}")
}

/// Prefix of every current-definition sort key of [`calendar_pk`] (the listing's `begins_with`).
pub const CALENDAR_SK_PREFIX: &str = "C#";

/// Sort key of an immutable calendar version snapshot (zero-padded: versions sort in order).
pub fn calendar_version_sk(calendar: &str, version: u64) -> String {
    format!("CV#{calendar}#{version:010}")
}

/// `attention` index partition key: a tenant's executions in one off-happy-path status.
pub fn attention_pk(tenant: &str, status: &str) -> String {
    format!("T#{tenant}#S#{status}")
}

/// `attention` index sort key.
pub fn attention_sk(scheduled_ms: i64, job_id: &str) -> String {
    format!("{scheduled_ms:015}#{job_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execution_ids_round_trip_and_bad_ones_name_the_field() {
        let id = execution_id("job-1", 1_764_469_800_000);
        assert_eq!(id, "job-1@1764469800000");
        assert_eq!(parse_execution_id(&id).unwrap(), ("job-1".into(), 1_764_469_800_000));
        for bad in ["", "job", "job@", "@5", "jo b@5", "job@-1", "job@x"] {
            assert_eq!(parse_execution_id(bad).unwrap_err().field, "executionId", "{bad}");
        }
    }

    #[test]
    fn shards_are_stable_and_spread() {
        // Pinned values: a change here would move every job to another shard on upgrade.
        assert_eq!(shard_of("acme", "job-1", 4096), shard_of("acme", "job-1", 4096));
        // Golden values: the shard and `open` partition are persisted in keys, so a changed
        // hash would strand every stored job in a bucket no scan reads.
        assert_eq!(shard_of("acme", "job-1", 4096), 3697);
        assert_eq!(shard_of("t", "settle", 4096), 3787);
        assert_eq!(open_part("acme", "job-1"), 1);
        let mut counts = vec![0u32; 16];
        for i in 0..16_000 {
            counts[shard_of("t", &format!("job-{i}"), 16) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
    }

    #[test]
    fn keys_sort_by_time() {
        assert!(exec_sk(999) < exec_sk(1_000));
        assert!(due_sk(5, "t", "b") < due_sk(10, "t", "a"));
        assert_eq!(due_bucket(29_441_160, 7), "29441160#00007");
        assert_eq!(minute_of(minute_start(29_441_160)), 29_441_160);
    }

    #[test]
    fn the_operations_log_is_one_partition_per_tenant_sorted_by_time() {
        assert_eq!(ops_pk("acme"), "T#acme#OPS");
        assert!(ops_sk(1, "j", "pause", "v2", 7) < ops_sk(2, "a", "create", "v1", 0));
        assert!(is_ops_sk(&ops_sk(1, "j", "pause", "", 7)));
    }

    /// Every key function and constant of this module with a sample, by name.
    fn samples() -> Vec<(&'static str, String)> {
        let ms = 1_764_469_800_000;
        vec![
            ("job_pk", job_pk("acme", "nightly")),
            ("JOB_DEF_SK", JOB_DEF_SK.into()),
            ("batch_cover_sk", batch_cover_sk(ms)),
            ("BATCH_REGISTRY_SK", BATCH_REGISTRY_SK.into()),
            ("event_sk", event_sk("file-2026-12-01.csv")),
            ("event_instant_sk", event_instant_sk(1_764_579_600_001)),
            ("job_version_sk", job_version_sk(3)),
            ("tenant_pk", tenant_pk("acme")),
            ("tenant_job_sk", tenant_job_sk("nightly")),
            ("ops_pk", ops_pk("acme")),
            ("ops_sk", ops_sk(ms, "nightly", "pause", "v4", 0xfeed)),
            ("JOB_SLOT_SK", JOB_SLOT_SK.into()),
            ("JOB_OUTCOMES_SK", JOB_OUTCOMES_SK.into()),
            ("JOB_RUNS_SK", JOB_RUNS_SK.into()),
            ("tenant_running_pk", tenant_running_pk("acme")),
            ("tenant_quota_pk", tenant_quota_pk("acme")),
            ("idempotency_pk", idempotency_pk("acme", "k-1")),
            ("IDEMPOTENCY_SK", IDEMPOTENCY_SK.to_string()),
            ("tenant_running_shard_pk", tenant_running_shard_pk("acme", 3)),
            ("daily_bucket", daily_bucket(540, 7)),
            ("TENANT_RUNNING_SK", TENANT_RUNNING_SK.into()),
            ("due_bucket", due_bucket(29_441_160, 7)),
            ("admission_bucket", admission_bucket(7)),
            ("every_bucket", every_bucket(7)),
            ("due_sk", due_sk(ms, "acme", "nightly")),
            ("watermark_pk", watermark_pk(7)),
            ("WATERMARK_SK", WATERMARK_SK.into()),
            ("exec_sk", exec_sk(ms)),
            ("exec_child_sk", exec_child_sk(ms, &ChildKey::Shard(3))),
            ("attention_pk", attention_pk("acme", "DEAD")),
            ("attention_sk", attention_sk(ms, "nightly")),
            ("open_partition", open_partition(7)),
            ("calendar_pk", calendar_pk("acme")),
            ("calendar_sk", calendar_sk("cn-holidays")),
            ("calendar_version_sk", calendar_version_sk("cn-holidays", 3)),
            ("RESOURCES_PK", RESOURCES_PK.into()),
            ("resource_limit_sk", resource_limit_sk("legacy-db")),
            ("resource_running_shard_pk", resource_running_shard_pk("legacy-db", 0)),
            ("resource_running_shard_pk", resource_running_shard_pk("legacy-db", 2)),
        ]
    }

    /// Public `-> String` functions and `&str` constants here that are not key formats.
    const NOT_KEY_FORMATS: &[&str] = &[
        "execution_id",             // the public execution id, not a key
        "global_execution_id",      // the id targets receive, not a key
        "OPS_SK_PREFIX",            // the start of `O#...`
        "EXEC_SK_PREFIX",           // the start of `E#{scheduled ms}`
        "CALENDAR_SK_PREFIX",       // the start of `C#{calendar}`
        "RESOURCE_LIMIT_SK_PREFIX", // the start of `L#{resource}`
        "children_sk_prefix",       // the start of `E#{scheduled ms}#C#{child}`
        "child_execution_id",       // the public id of a child, not a key
        "JOB_VERSION_SK_PREFIX",    // the start of `V#{version}`
        "gate_entry",               // a map key inside a gate item, not a table key
    ];

    /// Names of this module's `pub fn ... -> String` and `pub const ...: &str` (outside tests).
    fn key_items_in_source() -> Vec<String> {
        let src = include_str!("keys.rs");
        let src = &src[..src.find("#[cfg(test)]").unwrap_or(src.len())];
        let mut names = Vec::new();
        for (i, _) in src.match_indices("pub fn ") {
            let sig = &src[i..i + src[i..].find('{').unwrap_or(0)];
            if sig.contains("-> String") {
                names.push(sig["pub fn ".len()..sig.find('(').unwrap_or(sig.len())].to_string());
            }
        }
        for line in src.lines().filter(|l| l.starts_with("pub const ") && l.contains(": &str =")) {
            names.push(line["pub const ".len()..line.find(':').unwrap_or(line.len())].to_string());
        }
        names
    }

    fn has_shape(key: &str, shape: &str) -> bool {
        let (k, s): (Vec<&str>, Vec<&str>) = (key.split('#').collect(), shape.split('#').collect());
        k.len() == s.len()
            && k.iter().zip(&s).all(|(k, s)| if s.starts_with('{') { !k.is_empty() } else { k == s })
    }

    #[test]
    fn every_key_format_has_a_documented_shape() {
        let samples = samples();
        for name in key_items_in_source() {
            assert!(
                NOT_KEY_FORMATS.contains(&name.as_str()) || samples.iter().any(|(n, _)| *n == name),
                "keys::{name} is not in samples(): add it there and its shape to KEY_FORMATS and the README"
            );
        }
        for (name, key) in &samples {
            assert!(
                KEY_FORMATS.iter().any(|f| has_shape(key, f)),
                "{name} = {key:?} has no shape in KEY_FORMATS"
            );
        }
        for f in KEY_FORMATS {
            assert!(samples.iter().any(|(_, k)| has_shape(k, f)), "{f} is the shape of no key");
        }
    }

    #[test]
    fn the_readme_access_pattern_table_lists_every_key_format_and_index() {
        let readme = include_str!("../../../README.md");
        let start = readme.find("## Data model: access patterns").expect("the README has the section");
        let section = &readme[start..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
        let spans: Vec<&str> = section.split('`').skip(1).step_by(2).collect();
        for f in KEY_FORMATS {
            assert!(spans.contains(f), "the README's access-pattern table does not list `{f}`");
        }
        for ix in crate::resources::Resources::get().tables.values().flat_map(|t| &t.indexes) {
            assert!(
                spans.contains(&ix.name.as_str()),
                "the README's access-pattern table does not list `{}`",
                ix.name
            );
        }
    }

    #[test]
    fn ids_with_separators_are_refused() {
        for bad in ["a#b", "a@b", "", "x".repeat(65).as_str(), "a b", "ä"] {
            assert!(validate_id("jobId", bad).is_err(), "{bad}");
        }
        assert!(validate_id("jobId", "Nightly_Settlement-2").is_ok());
    }
}
