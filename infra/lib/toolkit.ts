/**
 * The handler toolkit's own tables (`functions/idempotency`, crate `sundial-idempotency`).
 *
 * A handler that Sundial runs (a Lambda target, a webhook service) uses the toolkit to stay
 * correct when it runs twice: the inbox admits a step once per `(executionId, step)`, the
 * outbound table records calls whose outcome is unknown, the markers table holds batch
 * done-markers. The toolkit does not create tables on AWS; `SundialScheduler` does when asked
 * (`toolkitTables`). The shapes below are the crate's (`src/tables.rs`, `src/marker.rs`), not
 * in resources.json (which describes Sundial's own deployment); `test/toolkit.test.ts` pins
 * them against the Rust source.
 *
 * | table    | Rust (`ToolkitTables::with_prefix(p)`) | key        | TTL          | operations the toolkit issues |
 * |----------|----------------------------------------|------------|--------------|-------------------------------|
 * | inbox    | `{p}inbox`                             | `pk` (S)   | —            | PutItem (alone or in TransactWriteItems), UpdateItem, GetItem |
 * | outbound | `{p}outbound`                          | `pk` (S)   | —            | PutItem, UpdateItem, Scan (`unknown_outcomes`) |
 * | markers  | `{p}markers`                           | `pk` (S)   | `expires_at` | GetItem, PutItem |
 *
 * The tables a handler protects (its ledger, with `fence`, `state`, `unique`) are the
 * handler's own: it creates them with its natural key and grants itself access.
 */

/** Logical names of the toolkit's tables. */
export type ToolkitTableName = 'inbox' | 'outbound' | 'markers';

export interface ToolkitTableDef {
  /** Suffix after the prefix, as `ToolkitTables::with_prefix` builds it. */
  readonly suffix: string;
  /** The one string hash key (`tables::PK`). */
  readonly partitionKey: string;
  readonly ttlAttribute?: string;
  /** DynamoDB actions the toolkit's code issues on this table. */
  readonly actions: readonly string[];
}

export const TOOLKIT_TABLES: Readonly<Record<ToolkitTableName, ToolkitTableDef>> = {
  inbox: {
    suffix: 'inbox',
    partitionKey: 'pk',
    // A TransactWriteItems is authorized by the actions it contains: the entry is a Put.
    actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  outbound: {
    suffix: 'outbound',
    partitionKey: 'pk',
    // `unknown_outcomes` scans: the table only holds the few calls no one could answer.
    actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Scan'],
  },
  markers: {
    suffix: 'markers',
    partitionKey: 'pk',
    ttlAttribute: 'expires_at',
    actions: ['dynamodb:GetItem', 'dynamodb:PutItem'],
  },
};
