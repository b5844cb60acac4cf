/**
 * The env contract: every setting a binary reads (resources.json `envLoaders`) gets its value
 * here, from the props or their documented defaults (README.md "Settings"), validated at synth.
 */
import { Annotations, ArnFormat, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { Binary, resources, SettingName, settingsOf } from '../resources';
import type { Sundial } from './context';
import { ECS_MAX_HEALTHY_PERCENT, ECS_STOP_TIMEOUT, LAMBDA_BATCH_SIZE } from './limits';
import { ApiAuth, FunctionOverridesProps, PoolProps, SundialSchedulerProps, TargetAllow, WorkerProps } from './props';

/** Setting values by name (resources.json `env` maps each name to its variable). */
export type Settings = Partial<Record<SettingName, string>>;

/** The env of one binary: its settings, `perFunction` first, then the shared values. */
export type EnvOf = (binary: Binary, perFunction?: Settings) => Record<string, string>;

/** What the shared settings name that the construct made before them. */
export interface Named {
  readonly jobsTable: string;
  readonly executionsTable: string;
  readonly queuePrefix: string;
  readonly shards: number;
  readonly eventBusName: string;
}

/** Every setting a binary reads gets a value here or per function; a missing one fails synth. */
export function envFactory(settings: Settings): EnvOf {
  const r = resources();
  return (binary, perFunction = {}) => {
    const env: Record<string, string> = {};
    for (const name of settingsOf(binary, r)) {
      const value = perFunction[name] ?? settings[name];
      if (value === undefined) throw new Error(`no value for setting ${name} (${r.env[name]}) of ${binary}`);
      env[r.env[name]] = value;
    }
    return env;
  };
}

/** The value of every setting that is the same on all functions, validated at synth. */
export function settingValues(s: Sundial, poolProps: PoolProps[], named: Named): Settings {
  const { props } = s;
  const tenantLimits = tenantMaxRunning(props.workers ?? {});
  const claim = tenantClaimOf(s);
  warnUnboundedTenants(s);
  // The groups are checked in this order: of several bad props, the same one is reported first.
  return {
    ...tickSettings(props, poolProps, named),
    ...workerSettings(props, poolProps, tenantLimits),
    ...identitySettings(s, claim, named.eventBusName),
    ...quotaSettings(props),
  };
}

/** The props that say what the tenant access role may reach at all (tenancy.ts). */
const ALLOWED_TARGET_PROPS = [
  'allowedTargetFunctionArns', 'allowedTargetQueueArns', 'allowedTargetEventBusArns', 'allowedTargetTopicArns',
  'allowedTargetStateMachineArns', 'allowedTargetEcsClusterArns', 'allowedTargetTaskDefinitionArns',
  'allowedTargetEcsPassRoleArns', 'allowedTargetSecretArns',
] as const;

/**
 * Every deployment serves tenants (whatever `apiAuth` says), and without `tenantTargets` every
 * tenant may use everything the deployment offers (review M3): warned at synth, and more
 * pointedly when `allowedTarget*Arns` give the tenant access role targets that nothing but each
 * target's `sundial-tenant` tag then divides between tenants.
 */
function warnUnboundedTenants(s: Sundial): void {
  const { props } = s;
  if (props.tenantTargets !== undefined) return;
  Annotations.of(s.scope).addWarningV2(
    'sundial:tenant-targets-unset',
    "tenantTargets is unset: every tenant may use every pool, in-process handler, public webhook host, ECS subnet and security group, and the deployment's privateTargetCidrs. Set tenantTargets (a '*' entry covers the tenants without one of their own; docs/tenancy.md).",
  );
  const given = ALLOWED_TARGET_PROPS.filter((p) => (props[p]?.length ?? 0) > 0);
  if (given.length > 0) {
    Annotations.of(s.scope).addWarningV2(
      'sundial:allowed-targets-without-tenant-targets',
      `${given.join(', ')} without tenantTargets: any tenant may name any of those targets in its jobs, and only each target's sundial-tenant tag (IAM, and the workers' check) keeps it from another tenant's. Say per tenant which targets it may call with tenantTargets (docs/tenancy.md).`,
    );
  }
}

function int(what: string, v: number, lo: number, hi: number): string {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${what} must be an integer between ${lo} and ${hi}, got ${v}`);
  return String(v);
}

/** `SUNDIAL_TENANT_MAX_RUNNING`: the default, then `tenant=limit` pairs. */
function tenantMaxRunning(w: WorkerProps): string {
  const limits = w.tenantMaxRunning;
  return [
    ...(limits?.default !== undefined ? [int('workers.tenantMaxRunning.default', limits.default, 1, 1_000_000)] : []),
    ...Object.entries(limits?.tenants ?? {}).map(([t, n]) => {
      if (!/^[^,=\s]+$/.test(t)) throw new Error(`workers.tenantMaxRunning: tenant ${JSON.stringify(t)} is not a tenant id`);
      return `${t}=${int(`workers.tenantMaxRunning.tenants.${t}`, n, 1, 1_000_000)}`;
    }),
  ].join(',');
}

function tenantClaimOf(s: Sundial): string {
  const { props } = s;
  const claim = props.tenantClaim ?? resources().defaults.tenantClaim;
  if (claim.length === 0) throw new Error('tenantClaim must not be empty');
  if (props.apiAuth.kind === 'jwt' && claim.startsWith('custom:')) {
    Annotations.of(s.scope).addWarningV2(
      'sundial:tenant-claim-custom',
      `tenantClaim ${claim} is a Cognito custom attribute, which users can change on their own account unless it is read-only for the app client: a user who can write it can switch tenant. Remove it from the app client's write attributes, or set the tenant claim from the user's group with a pre-token-generation trigger (docs/api.md, Tenancy).`,
    );
  }
  return claim;
}

function tickSettings(props: SundialSchedulerProps, poolProps: PoolProps[], named: Named): Settings {
  const d = resources().defaults;
  const tick = props.tick ?? {};
  return {
    jobsTable: named.jobsTable,
    executionsTable: named.executionsTable,
    queuePrefix: named.queuePrefix,
    pools: poolProps.map((p) => p.name).join(','),
    shards: String(named.shards),
    tickInProcessMaxShards: int('tick.inProcessMaxShards', tick.inProcessMaxShards ?? d.tickInProcessMaxShards, 1, 65_536),
    shardsPerScan: int('tick.shardsPerScan', tick.shardsPerScan ?? d.shardsPerScan, 1, 65_536),
    catchUpGlobal: int('tick.catchUpGlobal', tick.catchUpGlobal ?? d.catchUpGlobal, 1, Number.MAX_SAFE_INTEGER),
    catchUpPerTenant: int('tick.catchUpPerTenant', tick.catchUpPerTenant ?? d.catchUpPerTenant, 1, Number.MAX_SAFE_INTEGER),
    fairQueues: String(tick.fairQueues ?? d.fairQueues),
  };
}

function workerSettings(props: SundialSchedulerProps, poolProps: PoolProps[], tenantLimits: string): Settings {
  const d = resources().defaults;
  const w = props.workers ?? {};
  return {
    leaseSecs: int('workers.lease (seconds)', w.lease?.toSeconds() ?? d.leaseSecs, 2, 43_200),
    skewMarginMs: int('workers.skewMargin (ms)', w.skewMargin?.toMilliseconds() ?? d.skewMarginMs, 0, 60_000),
    // Empty = unset: the budget is the job's maxAttempts × timeoutSecs, no tenant limit.
    maxTotalRunSecs: w.maxTotalRun !== undefined ? int('workers.maxTotalRun (seconds)', w.maxTotalRun.toSeconds(), 1, 10_000_000) : '',
    tenantMaxRunning: tenantLimits,
    workerCapacity: String(workerCapacity(poolProps)),
    poolCapacity: poolProps.map((p) => `${p.name}=${poolCapacity(p)}`).join(','),
    privateTargetCidrs: (props.privateTargetCidrs ?? []).map((c) => {
      // The syntax only (the workers parse it again and fail to start on a bad one).
      if (!/^[0-9A-Fa-f:.]+(\/\d{1,3})?$/.test(c)) throw new Error(`privateTargetCidrs: ${JSON.stringify(c)} is not an IP network`);
      return c;
    }).join(','),
    tenantTargets: tenantTargets(props.tenantTargets),
    tenantRoles: tenantRoles(props.tenantRoles),
  };
}

function identitySettings(s: Sundial, claim: string, eventBusName: string): Settings {
  const { props } = s;
  const stack = Stack.of(s.scope);
  return {
    // Every Sundial function the construct names is `{stackName}-...`; the workers get the
    // exact ARNs too (`ownFunctionGlobs`).
    ownFunctions: stack.formatArn({ service: 'lambda', resource: 'function', resourceName: `${stack.stackName}-*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
    accountId: stack.account,

    eventBus: eventBusName,
    tenantClaim: claim,
    tenancy: tenancyOf(props.apiAuth),
    tenantTag: tenantTagOf(props.apiAuth, resources().defaults.tenantTag),
    // The web console signs in against the API's JWT issuer with its own public client id.
    consoleIssuer: props.apiAuth.kind === 'jwt' ? props.apiAuth.issuer : '',
    consoleClientId: consoleClientIdOf(props),
  };
}

