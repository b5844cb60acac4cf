//! The measured per-fire request costs: what one fire of each trigger class spends, by item
//! kind, and which table each kind lives in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::validate::check_non_negative;

/// Kind of item a measured request unit was spent on; the keys of [`ClassCost`] maps.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "camelCase")]
pub enum ItemKind {
    /// An execution item (executions table): put, claim, finish.
    Execution,
    /// The sparse keys-only `open` GSI of the executions table.
    OpenIndex,
    /// The job item (jobs table), e.g. advancing its next fire.
    Job,
    /// The sparse `due` GSI of the jobs table (a key move is a delete plus a put).
    DueIndex,
    /// The per-shard watermark item; ignored per fire because it is modelled from `shards`.
    Watermark,
    /// The per-job slot item of FORBID jobs (claim and finish), in the executions table.
    Slot,
    /// The per-tenant running gate item `T#{tenant}#RUN`, in the executions table.
    TenantGate,
    /// Anything else the interceptor could not attribute; counted against the jobs table.
    Other,
}

/// The DynamoDB table an item kind lives in.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Table {
    /// Jobs table: jobs, the `due` index, watermarks, anything unattributed.
    Jobs,
    /// Executions table(s): executions, the `open` index, slots, tenant gates.
    Executions,
}

impl ItemKind {
    /// Every item kind, in the order used for validation messages.
    pub const ALL: [ItemKind; 8] = [
        ItemKind::Execution,
        ItemKind::OpenIndex,
        ItemKind::Job,
        ItemKind::DueIndex,
        ItemKind::Watermark,
        ItemKind::Slot,
        ItemKind::TenantGate,
        ItemKind::Other,
    ];

    /// The map key of this kind in [`ClassCost`] (`execution`, `openIndex`, ...).
    pub fn key(self) -> &'static str {
        match self {
            ItemKind::Execution => "execution",
            ItemKind::OpenIndex => "openIndex",
            ItemKind::Job => "job",
            ItemKind::DueIndex => "dueIndex",
            ItemKind::Watermark => "watermark",
            ItemKind::Slot => "slot",
            ItemKind::TenantGate => "tenantGate",
            ItemKind::Other => "other",
        }
    }

    /// The kind named by a map key, if it is one of the known keys.
    pub fn parse(key: &str) -> Option<ItemKind> {
        ItemKind::ALL.into_iter().find(|kind| kind.key() == key)
    }

    /// The kind a bench `writesByKind` / `readsByKind` key is attributed to: `execution`,
    /// `index:open`, `job`, `index:due`, `watermark`, `slot`, `tenantGate`; anything else
    /// (`other`, `query`, `index:attention`, `index:by_tenant`, ...) is [`ItemKind::Other`].
    pub fn from_bench_key(key: &str) -> ItemKind {
        match key {
            "execution" => ItemKind::Execution,
            "index:open" => ItemKind::OpenIndex,
            "job" => ItemKind::Job,
            "index:due" => ItemKind::DueIndex,
            "watermark" => ItemKind::Watermark,
            "slot" => ItemKind::Slot,
            "tenantGate" => ItemKind::TenantGate,
            _ => ItemKind::Other,
        }
    }

    /// The table whose capacity this kind consumes.
    pub fn table(self) -> Table {
        match self {
            ItemKind::Execution | ItemKind::OpenIndex | ItemKind::Slot | ItemKind::TenantGate => {
                Table::Executions
            }
            ItemKind::Job | ItemKind::DueIndex | ItemKind::Watermark | ItemKind::Other => Table::Jobs,
        }
    }
}

/// Measured request costs of one fire of one trigger class.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClassCost {
    /// Write request units per fire, keyed by [`ItemKind::key`].
    #[serde(default)]
    pub writes: BTreeMap<String, f64>,
    /// Read request units per fire, keyed by [`ItemKind::key`].
    #[serde(default)]
    pub reads: BTreeMap<String, f64>,
    /// SQS requests per fire (send, receive and delete, batched).
    pub sqs_requests: f64,
    /// Of [`Self::writes`], the units the tick spends the minute before the fire (its put of the
    /// execution, the bucket class's job advance and index entries), keyed like it; the rest is
    /// spent in the fire's own minute (claim, finish, slots, gates, the verification pass).
    /// Empty in documents that do not split them: everything then counts in the fire's minute.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ahead_writes: BTreeMap<String, f64>,
    /// Of [`Self::reads`], the units the tick spends the minute before the fire.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ahead_reads: BTreeMap<String, f64>,
    /// Measured Lambda invocations per fire. Informational only: the model always uses
    /// `1 / worker_batch_size` worker invocations per fire (the bench's ECS-style worker reports
    /// 0), and models tick and scan invocations from the tick period and `shards`.
    #[serde(default)]
    pub lambda_invokes: f64,
}

impl ClassCost {
    /// Write units per fire spent on `kind` (0 when not measured).
    pub fn write(&self, kind: ItemKind) -> f64 {
        self.writes.get(kind.key()).copied().unwrap_or(0.0)
    }

    /// Read units per fire spent on `kind` (0 when not measured).
    pub fn read(&self, kind: ItemKind) -> f64 {
        self.reads.get(kind.key()).copied().unwrap_or(0.0)
    }

    /// Of [`Self::write`], the units spent the minute before the fire.
    pub fn write_ahead(&self, kind: ItemKind) -> f64 {
        self.ahead_writes.get(kind.key()).copied().unwrap_or(0.0)
    }

