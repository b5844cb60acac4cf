//! Concurrency policies and the per-tenant running limit (docs/execution.md §6).
//!
//! **Per job** (`ALLOW` costs nothing): a job that is not `ALLOW` has one *slot* item next to its
//! executions naming the execution that holds it and the latest execution that released it. An execution must hold the slot before its claim and keeps
//! it through RETRY_WAIT until a final status; the finisher releases it (except under `FORBID`, see
//! [`JobSlots::release`]). The slot has no lease of
//! its own: when an acquirer finds it held, it reads the holder's execution, and a holder that is
//! final (or gone) is stale and replaced by CAS. So a crash between a finish and its release
//! heals itself, and a live holder stays live for exactly as long as its execution does.
//! A fire that waits for the slot is woken when the slot is released (the releasing worker
//! sends the next pending fire's message, `Worker::wake_next`); its own copy only looks again
//! after [`SLOT_WAIT_BACKSTOP_MS`].
//!
//! - `FORBID`: a READY fire that finds the slot held is SKIPPED with the holder's id as reason.
//! - `SERIALIZE`: a fire waits (its message returns later) while the slot is held, and also while
//!   an earlier execution scheduled after the last release is still pending, so fires run one at a time, in
//!   scheduled order, even when SQS delivers them out of order.
//! - `REPLACE`: a fire that finds the slot held requests the holder's cancellation (a flag its
//!   runner sees at the next heartbeat or checkpoint), then waits until the slot is free.
//!
//! **Per tenant**: with a limit configured, a tenant's running gate maps each running execution
//! (its admission's entry, [`sundial_model::keys::gate_entry`]) to its lease end; a claim joins it only while fewer than `limit`
//! entries are live, by CAS on a version; heartbeats and finishes change their own entry and bump
//! that version, so a racing join cannot undo them. Entries carry leases (extended by
//! heartbeats), so a crashed worker's entry lapses instead of leaking a slot forever.
//!
//! Both items live in the executions table; [`sundial_store::slots`] reads and writes them, and
//! their keys are in [`sundial_model::keys`]. This module decides.

use chrono::{DateTime, Utc};
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::{ConcurrencyPolicy, ExecStatus, Execution};
use sundial_store::error::StoreError;
use sundial_store::executions::{ExecKey, ExecStore};
use sundial_store::slots::{self, Take};

/// How long a waiting fire stays away before it looks again (ms): the tenant's running limit,
/// slot contention.
pub const POLICY_POLL_MS: i64 = 2_000;

/// How long a fire waiting for its job's slot (`SERIALIZE`, `REPLACE`) stays away before it
/// looks again (ms). Not what starts it: the execution that releases the slot wakes the next
/// pending fire at once (`Worker::wake_next`); this look is the backstop for a wake that was
/// lost or a holder that ended without a release. Polling every 2 s instead let each hop's
/// re-send fork (a send whose response is lost is sent again by the SDK), and copies piled up
/// between two generation raises (docs/simulation.md, K2 and K5).
pub const SLOT_WAIT_BACKSTOP_MS: i64 = 30_000;

/// What the policy says about an execution about to be claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead and claim.
    Admit,
    /// FORBID: record SKIPPED with this reason.
    Skip {
        /// Why (names the running execution).
        reason: String,
    },
    /// Come back at `until_ms`.
    Wait {
        /// When to look again (ms).
        until_ms: i64,
        /// Why.
        reason: String,
    },
}

/// Job slots: the per-job side of the concurrency policies.
#[derive(Debug, Clone)]
pub struct JobSlots {
    store: ExecStore,
}

impl JobSlots {
    /// Slots in the store's table.
    pub fn new(store: ExecStore) -> Self {
        JobSlots { store }
    }

