//! Attribute names shared by the codecs and the conditional expressions.
#![allow(missing_docs)]

pub const PK: &str = "pk";
pub const SK: &str = "sk";
pub const TENANT: &str = "tenant";
pub const JOB: &str = "job";
pub const VERSION: &str = "ver";
pub const STATE: &str = "state";
pub const DEF: &str = "def";
pub const ANCHOR: &str = "anchor";
pub const NEXT: &str = "next";
pub const SHARD: &str = "shard";
pub const EVERY: &str = "every";
pub const DUE_PK: &str = "due_pk";
pub const DUE_SK: &str = "due_sk";
pub const TENANT_PK: &str = "tenant_pk";
pub const TENANT_SK: &str = "tenant_sk";
pub const CREATED: &str = "created";
pub const UPDATED: &str = "updated";
pub const TZDB: &str = "tzdb";
/// The business calendar chain a job's trigger position was computed with.
pub const CALENDARS: &str = "calv";
/// What a job is charged against its tenant's hourly execution budget.
pub const COMMITTED: &str = "committed";
pub const SCHED: &str = "sched";
pub const FIRE: &str = "fire";
pub const STATUS: &str = "st";
pub const ATTEMPT: &str = "att";
pub const TOKEN: &str = "tok";
pub const LEASE_OWNER: &str = "lo";
pub const LEASE_UNTIL: &str = "lu";
pub const AVAILABLE: &str = "avail";
pub const MISSED_FROM: &str = "mf";
pub const MISSED_TO: &str = "mt";
/// A batch's instants it does not stand for (number set, ms).
pub const MISSED_EXCEPT: &str = "mx";
/// A batch cover item's last instant (ms).
pub const COVER_THROUGH: &str = "cth";
/// A batch registry's batches, in the order they settled: a list of `{f, t, x}` (first and
/// last instant, ms; epoch seconds until which the entry is kept).
pub const REGISTERED: &str = "bl";
/// A batch registry's version, which every registration is conditional on.
pub const REGISTRY_VERSION: &str = "bv";
pub const ERR_CODE: &str = "ec";
pub const ERR_MSG: &str = "em";
pub const CANCEL: &str = "cx";
pub const TIMELINE: &str = "tl";
pub const ATT_PK: &str = "att_pk";
pub const ATT_SK: &str = "att_sk";
pub const EXPIRES: &str = "expires_at";
/// A quota counter's count.
pub const QUOTA_USED: &str = "used";
/// Idempotency record: request fingerprint.
pub const IDEM_FP: &str = "idem_fp";
/// Idempotency record: 0 running, -1 released, else the stored answer's status.
pub const IDEM_STATE: &str = "idem_state";
/// Idempotency record: the instant (ms) the request ran at.
pub const IDEM_AT: &str = "idem_at";
/// Idempotency record: lease end (ms).
pub const IDEM_LEASE: &str = "idem_lease";
/// Idempotency record: the lease holder's nonce.
pub const IDEM_OWNER: &str = "idem_owner";
/// Idempotency record: the stored answer's headers (JSON).
pub const IDEM_HEADERS: &str = "idem_headers";
/// Idempotency record: the stored answer's body (JSON).
pub const IDEM_BODY: &str = "idem_body";
pub const THROUGH: &str = "through";
/// The last checkpoint of an execution (JSON text).
pub const CHECKPOINT: &str = "ck";
/// Run time of an execution's finished attempts so far (ms), for the run-time budget.
pub const RUN_MS: &str = "rt";
/// SHA-256 prefix of an execution's input, stored when it goes DEAD.
pub const DIGEST: &str = "dg";
/// When a replayed execution was last sent to its queue by a replay (ms): at most one re-send
/// per execution per gap (the dead-letter replay's rate limit). Not [`RESENDS`]: an instant
/// stored in the reconciler's re-send count made it overflow (`rs` held both once).
pub const RESENT: &str = "rl";
/// A job slot's holder (the scheduled ms of the execution holding it).
pub const SLOT_HOLDER: &str = "h";
/// A job slot's latest released execution (scheduled ms).
pub const SLOT_RELEASED: &str = "dn";
/// A tenant gate's running executions: a map of execution id to lease end (ms).
pub const RUNNING: &str = "hs";
/// A tenant gate's version, checked by every rewrite of its map.
pub const GATE_VERSION: &str = "v";
/// When a job's current definition took effect (ms).
pub const EDITED: &str = "edited";
/// When a job was last re-planned on a new calendar chain under the same definition (ms).
pub const REPLANNED: &str = "replanned";
/// A job's last pause: its start (ms).
pub const PAUSED_FROM: &str = "pf";
/// A job's last pause: its end, once resumed (ms).
pub const PAUSED_UNTIL: &str = "pu";
/// `open` index partition key (`OPEN#{part}`), present while an execution is not final.
pub const OPEN_PK: &str = "open_pk";
/// `open` index sort key: when the reconciler should look at the execution (ms).
pub const OPEN_DUE: &str = "open_due";
/// Shard watermark item: the last minute the verification pass checked.
pub const VERIFIED: &str = "vf";
/// Shard watermark item: the last minute whose every-minute and daily fires a scan dispatched,
/// when that is past the watermark (a deferred bucket job holds the watermark back).
pub const PLANNED: &str = "pl";
/// Shard watermark item: how many every-minute or daily jobs have left their class.
pub const LEFT_CLASS: &str = "lv";
/// How many times the reconciler re-sent the execution's message.
pub const RESENDS: &str = "rs";
/// The id of the last conditional update of the execution (unique per write): a writer whose
/// response was lost, and whose SDK retry then failed its condition, tells its own landed write
/// by it (`crate::landed`).
pub const WRITE_ID: &str = "wid";
/// The wait generation of an open execution: raised by whoever starts a new chain of queue
/// copies for it (a wait that moves its reconciler look, a re-send); copies of an older
/// generation are dropped (`sundial_model::reconcile::stale_copy`).
pub const WAIT_GEN: &str = "wg";
/// The wait generation whose chain's copy was sent: a worker raises [`WAIT_GEN`] first (the
/// CAS that lets one wait start a chain), sends the copy, then sets this; copies are dropped
/// only below it, so a worker that dies between its raise and its send leaves older copies
/// standing (the full mix's seed 218, K15). Absent: equal to [`WAIT_GEN`] (every other raiser
/// sets both at once).
pub const WAIT_GEN_SENT: &str = "wgs";
/// Execution item: the executions of the same tenant waiting for this one as an upstream
/// (`after`, docs/dependencies.md), a string set of execution ids; its final finish wakes them.
pub const DOWNSTREAM: &str = "dw";
/// Set while a pause holds a queued-ahead execution (the pausing job version).
pub const HELD: &str = "hd";
/// When the execution was found not started past its start deadline (ms). Set once, by a
/// conditional write: whoever sets it (the reconciler or a late worker) reports the miss.
pub const MISSED: &str = "ms";
/// A parent execution's child count, set by its fan-out (`docs/children.md`).
pub const CHILDREN: &str = "kn";
/// A parent execution's tally: a map of child tag to that child's final status.
pub const CHILD_RESULTS: &str = "kc";
/// A child execution's tag (`s3`, `m-eu-west-1`): marks children, so a job's listing
/// can leave them out (a filter cannot read the sort key).
pub const CHILD: &str = "ch";
/// A map-reduce parent's phase (`MAP`, `WAIT`, `REDUCE`; `docs/mapreduce.md`).
pub const MAP_PHASE: &str = "xp";
/// A map-reduce parent's count of item children created (added by each emit transaction).
pub const MAP_EMITTED: &str = "xe";
/// A map-reduce parent's count of item children final (added by each child's final finish).
pub const MAP_DONE: &str = "xd";
/// Of those, the ones that did not succeed.
pub const MAP_FAILED: &str = "xf";
/// A waiting map-reduce parent: its done count at the reconciler's last look (to see whether
/// the counts still move).
pub const MAP_LOOKED: &str = "xl";
/// A waiting map-reduce parent: the sort key of the last item the reconciler found final with
/// every item before it (where its next read of the items resumes).
pub const MAP_CHECKED: &str = "xk";
/// An item child's input (JSON text).
pub const ITEM_INPUT: &str = "xi";
/// An item child's result (JSON text), set by its succeeded finish.
pub const ITEM_RESULT: &str = "xr";