function quotaSettings(props: SundialSchedulerProps): Settings {
  const d = resources().defaults;
  const q = props.quotas ?? {};
  const bp = props.backpressure ?? {};
  return {
    quotaMaxJobs: int('quotas.maxJobs', q.maxJobs ?? d.quotaMaxJobs, 1, 4_294_967_295),
    quotaMinIntervalSecs: int('quotas.minIntervalSecs', q.minIntervalSecs ?? d.quotaMinIntervalSecs, 1, 86_400),
    quotaApiExecutionsPerMinute: int('quotas.apiExecutionsPerMinute', q.apiExecutionsPerMinute ?? d.quotaApiExecutionsPerMinute, 1, 4_294_967_295),
    quotaTriggersPerMinute: int('quotas.triggersPerMinute', q.triggersPerMinute ?? d.quotaTriggersPerMinute, 1, 4_294_967_295),
    quotaExecutionsPerHour: int('quotas.executionsPerHour', q.executionsPerHour ?? d.quotaExecutionsPerHour, 1, 4_294_967_295),
    tenantApiRps: int('quotas.tenantRequestsPerSecond', q.tenantRequestsPerSecond ?? d.tenantApiRps, 0, 4_294_967_295),
    operatorTenants: (props.operatorTenants ?? []).map((t) => {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(t)) throw new Error(`operatorTenants: ${JSON.stringify(t)} is not a tenant id`);
      return t;
    }).join(','),
    backpressureDeferDepth: int('backpressure.deferDepth', bp.deferDepth ?? d.backpressureDeferDepth, 1, Number.MAX_SAFE_INTEGER),
    backpressureDeferSecs: int('backpressure.deferSecs', bp.deferSecs ?? d.backpressureDeferSecs, 1, 900),
    backpressureSaturatedDepth: int('backpressure.saturatedDepth', bp.saturatedDepth ?? d.backpressureSaturatedDepth, 1, Number.MAX_SAFE_INTEGER),
  };
}