    /// Decides whether `e` (about to be claimed) may run now under its job's policy, acquiring
    /// the job's slot if so. `ALLOW` jobs return [`Admission::Admit`] without any I/O.
    pub async fn admit(
        &self,
        e: &Execution,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<Admission, StoreError> {
        let policy = e.definition.concurrency;
        if policy == ConcurrencyPolicy::Allow
            || (policy == ConcurrencyPolicy::Serialize
                && sundial_mutants::active(sundial_mutants::Mutant::SerializeNeverWaits))
        {
            return Ok(Admission::Admit);
        }
        let key = ExecKey::of(e);
        let me = key.scheduled_ms;
        let now_ms = now.timestamp_millis();
        let slot = slots::get_slot(self.store.client(), self.store.table(), &key).await?;
        if policy == ConcurrencyPolicy::Serialize && slot.holder != Some(me) {
            let floor = me - i64::from(e.definition.retry.max_age_secs) * 1000;
            let after = slot.released.unwrap_or(floor).max(floor);
            if let Some(earlier) = self.store.first_pending_between(&key, after, me).await? {
                return Ok(Admission::Wait {
                    until_ms: now_ms + SLOT_WAIT_BACKSTOP_MS,
                    reason: format!("SERIALIZE: waiting for {}", keys::execution_id(&key.job_id, earlier)),
                });
            }
        }
        let mut seen_holder = slot.holder;
        for _ in 0..4 {
            let holder = match seen_holder {
                Some(h) if h != me => h,
                _ => match self.take(&key, me, None).await? {
                    Take::Taken => return Ok(Admission::Admit),
                    Take::Held(h) => {
                        seen_holder = h;
                        continue;
                    }
                },
            };
            let hk = ExecKey { scheduled_ms: holder, child: None, ..key.clone() };
            let hs = self.store.get(&hk, true).await?;
            if hs.as_ref().is_none_or(|h| h.exec.status.is_terminal()) {
                // The holder finished without releasing (a crash in between): replace it.
                match self.take(&key, me, Some(holder)).await? {
                    Take::Taken => return Ok(Admission::Admit),
                    Take::Held(h) => seen_holder = h,
                }
                continue;
            }
            let holder_id = hk.id();
            let wait_until = hs
                .as_ref()
                .and_then(|h| h.exec.lease_until)
                .map(|lu| lu.min(now_ms + SLOT_WAIT_BACKSTOP_MS))
                .unwrap_or(now_ms + SLOT_WAIT_BACKSTOP_MS)
                .max(now_ms + 500);
            return Ok(match policy {
                ConcurrencyPolicy::Forbid if e.status == ExecStatus::Ready => {
                    Admission::Skip { reason: format!("FORBID: {holder_id} was still running") }
                }
                ConcurrencyPolicy::Replace => {
                    let out = self.store.request_cancel(&hk, actor, now).await?;
                    Admission::Wait {
                        until_ms: now_ms + SLOT_WAIT_BACKSTOP_MS,
                        reason: format!("REPLACE: cancel of {holder_id}: {out:?}"),
                    }
                }
                _ => Admission::Wait {
                    until_ms: wait_until,
                    reason: format!("{policy:?}: {holder_id} holds the job"),
                },
            });
        }
        Ok(Admission::Wait { until_ms: now_ms + POLICY_POLL_MS, reason: "slot contention".into() })
    }

    async fn take(&self, key: &ExecKey, me: i64, stale: Option<i64>) -> Result<Take, StoreError> {
        slots::take_slot(self.store.client(), self.store.table(), key, me, stale).await
    }

    /// Releases the job's slot if `key` holds it (after a final status), recording `key` as the
    /// latest released execution. A no-op for non-holders, for `ALLOW` jobs (no slot) and for
    /// `FORBID` jobs: their next acquirer reads the holder's execution, finds it final and takes
    /// the slot over by CAS ([`JobSlots::admit`]), and FORBID never reads `released`, so the
    /// release write (one unit a fire) would buy nothing. `SERIALIZE` and `REPLACE` release:
    /// their waiters look at the slot, and `SERIALIZE` orders fires by `released`.
    pub async fn release(&self, key: &ExecKey, policy: ConcurrencyPolicy) -> Result<(), StoreError> {
        if matches!(policy, ConcurrencyPolicy::Allow | ConcurrencyPolicy::Forbid) {
            return Ok(());
        }
        slots::release_slot(self.store.client(), self.store.table(), key).await
    }
}

pub use sundial_model::tenant::TenantLimits;

/// Most entries one shard of a tenant's running gate holds: a tenant's gate is split into
/// ⌈limit ÷ this⌉ items, each its own partition, so a gate item stays near 1 KiB (one write
/// unit per rewrite) and a busy tenant's claims and finishes spread over several partitions
/// (a single gate item rewritten on every claim and finish is a hot key at scale: the capacity
/// model, `docs/performance.md`).
pub const GATE_ENTRIES_PER_SHARD: u32 = 20;

/// How many items the running gate of a tenant limited to `limit` is split into.
pub fn gate_shards(limit: u32) -> u32 {
    limit.div_ceil(GATE_ENTRIES_PER_SHARD).max(1)
}

/// How many entries shard `shard` of a gate of `limit` admits: the limit spread evenly, the
/// first `limit mod shards` shards one more, so the shards together admit exactly `limit`.
pub fn gate_quota(limit: u32, shard: u32) -> u32 {
    let n = gate_shards(limit);
    limit / n + u32::from(shard < limit % n)
}

/// What an acquire got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seat {
    /// Joined the gate in this shard (extend and release it there).
    Admitted {
        /// The gate shard holding the entry.
        shard: u32,
    },
    /// Every shard is full: look again at this instant (ms).
    Full {
        /// When to look again (ms).
        retry_at: i64,
    },
}

