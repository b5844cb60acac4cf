/**
 * Sundial's resource definition, read from the one file both sides share.
 *
 * `functions/model/resources.json` is compiled into the Rust binaries (`sundial_model::resources`)
 * and read here at synth time, so table names, keys, indexes, queue names and env variable names
 * cannot be kept in two places. `test/consistency.test.ts` checks that the synthesized template
 * says exactly what the file says.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The source of truth in the repository, relative to this file (infra/lib/ -> functions/model/). */
export const REPO_RESOURCES_JSON_PATH = path.resolve(__dirname, '..', '..', 'functions', 'model', 'resources.json');

/**
 * The copy shipped inside the npm package: `npm run build` (and so `npm pack`) copies the file
 * above to `dist/lib/resources.json`, next to the compiled `resources.js`
 * (`scripts/package-resources.js`). Running from source (`lib/*.ts` through tsx), no copy
 * exists beside this file and the repository's file is read, so a stale copy can never shadow
 * an edit; `test/package.test.ts` checks the packaged copy equals the source of truth.
 */
export const PACKAGED_RESOURCES_JSON_PATH = path.join(__dirname, 'resources.json');

/** The file the construct reads: the packaged copy when there is one, else the repository's. */
export const RESOURCES_JSON_PATH = fs.existsSync(PACKAGED_RESOURCES_JSON_PATH) ? PACKAGED_RESOURCES_JSON_PATH : REPO_RESOURCES_JSON_PATH;

/**
 * The package's root directory (where its package.json is): `infra/` when run from source,
 * the installed package's directory when run from `dist/lib/`. The placeholder assets live there.
 */
export const PACKAGE_ROOT = findPackageRoot(__dirname);

function findPackageRoot(from: string): string {
  let dir = from;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
}

export type AttributeType = 'S' | 'N' | 'B';

export interface KeyAttr {
  readonly name: string;
  readonly type: AttributeType;
}

export interface IndexDef {
  readonly name: string;
  readonly partitionKey: KeyAttr;
  readonly sortKey: KeyAttr;
  readonly projection: 'ALL' | 'KEYS_ONLY';
  readonly purpose?: string;
}

export interface TableDef {
  readonly envVar: string;
  readonly defaultName: string;
  readonly partitionKey: KeyAttr;
  readonly sortKey: KeyAttr;
  readonly ttlAttribute: string;
  readonly indexes: readonly IndexDef[];
}

export interface QueueDefs {
  readonly namePrefixEnvVar: string;
  readonly defaultPrefix: string;
  readonly dlqSuffix: string;
  /** Suffix of each pool's outcome-notification queue (docs/outcomes.md, "HTTPS notifications"). */
  readonly notifySuffix: string;
  readonly maxReceiveCount: number;
  readonly messageRetentionSeconds: number;
  readonly visibilityTimeoutSeconds: number;
  readonly defaultPools: readonly string[];
}

/** Env variable names by logical name; README.md "Settings" documents each. */
export interface EnvNames {
  readonly jobsTable: string;
  readonly executionsTable: string;
  readonly queuePrefix: string;
  readonly pools: string;
  readonly shards: string;
  readonly scanFunction: string;
  readonly tickInProcessMaxShards: string;
  readonly shardsPerScan: string;
  readonly catchUpGlobal: string;
  readonly catchUpPerTenant: string;
  readonly fairQueues: string;
  readonly pool: string;
  readonly workerId: string;
  readonly leaseSecs: string;
  readonly skewMarginMs: string;
  readonly maxTotalRunSecs: string;
  readonly tenantMaxRunning: string;
  readonly workerCapacity: string;
  readonly runNameKey: string;
  readonly poolCapacity: string;
  readonly devLoopbackTargets: string;
  readonly privateTargetCidrs: string;
  readonly tenantTargets: string;
  readonly eventBus: string;
  readonly workerSlots: string;
  readonly shutdownGraceSecs: string;
  readonly tenantClaim: string;
  readonly tenancy: string;
  readonly tenantTag: string;
  readonly quotaMaxJobs: string;
  readonly operatorTenants: string;
  readonly quotaMinIntervalSecs: string;
  readonly quotaApiExecutionsPerMinute: string;
  readonly quotaTriggersPerMinute: string;
  readonly quotaExecutionsPerHour: string;
  readonly tenantApiRps: string;
  readonly apiId: string;
  readonly backpressureDeferDepth: string;
  readonly backpressureDeferSecs: string;
  readonly backpressureSaturatedDepth: string;
  readonly consoleIssuer: string;
  readonly consoleClientId: string;
  readonly consoleLogGroups: string;
  /** The tenant access role workers assume, with the session tag `sundial-tenant`, to call targets (docs/tenancy.md). */
  readonly tenantRoleArn: string;
  /** Comma-separated globs of the stack's own Lambda functions, which no job may name as a target. */
  readonly ownFunctions: string;
  /** Tenants with a role of their own (JSON tenant → role ARN). */
  readonly tenantRoles: string;
  /** The stack's account id (completes bare function names into ARNs). */
  readonly accountId: string;
  /** Dev and tests only: the ECS worker's diagnostic handlers (never set by the construct). */
  readonly diagnosticHandlers: string;
  readonly apiUrl: string;
  readonly token: string;
  readonly auth: string;
  readonly tenant: string;
  readonly root: string;
  readonly emulatorPort: string;
  readonly eventSources: string;
}