/**
 * The most executions all the stack's workers can run at once (`SUNDIAL_WORKER_CAPACITY`):
 * each Lambda pool's event sources (main and low lane) at their maximum concurrency with a
 * full batch of 10, and each ECS pool's most tasks × slots, doubled because a deployment
 * starts the new tasks before the old ones stop (`maxHealthyPercent` 200). A tenant whose
 * running limit is at least this is never gated: the workers cannot exceed it.
 */
function workerCapacity(poolProps: PoolProps[]): number {
  return poolProps.reduce((sum, p) => sum + poolCapacity(p), 0);
}

/**
 * The most executions one pool's workers can run at once (`SUNDIAL_POOL_CAPACITY`, pool by
 * pool), counted as for `SUNDIAL_WORKER_CAPACITY`. A tenant whose `tenantTargets` pools (its
 * cell) sum to no more than its running limit is never gated.
 */
function poolCapacity(p: PoolProps): number {
  const d = resources().defaults;
  if ((p.kind ?? 'lambda') === 'lambda') {
    return ((p.maxConcurrency ?? 10) + (p.lowMaxConcurrency ?? 2)) * LAMBDA_BATCH_SIZE;
  }
  return (p.maxConcurrency ?? 1) * (ECS_MAX_HEALTHY_PERCENT / 100) * (p.slots ?? d.workerSlots);
}