    /// Of [`Self::read`], the units spent the minute before the fire.
    pub fn read_ahead(&self, kind: ItemKind) -> f64 {
        self.ahead_reads.get(kind.key()).copied().unwrap_or(0.0)
    }

    /// Checks that every key is a known item kind, every number is finite and non-negative, and
    /// no kind spends more ahead than in all.
    pub fn validate(&self, class: &str) -> Result<(), String> {
        check_map(class, "writes", &self.writes)?;
        check_map(class, "reads", &self.reads)?;
        check_map(class, "aheadWrites", &self.ahead_writes)?;
        check_map(class, "aheadReads", &self.ahead_reads)?;
        for (what, ahead, all) in [
            ("aheadWrites", &self.ahead_writes, &self.writes),
            ("aheadReads", &self.ahead_reads, &self.reads),
        ] {
            for (key, v) in ahead {
                let total = all.get(key).copied().unwrap_or(0.0);
                if *v > total + 1e-9 {
                    return Err(format!(
                        "{class}.{what}.{key}: {v} is more than all the fire's units ({total})"
                    ));
                }
            }
        }
        check_non_negative(&format!("{class}.sqsRequests"), self.sqs_requests)?;
        check_non_negative(&format!("{class}.lambdaInvokes"), self.lambda_invokes)
    }
}

/// Measured per-fire costs of the three trigger classes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Costs {
    /// Jobs firing at least once a minute (the `E#{shard}` class, never moved).
    pub every_minute: ClassCost,
    /// Jobs firing at most once a day in a fixed UTC minute (the `D#{minute of day}#{shard}`
    /// class, never moved).
    pub daily: ClassCost,
    /// Jobs moved from minute bucket to minute bucket (the `{minute}#{shard}` class).
    pub bucket: ClassCost,
}

impl Costs {
    /// Example costs in the shape the bench measures. Every-minute and daily: execution 3
    /// writes (put, claim, finish), no job or `due` writes (never moved); reads execution 1.5
    /// (claim read, verification read) and job 0.5. Bucket: execution 3, open index 2, job 1,
    /// due index 2 (delete + put of the GSI entry); reads execution 1, job 0.5. All three: slot 2
    /// and tenant gate 2 per fire that uses them (claim and finish; conditional, see the crate
    /// docs), 0.3 SQS requests, and `lambda_invokes` 0 as the bench's ECS-style worker reports
    /// (the model uses `1 / worker_batch_size`).
    pub fn example() -> Costs {
        let conditional = [(ItemKind::Slot, 2.0), (ItemKind::TenantGate, 2.0)];
        let unmoved = ClassCost {
            writes: units(&[&[(ItemKind::Execution, 3.0)][..], &conditional].concat()),
            reads: units(&[(ItemKind::Execution, 1.5), (ItemKind::Job, 0.5)]),
            sqs_requests: 0.3,
            ahead_writes: units(&[(ItemKind::Execution, 1.0)]),
            ahead_reads: BTreeMap::new(),
            lambda_invokes: 0.0,
        };
        let bucket = ClassCost {
            writes: units(
                &[
                    &[
                        (ItemKind::Execution, 3.0),
                        (ItemKind::OpenIndex, 2.0),
                        (ItemKind::Job, 1.0),
                        (ItemKind::DueIndex, 2.0),
                    ][..],
                    &conditional,
                ]
                .concat(),
            ),
            reads: units(&[(ItemKind::Execution, 1.0), (ItemKind::Job, 0.5)]),
            sqs_requests: 0.3,
            ahead_writes: units(&[
                (ItemKind::Execution, 1.0),
                (ItemKind::OpenIndex, 1.0),
                (ItemKind::Job, 1.0),
                (ItemKind::DueIndex, 2.0),
            ]),
            ahead_reads: BTreeMap::new(),
            lambda_invokes: 0.0,
        };
        Costs { every_minute: unmoved.clone(), daily: unmoved, bucket }
    }

    /// Parses costs from JSON (camelCase keys) and validates them.
    pub fn from_json(json: &str) -> Result<Costs, String> {
        let costs: Costs = serde_json::from_str(json).map_err(|e| format!("costs JSON: {e}"))?;
        costs.validate()?;
        Ok(costs)
    }

    /// Checks the three classes (known item kinds, finite non-negative numbers).
    pub fn validate(&self) -> Result<(), String> {
        self.every_minute.validate("everyMinute")?;
        self.daily.validate("daily")?;
        self.bucket.validate("bucket")
    }
}

/// Checks one map of `class`: every key a known item kind, every value finite and ≥ 0. Here,
/// not in `validate.rs` with the other checks, because it reads [`ItemKind`]: the checks stay
/// below the costs.
fn check_map(class: &str, which: &str, map: &BTreeMap<String, f64>) -> Result<(), String> {
    for (key, value) in map {
        if ItemKind::parse(key).is_none() {
            let known: Vec<&str> = ItemKind::ALL.iter().map(|k| k.key()).collect();
            return Err(format!("{class}.{which}: unknown item kind {key:?} (known: {})", known.join(", ")));
        }
        check_non_negative(&format!("{class}.{which}.{key}"), *value)?;
    }
    Ok(())
}

/// Units keyed by [`ItemKind::key`], for the example costs.
fn units(pairs: &[(ItemKind, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(kind, value)| (kind.key().to_string(), *value)).collect()
}
