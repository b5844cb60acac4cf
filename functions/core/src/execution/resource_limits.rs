//! Resource limits (docs/resources.md: "at most 20 runs may use the legacy database at once"): a
//! job lists the named resources its runs use (`resources: ["legacy-db"]`); an operator sets each
//! one's limit once for the whole platform (`PUT /v1/resources/legacy-db {"limit": 20}`); at most
//! that many executions hold it at once, whatever their tenant, job or pool.
//!
//! The holder set is the tenant running gate's leased map ([`super::policy::acquire_gate`]),
//! one gate per resource instead of per tenant, its entries keyed by the *global* execution id
//! (`{tenant}:{job}@{ms}`, since tenants share it) and the admission that took them
//! ([`sundial_model::keys::gate_entry`]: a failed admission gives back only its own): joined by CAS on a version while fewer than
//! the limit are live, extended by heartbeats, left at the attempt's end, and dropped by the next
//! acquirer once its lease (+ skew margin) is over, so a holder that died frees its unit when its
//! lease ends.
//!
//! **Per-tenant share** (issue 28, M5): one tenant may hold at most its share of a limit (the
//! operator's `perTenant`, default half the limit rounded up, at least 1), so one tenant cannot
//! hold every unit. The share is checked in the same gate rewrite: the entries whose global id
//! starts with `{tenant}:` are counted, spread over the gate's shards like the limit
//! ([`super::policy::share_quota`]): no extra read or write.
//!
//! A job with several resources takes them **all or none**, in name order (so two jobs never
//! each hold what the other waits for), giving back what it took when one is full; the
//! execution then waits like any other wait: a fresh, delayed SQS message (no receive toward
//! the DLQ). A resource with no limit defined (deleted after the job named it) admits nobody:
//! the guarded downstream is protected rather than flooded, and `ResourceUndefined` says so.

use super::policy::{acquire_gate, GateEntry, Seat};
use std::collections::HashMap;
use std::sync::Mutex;
use sundial_model::keys;
use sundial_store::error::StoreError;
use sundial_store::{resource_limits as resources, slots};

/// How long a worker trusts a limit it read (ms): a changed limit takes effect within this.
pub const LIMIT_CACHE_MS: i64 = 10_000;

/// How long an execution waits before looking again at a resource that admits nobody (limit 0,
/// or no limit defined) (ms).
pub const CLOSED_POLL_MS: i64 = 30_000;

/// One resource this attempt holds, and the gate shard holding its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The resource.
    pub resource: String,
    /// The gate shard its entry is in.
    pub shard: u32,
}

/// What [`ResourceGates::acquire_all`] got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// Every resource: hold them until the attempt ends.
    All(Vec<Held>),
    /// `resource` had no room (or no limit): nothing is held; look again at `retry_at` (ms).
    Wait {
        /// The resource that was full.
        resource: String,
        /// When to look again.
        retry_at: i64,
        /// True when the resource has no limit defined.
        undefined: bool,
    },
}

/// What one resource saw during one delivery (metrics: `Resource` dimension).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceUse {
    /// The resource.
    pub resource: String,
    /// 1 if the execution had to wait for it.
    pub waits: u64,
    /// Live holders of the gate shard it joined, itself included, right after it joined (the
    /// resource's whole count for limits up to 20, which are one shard). None: did not join.
    pub holders: Option<u64>,
    /// 1 if the resource has no limit defined.
    pub undefined: u64,
}

/// A limit and one tenant's share of it.
type Terms = (u32, u32);

/// The resource holder gates (executions table) and the limits (jobs table, cached).
#[derive(Debug)]
pub struct ResourceGates {
    ddb: aws_sdk_dynamodb::Client,
    jobs_table: String,
    exec_table: String,
    /// Resource → (read at, its terms or `None` when undefined).
    cache: Mutex<HashMap<String, (i64, Option<Terms>)>>,
}