/** A logical setting name (a key of `env`). */
export type SettingName = keyof EnvNames;

export interface Defaults {
  readonly shards: number;
  readonly horizonSeconds: number;
  readonly tickInProcessMaxShards: number;
  readonly shardsPerScan: number;
  readonly catchUpGlobal: number;
  readonly catchUpPerTenant: number;
  readonly fairQueues: boolean;
  readonly pool: string;
  readonly leaseSecs: number;
  readonly skewMarginMs: number;
  readonly devLoopbackTargets: boolean;
  readonly workerSlots: number;
  readonly shutdownGraceSecs: number;
  readonly tenantClaim: string;
  readonly tenancy: string;
  readonly tenantTag: string;
  readonly quotaMaxJobs: number;
  readonly quotaMinIntervalSecs: number;
  readonly quotaApiExecutionsPerMinute: number;
  readonly quotaTriggersPerMinute: number;
  readonly quotaExecutionsPerHour: number;
  readonly tenantApiRps: number;
  readonly backpressureDeferDepth: number;
  readonly backpressureDeferSecs: number;
  readonly backpressureSaturatedDepth: number;
  readonly apiUrl: string;
  readonly emulatorPort: number;
}

/** A Rust binary that reads settings. */
export type Binary = 'tick' | 'worker' | 'worker-ecs' | 'api' | 'ingest' | 'sundial';

/** One typed loader of `sundial_core::config` (or the CLI's arguments): the names it reads. */
export interface EnvLoader {
  readonly binaries: readonly Binary[];
  readonly names: readonly SettingName[];
}

/** The EMF metric catalogue shared with the Rust code. */
export interface MetricDefs {
  readonly namespace: string;
  readonly poolDimension: string;
  /** The dimension of the per-resource metrics (resource limits, docs/resources.md). */
  readonly resourceDimension: string;
  readonly names: {
    /** Enqueue − due of each fire, floored at 0 (tick). */
    readonly scheduleLag: string;
    /** Worker start − scheduled second, first attempts (the precision SLO). */
    readonly startLag: string;
    /** Claim − when the message became deliverable. */
    readonly queueWait: string;
    readonly duration: string;
    readonly executionsSucceeded: string;
    readonly executionsFailed: string;
    readonly executionsDead: string;
    readonly retries: string;
    /** Executions claimed by a new worker after the previous lease expired. */
    readonly leaseTakeovers: string;
    readonly staleTokenRejections: string;
    /** Fires handled by a misfire policy (missed by more than its tolerance). */
    readonly misfires: string;
  } & Record<string, string>;
}

export interface Resources {
  readonly tables: { readonly jobs: TableDef; readonly executions: TableDef } & Record<string, TableDef>;
  readonly queues: QueueDefs;
  readonly env: EnvNames;
  readonly defaults: Defaults;
  /** Which loader reads which names, and which binaries run it (`$comment` aside). */
  readonly envLoaders: Record<string, EnvLoader>;
  /** Names a deployed binary reads that the construct never sets. */
  readonly cdkLeavesUnset: { readonly names: readonly SettingName[] };
  readonly metrics: MetricDefs;
}