/// Attributes of an operations-log entry.
pub mod ops {
    pub const AT: &str = "at";
    pub const ACTOR: &str = "by";
    pub const ACTION: &str = "op";
    pub const FROM_VERSION: &str = "fv";
    pub const TO_VERSION: &str = "tv";
    pub const EXECUTION: &str = "ex";
    pub const DETAIL: &str = "dt";
}

/// Keys of one audit event (a map in an execution's timeline `tl`).
pub mod event {
    pub const AT: &str = "a";
    pub const ACTOR: &str = "by";
    pub const FROM: &str = "f";
    pub const TO: &str = "t";
    pub const ATTEMPT: &str = "n";
    pub const TOKEN: &str = "k";
    pub const CODE: &str = "c";
}
/// Execution item: its outbox, a string set of pending outcome events
/// (`sundial_model::outcome::OutboxEntry`), written by the transition that makes each due and
/// deleted once the event is sent (docs/outcomes.md).
pub const OUTBOX: &str = "ob";
/// Execution item: until when (ms) one flusher holds its outbox (the finish that wrote the
/// entries holds it first; a reconciler or a later worker takes it once it has run out).
pub const OUTBOX_LEASE: &str = "obl";
/// When the fire was found past its finish deadline (ms). Set once, by the reconciler's
/// conditional write, with its `FinishDeadlineMissed` outbox entry.
pub const FINISH_MISSED: &str = "fdm";
/// Job outcome item (`OUTCOMES`): the dead fires since the job's last success, a string set of
/// execution ids (adding one twice counts it once).
pub const DEAD_STREAK: &str = "ds";
/// Job outcome item: the execution whose dead fire paused the job (set once per streak).
pub const AUTO_PAUSED_BY: &str = "apb";
/// Job outcome item: the execution whose success ended the last streak (its `JobRecovered`).
pub const RECOVERED_BY: &str = "rby";
/// Job outcome item: how many dead fires the last recovery ended.
pub const RECOVERED_AFTER: &str = "dn";
/// Job run-count item (`RUNS`): how many scheduled fires the trigger created for a job with
/// `maxRuns`, added to in the same transaction that puts each fire (docs/schedule.md).
pub const RUN_COUNT: &str = "rc";