impl ResourceGates {
    /// Gates over `exec_table`, limits read from `jobs_table`.
    pub fn new(
        ddb: aws_sdk_dynamodb::Client,
        jobs_table: impl Into<String>,
        exec_table: impl Into<String>,
    ) -> Self {
        ResourceGates {
            ddb,
            jobs_table: jobs_table.into(),
            exec_table: exec_table.into(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The limit of `resource` (`None`: not defined), from the cache if read within
    /// [`LIMIT_CACHE_MS`].
    pub async fn limit_of(&self, resource: &str, now_ms: i64) -> Result<Option<u32>, StoreError> {
        Ok(self.terms_of(resource, now_ms).await?.map(|(limit, _)| limit))
    }

    /// The limit of `resource` and one tenant's share of it ([`resources::ResourceLimit::share`];
    /// `None`: not defined), cached like [`ResourceGates::limit_of`].
    pub async fn terms_of(&self, resource: &str, now_ms: i64) -> Result<Option<Terms>, StoreError> {
        if let Ok(c) = self.cache.lock() {
            if let Some((at, v)) = c.get(resource) {
                if now_ms - at < LIMIT_CACHE_MS {
                    return Ok(*v);
                }
            }
        }
        let v = resources::get_limit(&self.ddb, &self.jobs_table, resource, false)
            .await?
            .map(|l| (l.limit, l.share()));
        if let Ok(mut c) = self.cache.lock() {
            c.insert(resource.to_string(), (now_ms, v));
        }
        Ok(v)
    }

    /// Takes a unit of every resource in `names` for entry `id` (a global execution id) until
    /// `lease_until`, all or none, in name order; `uses` gets one line per resource looked at.
    pub async fn acquire_all(
        &self,
        names: &[String],
        id: &str,
        lease_until: i64,
        skew_margin_ms: i64,
        now_ms: i64,
        uses: &mut Vec<ResourceUse>,
    ) -> Result<Acquired, StoreError> {
        // Entries are global ids, `{tenant}:{job}@{ms}`: the tenant's share counts those with
        // its prefix.
        let tenant_prefix = id.split_once(':').map(|(t, _)| format!("{t}:"));
        let mut ordered: Vec<&String> = names.iter().collect();
        ordered.sort();
        ordered.dedup();
        let mut held: Vec<Held> = Vec::new();
        for name in ordered {
            let mut usage = ResourceUse { resource: name.clone(), ..Default::default() };
            let terms = match self.terms_of(name, now_ms).await {
                Ok(l) => l,
                Err(e) => {
                    self.release(&held, id).await?;
                    return Err(e);
                }
            };
            let limit = terms.map(|(l, _)| l);
            let (seat, live) = match terms {
                None | Some((0, _)) => (Seat::Full { retry_at: now_ms + CLOSED_POLL_MS }, 0),
                Some((limit, share)) => {
                    let home = keys::shard_of("", id, super::policy::gate_shards(limit));
                    let gate = |shard| keys::resource_running_shard_pk(name, shard);
                    // The tenant's share: counted among the gate's own entries (no extra I/O).
                    let share =
                        (share < limit).then_some(()).and(tenant_prefix.as_deref()).map(|p| (p, share));
                    let entry = GateEntry { id, home, lease_until, share };
                    match acquire_gate(
                        &self.ddb,
                        &self.exec_table,
                        &gate,
                        &entry,
                        if sundial_mutants::active(sundial_mutants::Mutant::ResourceLimitOffByOne) {
                            limit + 1
                        } else {
                            limit
                        },
                        skew_margin_ms,
                        now_ms,
                    )
                    .await
                    {
                        Ok(s) => s,
                        Err(e) => {
                            self.release(&held, id).await?;
                            return Err(e);
                        }
                    }
                }
            };
            match seat {
                Seat::Admitted { shard } => {
                    usage.holders = Some(live as u64);
                    uses.push(usage);
                    held.push(Held { resource: name.clone(), shard });
                }
                Seat::Full { retry_at } => {
                    usage.waits = 1;
                    usage.undefined = u64::from(limit.is_none());
                    uses.push(usage);
                    // All or none: what was taken before this one goes back at once.
                    self.release(&held, id).await?;
                    return Ok(Acquired::Wait {
                        resource: name.clone(),
                        retry_at: retry_at.clamp(now_ms + 1_000, now_ms + CLOSED_POLL_MS),
                        undefined: limit.is_none(),
                    });
                }
            }
        }
        Ok(Acquired::All(held))
    }

    /// Extends entry `id` in every held resource's gate (heartbeats); each is tried, the first
    /// error is returned.
    /// Whether every entry was still there (false: one lapsed and an acquirer dropped it).
    pub async fn extend(&self, held: &[Held], id: &str, lease_until: i64) -> Result<bool, StoreError> {
        let mut first = Ok(true);
        for h in held {
            let pk = keys::resource_running_shard_pk(&h.resource, h.shard);
            let r = slots::extend_gate_entry(&self.ddb, &self.exec_table, pk, id, lease_until).await;
            first = match (first, r) {
                (Ok(all), Ok(this)) => Ok(all && this),
                (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            };
        }
        first
    }

    /// Leaves every held resource's gate (each one tried even if an earlier one failed; the
    /// first error is returned, and an entry not removed lapses with its lease).
    pub async fn release(&self, held: &[Held], id: &str) -> Result<(), StoreError> {
        let mut first = Ok(());
        for h in held {
            let pk = keys::resource_running_shard_pk(&h.resource, h.shard);
            if let Err(e) = slots::remove_gate_entry(&self.ddb, &self.exec_table, pk, id).await {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// The live holders of `resource` limited to `limit` at `now_ms` (global execution id →
    /// lease end, one line per admission holding a unit), over every gate shard: for the API and
    /// tests.
    pub async fn holders(
        &self,
        resource: &str,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let mut v = Vec::new();
        for shard in 0..super::policy::gate_shards(limit) {
            let set = slots::get_gate(
                &self.ddb,
                &self.exec_table,
                keys::resource_running_shard_pk(resource, shard),
            )
            .await?;
            v.extend(
                set.leases
                    .into_iter()
                    .filter(|(_, lu)| *lu >= now_ms)
                    .map(|(k, lu)| (sundial_model::keys::gate_entry_execution(&k).to_string(), lu)),
            );
        }
        v.sort();
        Ok(v)
    }
}