/// Who joins a leased gate: its entry id, the shard it tries first, and its lease end (ms).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GateEntry<'a> {
    /// The entry's key in the map (an execution id).
    pub id: &'a str,
    /// The shard tried first (a stable hash of the id, so entries spread over the shards).
    pub home: u32,
    /// The lease end written with the entry.
    pub lease_until: i64,
    /// A per-owner share of the gate: entries whose id starts with the prefix (one tenant's,
    /// `{tenant}:`) may be at most this many (spread over the shards like the limit, see
    /// [`share_quota`]). `None`: no share (the tenant running gate, whose owner is one tenant).
    pub share: Option<(&'a str, u32)>,
}

/// How many entries of one owner shard `shard` of a gate of `limit` admits when the owner's
/// share is `share`: the share spread over the gate's shards like [`gate_quota`] spreads the
/// limit, so the shards together admit exactly `share` of the owner's entries (a shard whose
/// part is 0 sends the owner on to the next).
pub fn share_quota(limit: u32, share: u32, shard: u32) -> u32 {
    let n = gate_shards(limit);
    share / n + u32::from(shard < share % n)
}

/// Joins a leased gate of `limit` split into [`gate_shards`] items (`pk_of(shard)`): tries the
/// entry's home shard, then the others in turn, each admitting its [`gate_quota`]. An entry
/// counts as live until its lease end plus `skew_margin_ms`; lapsed ones (a dead holder) are
/// dropped by this rewrite. The tenant running gate and the resource holder gates
/// ([`crate::execution::resource_limits`]) are both this. Also returns the live entries of the shard
/// joined, the caller's included (0 when full).
pub(crate) async fn acquire_gate(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    pk_of: &(dyn Fn(u32) -> String + Sync),
    entry: &GateEntry<'_>,
    limit: u32,
    skew_margin_ms: i64,
    now_ms: i64,
) -> Result<(Seat, usize), StoreError> {
    let me = entry.id;
    let shards = gate_shards(limit);
    let mut retry_at = now_ms + POLICY_POLL_MS;
    for i in 0..shards {
        let shard = (entry.home + i) % shards;
        let quota = gate_quota(limit, shard) as usize;
        for _ in 0..8 {
            let set = slots::get_gate(ddb, table, pk_of(shard)).await?;
            let mut live: HashMap<String, i64> =
                set.leases.into_iter().filter(|(k, lu)| k != me && lu + skew_margin_ms >= now_ms).collect();
            if live.len() >= quota {
                let next = live.values().map(|lu| lu + skew_margin_ms).min().unwrap_or(now_ms);
                retry_at = retry_at.min(next.max(now_ms + 500));
                break;
            }
            if let Some((prefix, share)) = entry.share {
                // The owner's part of this shard is full: the units left are other owners'.
                let own: Vec<i64> =
                    live.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, lu)| *lu).collect();
                if own.len() >= share_quota(limit, share, shard) as usize {
                    let next =
                        own.iter().map(|lu| lu + skew_margin_ms).min().unwrap_or(now_ms + POLICY_POLL_MS);
                    retry_at = retry_at.min(next.max(now_ms + 500));
                    break;
                }
            }
            live.insert(me.to_string(), entry.lease_until);
            if slots::put_gate(ddb, table, pk_of(shard), &live, set.version).await? {
                return Ok((Seat::Admitted { shard }, live.len()));
            }
        }
    }
    Ok((Seat::Full { retry_at }, 0))
}

/// The tenant side: a leased set of running executions per tenant, split into
/// [`gate_shards`] items.
#[derive(Debug, Clone)]
pub struct TenantGate {
    ddb: aws_sdk_dynamodb::Client,
    table: String,
}