/** Reads and checks the definition. Throws with the file name on anything the construct relies on. */
export function loadResources(file: string = RESOURCES_JSON_PATH): Resources {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read Sundial's resource definition ${file}: ${(e as Error).message}`);
  }
  const r = raw as Resources;
  const fail = (what: string): never => {
    throw new Error(`${file}: ${what}`);
  };
  for (const m of ['scheduleLag', 'startLag', 'queueWait', 'shardsFailed', 'executionsSucceeded', 'executionsFailed', 'executionsDead', 'leaseTakeovers', 'misfires']) {
    if (!r.metrics?.names?.[m]) fail(`metrics.names.${m} is missing`);
  }
  for (const t of ['jobs', 'executions']) {
    const def = r.tables?.[t];
    if (!def) fail(`tables.${t} is missing`);
    if (!def.partitionKey?.name || !def.sortKey?.name) fail(`tables.${t} needs partitionKey and sortKey`);
    if (!def.envVar || !def.defaultName || !def.ttlAttribute) fail(`tables.${t} needs envVar, defaultName, ttlAttribute`);
    for (const ix of def.indexes ?? []) {
      if (ix.projection !== 'ALL' && ix.projection !== 'KEYS_ONLY') fail(`index ${t}.${ix.name}: projection ${ix.projection}`);
    }
  }
  const q = r.queues;
  if (!q || !q.namePrefixEnvVar || q.dlqSuffix === undefined || !q.notifySuffix || !(q.maxReceiveCount > 0)) fail('queues is incomplete');
  for (const [name, loader] of loaders(r)) {
    if (!Array.isArray(loader.binaries) || !Array.isArray(loader.names)) fail(`envLoaders.${name} needs binaries and names`);
    for (const k of loader.names) if (!r.env?.[k]) fail(`envLoaders.${name}: env.${k} is missing`);
  }
  for (const k of ['jobsTable', 'executionsTable', 'queuePrefix', 'pools', 'shards', 'scanFunction', 'pool', 'privateTargetCidrs'] as const) {
    if (!r.env?.[k]) fail(`env.${k} is missing`);
  }
  if (r.env.jobsTable !== r.tables.jobs.envVar) fail('env.jobsTable differs from tables.jobs.envVar');
  if (r.env.executionsTable !== r.tables.executions.envVar) fail('env.executionsTable differs from tables.executions.envVar');
  if (r.env.queuePrefix !== q.namePrefixEnvVar) fail('env.queuePrefix differs from queues.namePrefixEnvVar');
  return r;
}

/** The loaders of `envLoaders`, without its `$comment`. */
function loaders(r: Resources): [string, EnvLoader][] {
  return Object.entries(r.envLoaders ?? {}).filter(([k]) => !k.startsWith('$'));
}

/**
 * The settings `binary` reads (every loader it runs), as logical names, without the ones the
 * construct leaves unset: exactly what the construct must set on a function running it.
 */
export function settingsOf(binary: Binary, r: Resources = resources()): SettingName[] {
  const unset = new Set<string>(r.cdkLeavesUnset?.names ?? []);
  const names = loaders(r)
    .filter(([, l]) => l.binaries.includes(binary))
    .flatMap(([, l]) => l.names)
    .filter((n) => !unset.has(n));
  return [...new Set(names)];
}

/** The definition, read once per process. */
let cached: Resources | undefined;
export function resources(): Resources {
  cached ??= loadResources();
  return cached;
}

/** Queue of pool `p`: `{prefix}{p}` (the Rust side derives the same name from the prefix env var). */
export function queueName(prefix: string, pool: string): string {
  return `${prefix}${pool}`;
}

/** Low lane of pool `p`: `{prefix}{p}-low` (low priority and backfills; docs/priority.md). */
export function lowQueueName(prefix: string, pool: string): string {
  return `${prefix}${pool}-low`;
}

/** Outcome-notification queue of pool `p`: `{prefix}{p}{notifySuffix}` (docs/outcomes.md, "HTTPS notifications"). */
export function notifyQueueName(prefix: string, pool: string, r: Resources = resources()): string {
  return `${prefix}${pool}${r.queues.notifySuffix}`;
}

/** Dead-letter queue of pool `p`: `{prefix}{p}{dlqSuffix}`. */
export function dlqName(prefix: string, pool: string, r: Resources = resources()): string {
  return `${prefix}${pool}${r.queues.dlqSuffix}`;
}

/** Same rule as `sundial_core::config::validate_pool_name`: pool names become queue names. */
export function validatePoolName(p: string): string | undefined {
  if (p.length === 0 || p.length > 40 || !/^[A-Za-z0-9_-]+$/.test(p)) {
    return `pool name ${JSON.stringify(p)} must be 1-40 characters of A-Z, a-z, 0-9, '-' or '_'`;
  }
  return undefined;
}
