//! The limits that depend on each other, in one place, with every relation between them
//! asserted at compile time: raising one past another fails the build instead of a fire.
//!
//! Limits that stand alone (an expression's length, a calendar's dates) stay next to the code
//! they bound; a limit belongs here when another limit, or an AWS service limit, constrains it.

/// Most children one fire may have (`shards`, broadcast members). The parent item records each
/// child's final status, and DynamoDB bills a write by the whole item: at 100 children the
/// parent stays near 2 KiB.
pub const MAX_CHILDREN: u32 = 100;
/// Items per emit transaction: one parent update and at most this many child puts
/// (DynamoDB's `TransactWriteItems` takes 100 actions).
pub const MAX_EMIT_BATCH: usize = 99;
/// Largest item input and item result (bytes of JSON): they live on the child item.
pub const MAX_ITEM_BYTES: usize = 1_024;
/// Most missed fires a `fireAll` misfire policy may replay (its `cap`): an every-second job
/// after a long outage must not plan a million executions.
pub const MAX_FIRE_ALL_CAP: u32 = 1_000;
/// Largest inline `params` document (bytes of JSON). Larger parameters are stored by reference
/// (`paramsRef`, e.g. an S3 URI the handler reads) so executions stay small: DynamoDB bills
/// writes per started KiB, and every execution copies its parameters.
pub const MAX_INLINE_PARAMS_BYTES: usize = 4 * 1024;
/// Longest `startDeadlineSecs` (7 days): a fire not started a week late is long past any alert.
pub const MAX_START_DEADLINE_SECS: u32 = 7 * 86_400;
/// Most resources one job may use.
pub const MAX_JOB_RESOURCES: usize = 8;

/// SQS's longest `DelaySeconds` (15 minutes): how far ahead a send can place a message.
pub const SQS_MAX_DELAY_SECS: u32 = 900;
/// SQS's longest visibility timeout (12 hours): the longest a received message stays hidden.
pub const SQS_MAX_VISIBILITY_SECS: u32 = 43_200;
/// SQS's largest message body (256 KiB).
pub const SQS_MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// DynamoDB's largest item (400 KB).
pub const DDB_MAX_ITEM_BYTES: usize = 400 * 1024;
/// Most actions in one DynamoDB `TransactWriteItems`.
pub const DDB_MAX_TRANSACT_ITEMS: usize = 100;

/// Longest worker lease: a claimed message is kept invisible for the lease, so it cannot
/// exceed the visibility limit.
pub const MAX_LEASE_SECS: u32 = SQS_MAX_VISIBILITY_SECS;
/// Longest run of one attempt (`timeoutSecs`): the lease is extended up to it.
pub const MAX_TIMEOUT_SECS: u32 = SQS_MAX_VISIBILITY_SECS;
/// Longest retry back-off (`retry.maxDelaySecs`): a retry waits as the message's visibility.
pub const MAX_RETRY_DELAY_SECS: u32 = SQS_MAX_VISIBILITY_SECS;
/// Most attempts of one execution (`retry.maxAttempts`).
pub const MAX_ATTEMPTS: u32 = 100;

const _: () = assert!(MAX_LEASE_SECS <= SQS_MAX_VISIBILITY_SECS, "a lease is a visibility timeout");
const _: () = assert!(MAX_TIMEOUT_SECS <= SQS_MAX_VISIBILITY_SECS, "an attempt runs under one visibility");
const _: () = assert!(MAX_RETRY_DELAY_SECS <= SQS_MAX_VISIBILITY_SECS, "a retry waits as a visibility");
const _: () = assert!(SQS_MAX_DELAY_SECS < SQS_MAX_VISIBILITY_SECS);
// A map-reduce emit is one transaction: the parent's fenced update plus one put per item.
const _: () = assert!(MAX_EMIT_BATCH < DDB_MAX_TRANSACT_ITEMS, "emit batch + parent fits one transaction");
// An item's input is stored on its child execution and carried in its message.
const _: () = assert!(MAX_ITEM_BYTES * 4 < DDB_MAX_ITEM_BYTES && MAX_ITEM_BYTES * 4 < SQS_MAX_MESSAGE_BYTES);
// Inline params are copied into every execution item and every message.
const _: () = assert!(MAX_INLINE_PARAMS_BYTES * 4 < DDB_MAX_ITEM_BYTES);
const _: () = assert!(MAX_INLINE_PARAMS_BYTES * 4 < SQS_MAX_MESSAGE_BYTES);
// A parent's tally holds one entry per child in its own item (a few dozen bytes each).
const _: () = assert!(MAX_CHILDREN as usize * 256 < DDB_MAX_ITEM_BYTES);
// A fireAll catch-up creates at most its cap in one plan; a start deadline is a week at most.
const _: () = assert!(MAX_FIRE_ALL_CAP <= 1_000);
const _: () = assert!(MAX_START_DEADLINE_SECS <= 7 * 86_400);