/** `SUNDIAL_TENANT_ROLES`: tenant → role ARN as JSON, validated at synth (empty = unset). */
function tenantRoles(t: Record<string, string> | undefined): string {
  if (t === undefined) return '';
  for (const [tenant, arn] of Object.entries(t)) {
    if (!/^arn:[a-z-]+:iam::\d{12}:role\/.+$/.test(arn)) throw new Error(`tenantRoles.${tenant}: ${JSON.stringify(arn)} is not an IAM role ARN`);
  }
  return JSON.stringify(t);
}

/**
 * The fields of one tenant's allowlist: those of functions/model/src/outbound/allow.rs
 * (`TargetAllow`), which refuses others. All lists of globs but `ecsPublicIp`, a boolean.
 */
const TARGET_ALLOW_FIELDS = [
  'lambda', 'sqs', 'http', 'sns', 'stepFunctions', 'ecsTaskDefinitions', 'ecsClusters', 'eventBridge', 'secrets', 'inProcess', 'pools', 'cidrs',
  'ecsSubnets', 'ecsSecurityGroups', 'ecsPublicIp',
];

/** The ECS network ids an allowlist names: an id of that prefix (hex, `*` globs within it) or `*`. */
const ECS_NETWORK_IDS: Record<string, { prefix: string; what: string }> = {
  ecsSubnets: { prefix: 'subnet-', what: 'subnet ids' },
  ecsSecurityGroups: { prefix: 'sg-', what: 'security group ids' },
};