impl TenantGate {
    /// A gate on the executions table.
    pub fn new(ddb: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        TenantGate { ddb, table: table.into() }
    }

    /// Joins `key`'s tenant's running set as `entry` (its admission's,
    /// [`sundial_model::keys::gate_entry`]) until `lease_until` if fewer than `limit` live entries are
    /// in it: tries the entry's home shard (a hash of it), then the others in turn, each
    /// admitting its [`gate_quota`]. An entry counts as live until its lease end plus
    /// `skew_margin_ms`.
    pub async fn acquire(
        &self,
        key: &ExecKey,
        entry: &str,
        limit: u32,
        lease_until: i64,
        skew_margin_ms: i64,
        now_ms: i64,
    ) -> Result<Seat, StoreError> {
        let home = sundial_model::keys::shard_of(&key.tenant, entry, gate_shards(limit));
        let gate = |shard| sundial_model::keys::tenant_running_shard_pk(&key.tenant, shard);
        let entry = GateEntry { id: entry, home, lease_until, share: None };
        let limit = limit + u32::from(sundial_mutants::active(sundial_mutants::Mutant::TenantGateOffByOne));
        Ok(acquire_gate(&self.ddb, &self.table, &gate, &entry, limit, skew_margin_ms, now_ms).await?.0)
    }

    /// Extends `entry` in gate shard `shard` (heartbeats of limited tenants).
    pub async fn extend(
        &self,
        key: &ExecKey,
        entry: &str,
        shard: u32,
        lease_until: i64,
    ) -> Result<bool, StoreError> {
        slots::extend_running(&self.ddb, &self.table, (&key.tenant, entry), shard, lease_until).await
    }

    /// Leaves the tenant's running set (`entry`, in gate shard `shard`).
    pub async fn release(&self, key: &ExecKey, entry: &str, shard: u32) -> Result<(), StoreError> {
        slots::remove_running(&self.ddb, &self.table, (&key.tenant, entry), shard).await
    }

    /// The executions of the live entries of a tenant limited to `limit` at `now_ms`, over every
    /// gate shard (for tests and the API; an execution twice if two admissions hold an entry).
    pub async fn running(&self, tenant: &str, limit: u32, now_ms: i64) -> Result<Vec<String>, StoreError> {
        let mut v = Vec::new();
        for shard in 0..gate_shards(limit) {
            let set = slots::get_running(&self.ddb, &self.table, tenant, shard).await?;
            v.extend(
                set.leases
                    .into_iter()
                    .filter(|(_, lu)| *lu >= now_ms)
                    .map(|(k, _)| sundial_model::keys::gate_entry_execution(&k).to_string()),
            );
        }
        v.sort();
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_shards_together_admit_exactly_the_limit() {
        assert_eq!((gate_shards(1), gate_shards(20), gate_shards(21), gate_shards(10_000)), (1, 1, 2, 500));
        for limit in [1, 2, 19, 20, 21, 39, 41, 1_000, 10_007] {
            let total: u32 = (0..gate_shards(limit)).map(|s| gate_quota(limit, s)).sum();
            assert_eq!(total, limit, "limit {limit}");
            assert!((0..gate_shards(limit)).all(|s| gate_quota(limit, s) <= GATE_ENTRIES_PER_SHARD));
            assert!((0..gate_shards(limit)).all(|s| gate_quota(limit, s) >= 1));
        }
    }

    #[test]
    fn a_share_spread_over_the_shards_admits_exactly_the_share() {
        for (limit, share) in
            [(1, 1), (4, 2), (20, 10), (21, 11), (100, 3), (100, 50), (10_000, 5_000), (41, 41)]
        {
            let total: u32 = (0..gate_shards(limit)).map(|s| share_quota(limit, share, s)).sum();
            assert_eq!(total, share, "limit {limit}, share {share}");
            assert!((0..gate_shards(limit)).all(|s| share_quota(limit, share, s) <= gate_quota(limit, s)));
        }
    }

    #[test]
    fn tenant_limits_parse_and_name_the_bad_part() {
        let l = TenantLimits::parse("5, acme=10 ,beta=2").unwrap_or_default();
        assert_eq!(l.of("acme"), Some(10));
        assert_eq!(l.of("zeta"), Some(5));
        assert_eq!(TenantLimits::parse("").unwrap_or_default().of("x"), None);
        let e = TenantLimits::parse("acme=0").err().unwrap_or_default();
        assert!(e.contains("acme=0"), "{e}");
    }
}