/** `SUNDIAL_TENANT_TARGETS`: the allowlists as JSON, validated at synth (empty = unset). */
function tenantTargets(t: Record<string, TargetAllow> | undefined): string {
  if (t === undefined) return '';
  for (const [tenant, allow] of Object.entries(t)) {
    for (const [kind, globs] of Object.entries(allow) as Array<[string, unknown]>) {
      const kinds = TARGET_ALLOW_FIELDS;
      if (!kinds.includes(kind)) throw new Error(`tenantTargets.${tenant}: unknown kind ${kind} (${kinds.join(', ')})`);
      if (kind === 'ecsPublicIp') {
        if (typeof globs !== 'boolean') throw new Error(`tenantTargets.${tenant}.ecsPublicIp must be true or false, got ${JSON.stringify(globs)}`);
        continue;
      }
      if (!Array.isArray(globs) || globs.some((g) => typeof g !== 'string' || g.length === 0)) {
        throw new Error(`tenantTargets.${tenant}.${kind} must be a list of non-empty globs`);
      }
      const ids = ECS_NETWORK_IDS[kind];
      if (ids && globs.some((g: string) => g !== '*' && !new RegExp(`^${ids.prefix}[0-9a-f*]+$`).test(g))) {
        throw new Error(`tenantTargets.${tenant}.${kind}: ${ids.what} (${ids.prefix}0123abcd…) or * globs of them, got ${JSON.stringify(globs)}`);
      }
      // Matched against ARNs, as the Rust side refuses otherwise when it reads the setting.
      const arnKinds = ['sns', 'stepFunctions', 'ecsTaskDefinitions', 'ecsClusters', 'eventBridge', 'secrets'];
      if (arnKinds.includes(kind) && globs.some((g: string) => g !== '*' && !g.startsWith('arn:'))) {
        throw new Error(`tenantTargets.${tenant}.${kind}: globs match ARNs, so each must be '*' or start with arn: (got ${JSON.stringify(globs)})`);
      }
      if (kind === 'sqs' && globs.some((g) => /^https?:|\//.test(g))) {
        throw new Error(`tenantTargets.${tenant}.sqs: globs match queue ARNs (arn:aws:sqs:<region>:<account>:<name>), not URLs`);
      }
      if (kind === 'cidrs' && globs.some((c) => !/^[0-9A-Fa-f:.]+(\/\d{1,3})?$/.test(c))) {
        throw new Error(`tenantTargets.${tenant}.cidrs: ${JSON.stringify(globs)} holds something that is not an IP network`);
      }
    }
  }
  return JSON.stringify(t);
}

/** The ECS poll loop's settings of one pool. */
export function ecsSettings(p: PoolProps): Settings {
  const d = resources().defaults;
  const slots = p.slots ?? d.workerSlots;
  if (!Number.isInteger(slots) || slots < 1 || slots > 1000) throw new Error(`pool ${p.name}: slots must be an integer between 1 and 1000`);
  const grace = p.shutdownGrace?.toSeconds() ?? d.shutdownGraceSecs;
  if (!Number.isInteger(grace) || grace < 0 || grace >= ECS_STOP_TIMEOUT.toSeconds()) {
    throw new Error(`pool ${p.name}: shutdownGrace must be whole seconds below the ${ECS_STOP_TIMEOUT.toSeconds()} s stop timeout`);
  }
  return { workerSlots: String(slots), shutdownGraceSecs: String(grace) };
}

/**
 * `SUNDIAL_OWN_FUNCTIONS`: globs of the stack's own functions, which the workers refuse as job
 * targets. The tick, scan, reconciler and api by name (and their versions and aliases); the
 * workers, which cannot name each other (nor themselves) without a dependency cycle, by the
 * prefix CloudFormation gives the functions it names, `{stackName}-`.
 */
export function ownFunctionGlobs(scope: Construct, named: lambda.Function[], overrides: FunctionOverridesProps): string {
  const stack = Stack.of(scope);
  const arnOf = (name: string) => stack.formatArn({ service: 'lambda', resource: 'function', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  const arns = named.flatMap((f) => [arnOf(f.functionName), `${arnOf(f.functionName)}:*`]);
  // A worker given its own name (functionOverrides.workers.functionName) is named as such.
  const workerName = overrides.workers?.functionName ?? overrides.all?.functionName;
  const workers = workerName !== undefined ? [arnOf(workerName), `${arnOf(workerName)}:*`] : [];
  return [...arns, arnOf(`${stack.stackName}-*`), ...workers].join(',');
}

/** `SUNDIAL_TENANCY` for an `ApiAuth`. */
export function tenancyOf(auth: ApiAuth): 'jwt' | 'iam-principal-tag' | 'iam-account' {
  if (auth.kind === 'jwt') return 'jwt';
  return auth.tenancy === 'account' ? 'iam-account' : 'iam-principal-tag';
}

function consoleClientIdOf(props: SundialSchedulerProps): string {
  const id = props.consoleClientId ?? '';
  if (id !== '' && props.apiAuth.kind !== 'jwt') throw new Error('consoleClientId: the console signs in with OIDC, which needs apiAuth jwt');
  if (!/^[\x21-\x7e]{0,256}$/.test(id)) throw new Error(`consoleClientId ${JSON.stringify(id)} is not a client id`);
  return id;
}

export function tenantTagOf(auth: ApiAuth, fallback: string): string {
  const tag = auth.kind === 'iam' ? auth.tenantTag ?? fallback : fallback;
  // IAM tag keys: 1-128 characters of letters, digits, spaces and _.:/=+-@
  if (!/^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,128}$/u.test(tag)) throw new Error(`apiAuth.tenantTag ${JSON.stringify(tag)} is not a valid IAM tag key`);
  return tag;
}
