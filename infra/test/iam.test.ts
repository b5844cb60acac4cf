/**
 * Least privilege, proven from the calls: every AWS call a Sundial function made anywhere in the
 * Rust test suite must be allowed by that function's role in the synthesized template.
 *
 * The emulators check no IAM, so without this a role missing a permission passes every test and
 * fails on a real account (issue 16: the API role had no `sqs:SendMessage` and no
 * `dynamodb:BatchGetItem`, so trigger-now and `GET /v1/jobs` answered 500 when deployed).
 *
 * The recording: `scripts/test.sh` sets `SUNDIAL_IAM_RECORD` for both emulator passes and every
 * entry point (tick, scan, reconciler, worker, api) runs in a scope that `sundial_core::access`
 * records: one JSON line per distinct (role, action, resource[, leading key]). Resources are
 * recorded by what they are to Sundial (`table:jobs`, `queue:pool`, `function:target`, ...)
 * because every test names its own tables and queues; here each is mapped to the ARN the
 * template gives it, and the role's statements are evaluated as IAM would: actions and
 * resources by glob, `Deny` first, and `dynamodb:LeadingKeys` conditions against the recorded
 * key. One other condition is met, and only for the role `tenant` (calls made through a session
 * of the tenant access role, docs/tenancy.md): `StringEquals aws:ResourceTag/sundial-tenant =
 * ${aws:PrincipalTag/sundial-tenant}`, because the worker checks the target's tag against the
 * session's tenant before every such call (docs/iam.md, "What it does not cover"). Request
 * context keys (`ecs:cluster`, `ecs:CreateAction`, `iam:PassedToService`) are compared, with
 * `StringEquals`/`StringLike`/`ArnEquals`/`ArnLike` as IAM does, against the call's values
 * (`requestContextOf`: an `ecs` call names the target cluster; a synthetic call may give its own);
 * a key the call has no value for, and any other condition, counts as not satisfied. A call that
 * IAM authorizes as more than one action is checked as each (`authorizationsOf`: `ecs:RunTask`
 * also needs `ecs:TagResource` for the tags it applies and `iam:PassRole` for the task
 * definition's roles).
 *
 * Without `SUNDIAL_IAM_RECORD` (e.g. `npm test` alone) the check is skipped with a notice;
 * `scripts/test.sh`, and so CI, always sets it.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import { App, CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';
import { CDK_JSON_CONTEXT, fakeAssetsDir } from './helpers';

const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';
const TARGET_FUNCTION = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:sundial-iam-target`;
const TARGET_QUEUE = `arn:aws:sqs:${REGION}:${ACCOUNT}:sundial-iam-target`;
/** A tenant's bus an `eventBridge` target puts on (`allowedTargetEventBusArns`). */
const TARGET_BUS = `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/sundial-iam-target`;
/** A tenant's topic an `sns` target publishes to (`allowedTargetTopicArns`). */
const TARGET_TOPIC = `arn:aws:sns:${REGION}:${ACCOUNT}:sundial-iam-target`;
/** A tenant's state machine a `stepFunctions` target starts (`allowedTargetStateMachineArns`). */
const TARGET_MACHINE = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:sundial-iam-target`;
/** One of its executions, as a `stepFunctions` target names them (tracked with DescribeExecution). */
const TARGET_MACHINE_RUN = `arn:aws:states:${REGION}:${ACCOUNT}:execution:sundial-iam-target:acme_settle_1764469800000-r1`;
/** A tenant's cluster an `ecs` target runs its task on (`allowedTargetEcsClusterArns`). */
const TARGET_CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/sundial-iam-target`;
/** Another cluster, not allowed. */
const OTHER_CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/sundial-iam-other`;
/** A tenant's task definition family (`allowedTargetTaskDefinitionArns`). */
const TARGET_TASK_FAMILY = `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/sundial-iam-target`;
/**
 * One revision of it: what an `ecs` target names (`…:task-definition/<family>:<revision>`), and
 * the resource RunTask and ListTagsForResource are authorized on.
 */
const TARGET_TASK_DEFINITION = `${TARGET_TASK_FAMILY}:3`;
/** A task RunTask started on the cluster (tracked with DescribeTasks, stopped with StopTask). */
const TARGET_TASK = `arn:aws:ecs:${REGION}:${ACCOUNT}:task/sundial-iam-target/0123456789abcdef0123456789abcdef`;
/** The task definition's task and execution roles, which RunTask passes (`allowedTargetEcsPassRoleArns`). */
const TARGET_TASK_ROLE = `arn:aws:iam::${ACCOUNT}:role/sundial-iam-target-task`;
const TARGET_EXECUTION_ROLE = `arn:aws:iam::${ACCOUNT}:role/sundial-iam-target-execution`;
/** A tenant's event queue (`eventSources`), recorded by the ingest as `queue:source`. */
const SOURCE_QUEUE = `arn:aws:sqs:${REGION}:${ACCOUNT}:acme-files`;
const TARGET_SECRETS = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:sundial-webhooks/*`;
const A_TARGET_SECRET = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:sundial-webhooks/signing-AbCdEf`;

/** One recorded call (`sundial_core::access::Access`). */
export interface Access {
  /**
   * `handler`: an in-process handler's own calls (its tables), granted by the deployer, not checked.
   * `tenant`: a worker's calls through its tenant access session (targets and webhook secrets).
   */
  readonly role: 'tick' | 'scan' | 'reconcile' | 'worker' | 'api' | 'ingest' | 'tenant' | 'handler';
  readonly action: string;
  readonly resource: string;
  readonly leadingKey?: string;
  /**
   * Request context keys of the call (`ecs:cluster`, ...) over those `requestContextOf` gives it;
   * the recording carries none (synthetic calls only).
   */
  readonly context?: Readonly<Record<string, string>>;
}

export function readRecording(file: string): Access[] {
  const seen = new Set<string>();
  const out: Access[] = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim() || seen.has(line)) continue;
    seen.add(line);
    out.push(JSON.parse(line) as Access);
  }
  return out;
}

const arr = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM's glob: `*` any run of characters (`/` and `:` included), `?` one character. */
export function globMatch(pattern: string, value: string): boolean {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`, 's').test(value);
}

type Json = any;

/** Resolves CloudFormation intrinsics of a policy resource to a concrete ARN. */
class Resolver {
  private readonly arns = new Map<string, string>();

  constructor(resources: Record<string, { Type: string }>) {
    for (const [id, r] of Object.entries(resources)) {
      const arn =
        r.Type === 'AWS::DynamoDB::Table'
          ? `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${id}`
          : r.Type === 'AWS::SQS::Queue'
            ? `arn:aws:sqs:${REGION}:${ACCOUNT}:${id}`
            : r.Type === 'AWS::Lambda::Function'
              ? `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${id}`
              : r.Type === 'AWS::IAM::Role'
                ? `arn:aws:iam::${ACCOUNT}:role/${id}`
                : `arn:aws:cloudformation:${REGION}:${ACCOUNT}:${r.Type}/${id}`;
      this.arns.set(id, arn);
    }
  }

  arnOf(id: string): string {
    const a = this.arns.get(id);
    if (!a) throw new Error(`no resource ${id} in the template`);
    return a;
  }

  resolve(e: Json): string {
    if (typeof e === 'string') return e;
    if (e?.Ref !== undefined) {
      const pseudo: Record<string, string> = { 'AWS::Region': REGION, 'AWS::AccountId': ACCOUNT, 'AWS::Partition': 'aws', 'AWS::URLSuffix': 'amazonaws.com' };
      if (pseudo[e.Ref]) return pseudo[e.Ref];
      return `<ref ${e.Ref}>`; // a name or URL: matches no ARN
    }
    if (e?.['Fn::GetAtt']) {
      const [id, attr] = e['Fn::GetAtt'];
      return attr === 'Arn' ? this.arnOf(id) : `<${id}.${attr}>`;
    }
    if (e?.['Fn::Join']) {
      const [sep, parts] = e['Fn::Join'];
      return (parts as Json[]).map((p) => this.resolve(p)).join(sep);
    }
    throw new Error(`cannot resolve ${JSON.stringify(e)}`);
  }
}

interface Statement {
  readonly effect: 'Allow' | 'Deny';
  readonly actions: string[];
  readonly resources: string[];
  readonly condition?: Record<string, Record<string, string | string[]>>;
}

/** The statements of every inline policy attached to `role`. */
function statementsOf(stack: Stack, json: Json, role: iam.IRole, r: Resolver): Statement[] {
  const roleId = stack.getLogicalId(role.node.defaultChild as CfnElement);
  const out: Statement[] = [];
  for (const res of Object.values(json.Resources) as Json[]) {
    if (res.Type !== 'AWS::IAM::Policy') continue;
    if (!arr(res.Properties.Roles).some((x: Json) => x.Ref === roleId)) continue;
    for (const s of arr(res.Properties.PolicyDocument.Statement) as Json[]) {
      if (s.NotAction || s.NotResource) throw new Error('NotAction/NotResource are not evaluated here');
      out.push({
        effect: s.Effect,
        actions: arr(s.Action),
        resources: arr(s.Resource).map((x) => r.resolve(x)),
        condition: s.Condition,
      });
    }
  }
  return out;
}

/** The attribute-based condition of the tenant access role's statements (docs/tenancy.md). */
export const TENANT_TAG_KEY_CONDITION = 'aws:ResourceTag/sundial-tenant';
export const TENANT_TAG_VALUE_CONDITION = '${aws:PrincipalTag/sundial-tenant}';

/**
 * What a condition is evaluated against: the recorded partition key, the recorded role, and the
 * request context keys the call has (`ecs:cluster`, `ecs:CreateAction`, `iam:PassedToService`).
 */
export interface CallContext {
  readonly leadingKey?: string;
  readonly role?: Access['role'];
  readonly context?: Readonly<Record<string, string>>;
}

/**
 * IAM's `ArnLike`/`ArnEquals`: each of the six `:`-separated parts of the ARN matched on its own
 * (the last one, the resource, may hold `:`), `*` and `?` within that part.
 */
export function arnLike(pattern: string, arn: string): boolean {
  const parts = (s: string) => {
    const p = s.split(':');
    return p.length < 6 ? undefined : [...p.slice(0, 5), p.slice(5).join(':')];
  };
  const [p, a] = [parts(pattern), parts(arn)];
  return p !== undefined && a !== undefined && p.every((x, i) => globMatch(x, a[i]));
}

/** The condition operators evaluated on a request context key; any other fails. */
const OPERATORS: Record<string, (pattern: string, value: string) => boolean> = {
  StringEquals: (p, v) => p === v,
  StringLike: globMatch,
  ArnEquals: arnLike,
  ArnLike: arnLike,
};

function conditionHolds(c: Statement['condition'], call: CallContext): boolean {
  if (!c) return true;
  for (const [op, kv] of Object.entries(c)) {
    for (const [key, values] of Object.entries(kv)) {
      // The tenant session calls a target only after checking that the target's sundial-tenant
      // tag is the session's tenant (the code does, before every call): met for `tenant` only.
      if (op === 'StringEquals' && key === TENANT_TAG_KEY_CONDITION) {
        if (call.role !== 'tenant' || arr(values).length !== 1 || arr(values)[0] !== TENANT_TAG_VALUE_CONDITION) return false;
        continue;
      }
      if (key === 'dynamodb:LeadingKeys') {
        if (op !== 'ForAllValues:StringLike' || call.leadingKey === undefined) return false;
        if (!arr(values).some((p) => globMatch(p, call.leadingKey!))) return false;
        continue;
      }
      // A request context key: the call's value, as IAM compares it (any of the values). A key
      // the call has no value for fails, as it does in IAM without `...IfExists`; so does a
      // policy variable, which is not resolved here.
      const value = call.context?.[key];
      const matches = OPERATORS[op];
      if (value === undefined || matches === undefined) return false;
      if (!arr(values).some((p) => !p.includes('${') && matches(p, value))) return false;
    }
  }
  return true;
}

/** IAM's decision for one action on one resource: an explicit Deny wins, else any Allow. */
export function allowed(stmts: Statement[], action: string, arn: string, call: CallContext = {}): boolean {
  const applies = (s: Statement) =>
    s.actions.some((a) => globMatch(a.toLowerCase(), action.toLowerCase())) &&
    s.resources.some((p) => globMatch(p, arn)) &&
    conditionHolds(s.condition, call);
  if (stmts.some((s) => s.effect === 'Deny' && applies(s))) return false;
  return stmts.some((s) => s.effect === 'Allow' && applies(s));
}

const PROPS: SundialSchedulerProps = {
  apiAuth: { kind: 'jwt', issuer: 'https://issuer.example.com/', audience: ['sundial-api'] },
  pools: [{ name: 'default' }, { name: 'bulk' }, { name: 'long', kind: 'ecs', runTimeout: Duration.minutes(30) }],
  allowedTargetFunctionArns: [TARGET_FUNCTION],
  allowedTargetQueueArns: [TARGET_QUEUE],
  allowedTargetEventBusArns: [TARGET_BUS],
  allowedTargetTopicArns: [TARGET_TOPIC],
  allowedTargetStateMachineArns: [TARGET_MACHINE],
  allowedTargetEcsClusterArns: [TARGET_CLUSTER],
  allowedTargetTaskDefinitionArns: [TARGET_TASK_FAMILY],
  allowedTargetEcsPassRoleArns: [TARGET_TASK_ROLE, TARGET_EXECUTION_ROLE],
  allowedTargetSecretArns: [TARGET_SECRETS],
  // Provisioned, so the planner's recorded DescribeTable/UpdateTable are checked against the
  // grant that exists only then (an on-demand stack grants neither).
  tableCapacity: { mode: 'provisioned', writeCapacity: 5, readCapacity: 5 },
  // The ingest function exists only with event sources: a tenant queue and a tenant bus.
  eventSources: [
    { tenant: 'acme', queue: sqs.Queue.fromQueueArn(new Stack(), 'SourceQueue', SOURCE_QUEUE) },
    { tenant: 'acme', bus: { accounts: ['222222222222'] } },
  ],
};

interface Synth {
  readonly stack: Stack;
  readonly sundial: SundialScheduler;
  readonly json: Json;
  readonly resolver: Resolver;
}

function synth(props: SundialSchedulerProps = PROPS): Synth {
  const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
  const stack = new Stack(app, 'SundialIam', { env: { account: ACCOUNT, region: REGION } });
  const sundial = new SundialScheduler(stack, 'Sundial', { assetsDir: fakeAssetsDir(), ...props });
  const json = Template.fromStack(stack).toJSON();
  return { stack, sundial, json, resolver: new Resolver(json.Resources) };
}

/** The roles that run as a recorded role: each pool's worker is checked (Lambda and ECS). */
function rolesOf(s: Synth, role: Access['role']): Array<{ name: string; role: iam.IRole; pool?: string }> {
  const fn = (f: { role?: iam.IRole }, name: string) => [{ name, role: f.role! }];
  switch (role) {
    case 'tick':
      return fn(s.sundial.tickFunction, 'tick');
    case 'scan':
      return fn(s.sundial.scanFunction, 'scan');
    case 'reconcile':
      return fn(s.sundial.reconcileFunction, 'reconcile');
    case 'api':
      return fn(s.sundial.apiFunction, 'api');
    case 'ingest':
      return fn(s.sundial.ingestFunction!, 'ingest');
    case 'tenant':
      return [{ name: 'tenant access role', role: s.sundial.tenantAccessRole }];
    case 'worker':
      return s.sundial.pools.map((p) => ({ name: `worker of pool ${p.name} (${p.kind})`, role: p.role, pool: p.name }));
    case 'handler':
      return []; // the handler's own resources: the deployer grants them (docs/iam.md)
  }
}

/** The ARNs a recorded resource stands for, as seen by a role of `pool` (workers) or any. */
export function arnsOf(s: Synth, resource: string, pool?: string): string[] {
  const id = (c: { node: { defaultChild?: unknown } }) => s.stack.getLogicalId(c.node.defaultChild as CfnElement);
  const tables: Record<string, string> = {
    jobs: s.resolver.arnOf(id(s.sundial.jobsTable)),
    executions: s.resolver.arnOf(id(s.sundial.executionsTable)),
  };
  const queueArn = (q: { node: { defaultChild?: unknown } }) => s.resolver.arnOf(id(q));
  const own = s.sundial.pools.filter((p) => pool === undefined || p.name === pool);
  const others = s.sundial.pools.filter((p) => pool !== undefined && p.name !== pool);
  let m: RegExpMatchArray | null;
  if ((m = resource.match(/^table:(jobs|executions)$/))) return [tables[m[1]]];
  if ((m = resource.match(/^index:(jobs|executions)\/(.+)$/))) return [`${tables[m[1]]}/index/${m[2]}`];
  if (resource.startsWith('table:other:') || resource.startsWith('index:other:')) return [`arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/not-sundial`];
  switch (resource) {
    case 'queue:pool':
      return own.map((p) => queueArn(p.queue));
    case 'queue:dlq':
      return own.map((p) => queueArn(p.dlq));
    case 'queue:other-pool':
      return others.map((p) => queueArn(p.queue));
    case 'queue:other-dlq':
      return others.map((p) => queueArn(p.dlq));
    case 'queue:low':
      return own.map((p) => queueArn(p.lowQueue));
    case 'queue:other-low':
      return others.map((p) => queueArn(p.lowQueue));
    case 'queue:target':
      return [TARGET_QUEUE];
    case 'queue:source':
      return [SOURCE_QUEUE];
    case 'function:scan':
      return [s.resolver.arnOf(id(s.sundial.scanFunction))];
    case 'function:target':
      return [TARGET_FUNCTION];
    case 'secret:target':
      return [A_TARGET_SECRET];
    case 'bus:events':
      return [s.resolver.arnOf(id(s.sundial.eventBus))];
    case 'bus:target':
      return [TARGET_BUS];
    case 'topic:target':
      return [TARGET_TOPIC];
    case 'state-machine:target':
      return [TARGET_MACHINE];
    case 'sfn-execution:target':
      return [TARGET_MACHINE_RUN];
    case 'task-definition:target':
      // The revision the target names (a family ARN without one is refused by the Rust side).
      return [TARGET_TASK_DEFINITION];
    case 'ecs-task:target':
      return [TARGET_TASK];
    case 'ecs-roles:target':
      return [TARGET_TASK_ROLE, TARGET_EXECUTION_ROLE];
  }
  if (resource === 'role:tenant-access') return [s.resolver.arnOf(id(s.sundial.tenantAccessRole))];
  if ((m = resource.match(/^(role|user):(.+)$/))) return [`arn:aws:iam::${ACCOUNT}:${m[1]}/${m[2]}`];
  return [resource]; // `unknown`: only a `*` resource allows it
}

/** The `ecs` calls that name a cluster (`ecs:cluster`); ListTagsForResource names none. */
const ECS_CLUSTER_CALLS = ['ecs:RunTask', 'ecs:ListTasks', 'ecs:DescribeTasks', 'ecs:StopTask', 'ecs:TagResource'];

/**
 * The request context keys a call has in IAM that the recording does not carry: an `ecs` call
 * on a cluster names it (`ecs:cluster`), the target cluster; the call's own `context` over that.
 */
export function requestContextOf(c: Access): Record<string, string> {
  return { ...(ECS_CLUSTER_CALLS.includes(c.action) ? { 'ecs:cluster': TARGET_CLUSTER } : {}), ...c.context };
}

/**
 * What IAM authorizes for one call (the Service Authorization Reference's operations table):
 * the call itself and, for `ecs:RunTask`, `ecs:TagResource` on the new task within RunTask (the
 * tags propagated from the task definition are applied at creation) and `iam:PassRole` of the
 * task definition's roles to ECS tasks.
 */
export function authorizationsOf(c: Access): Access[] {
  if (c.action !== 'ecs:RunTask') return [c];
  return [
    c,
    { role: c.role, action: 'ecs:TagResource', resource: 'ecs-task:target', context: { ...c.context, 'ecs:CreateAction': 'RunTask' } },
    { role: c.role, action: 'iam:PassRole', resource: 'ecs-roles:target', context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
  ];
}

/** Every recorded call that the role it ran as does not allow, as readable lines. */
export function denials(s: Synth, calls: Access[]): string[] {
  const out: string[] = [];
  const cache = new Map<iam.IRole, Statement[]>();
  for (const call of calls) {
    for (const c of authorizationsOf(call)) {
      const within = c === call ? '' : ` within ${call.action}`;
      for (const r of rolesOf(s, c.role)) {
        if (!cache.has(r.role)) cache.set(r.role, statementsOf(s.stack, s.json, r.role, s.resolver));
        const stmts = cache.get(r.role)!;
        for (const arn of arnsOf(s, c.resource, r.pool)) {
          if (!allowed(stmts, c.action, arn, { leadingKey: c.leadingKey, role: c.role, context: requestContextOf(c) })) {
            out.push(`${r.name}: ${c.action} on ${c.resource} (${arn})${c.leadingKey ? ` key ${c.leadingKey}` : ''}${within}`);
          }
        }
      }
    }
  }
  return [...new Set(out)].sort();
}

const RECORDING = process.env.SUNDIAL_IAM_RECORD;

describe('IAM: every recorded call is allowed by its role', () => {
  it('the evaluator itself: globs, Deny first, LeadingKeys conditions', () => {
    const stmts: Statement[] = [
      { effect: 'Allow', actions: ['dynamodb:Get*'], resources: ['arn:aws:dynamodb:r:a:table/T'] },
      { effect: 'Allow', actions: ['dynamodb:DeleteItem'], resources: ['arn:aws:dynamodb:r:a:table/T'], condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['T#*#QUOTA'] } } },
      { effect: 'Deny', actions: ['dynamodb:GetItem'], resources: ['arn:aws:dynamodb:r:a:table/T/index/*'] },
    ];
    assert.ok(allowed(stmts, 'dynamodb:GetItem', 'arn:aws:dynamodb:r:a:table/T'));
    assert.ok(!allowed(stmts, 'dynamodb:PutItem', 'arn:aws:dynamodb:r:a:table/T'));
    assert.ok(!allowed(stmts, 'dynamodb:GetItem', 'arn:aws:dynamodb:r:a:table/T/index/x'));
    assert.ok(allowed(stmts, 'dynamodb:DeleteItem', 'arn:aws:dynamodb:r:a:table/T', { leadingKey: 'T#acme#QUOTA' }));
    assert.ok(!allowed(stmts, 'dynamodb:DeleteItem', 'arn:aws:dynamodb:r:a:table/T', { leadingKey: 'T#acme#J#x' }));
    assert.ok(!allowed(stmts, 'dynamodb:DeleteItem', 'arn:aws:dynamodb:r:a:table/T'));
  });

  it('the evaluator: the tenant tag condition is met for the tenant session only, any other condition never', () => {
    const secret = 'arn:aws:secretsmanager:r:a:secret:s-AbCdEf';
    const tagged: Statement[] = [
      {
        effect: 'Allow',
        actions: ['secretsmanager:GetSecretValue'],
        resources: ['arn:aws:secretsmanager:r:a:secret:*'],
        condition: { StringEquals: { [TENANT_TAG_KEY_CONDITION]: TENANT_TAG_VALUE_CONDITION } },
      },
    ];
    assert.ok(allowed(tagged, 'secretsmanager:GetSecretValue', secret, { role: 'tenant' }));
    for (const role of ['worker', 'api', 'tick'] as const) assert.ok(!allowed(tagged, 'secretsmanager:GetSecretValue', secret, { role }), role);
    assert.ok(!allowed(tagged, 'secretsmanager:GetSecretValue', secret));
    // The same key with another value, or another tag key, is not the tenant condition.
    const other = (condition: Statement['condition']): Statement[] => [{ ...tagged[0], condition }];
    assert.ok(!allowed(other({ StringEquals: { [TENANT_TAG_KEY_CONDITION]: 'acme' } }), 'secretsmanager:GetSecretValue', secret, { role: 'tenant' }));
    assert.ok(!allowed(other({ StringEquals: { 'aws:ResourceTag/team': TENANT_TAG_VALUE_CONDITION } }), 'secretsmanager:GetSecretValue', secret, { role: 'tenant' }));
    assert.ok(!allowed(other({ StringLike: { [TENANT_TAG_KEY_CONDITION]: TENANT_TAG_VALUE_CONDITION } }), 'secretsmanager:GetSecretValue', secret, { role: 'tenant' }));
  });

  it('the evaluator: request context keys (ecs:cluster, ecs:CreateAction, iam:PassedToService) are compared with the call\'s values', () => {
    const def = 'arn:aws:ecs:r:123456789012:task-definition/acme-settle:3';
    const run: Statement[] = [
      {
        effect: 'Allow',
        actions: ['ecs:RunTask'],
        resources: ['arn:aws:ecs:r:123456789012:task-definition/acme-*:*'],
        condition: { ArnLike: { 'ecs:cluster': ['arn:aws:ecs:*:123456789012:cluster/batch-*', 'arn:aws:ecs:r:123456789012:cluster/main'] } },
      },
    ];
    const cluster = (c: string) => ({ context: { 'ecs:cluster': c } });
    assert.ok(allowed(run, 'ecs:RunTask', def, cluster('arn:aws:ecs:eu-west-1:123456789012:cluster/batch-eu')));
    assert.ok(allowed(run, 'ecs:RunTask', def, cluster('arn:aws:ecs:r:123456789012:cluster/main')));
    // another cluster, another account (a `*` stays within its part of the ARN), no cluster at all
    assert.ok(!allowed(run, 'ecs:RunTask', def, cluster('arn:aws:ecs:r:123456789012:cluster/other')));
    assert.ok(!allowed(run, 'ecs:RunTask', def, cluster('arn:aws:ecs:r:210987654321:cluster/batch-eu')));
    assert.ok(!allowed(run, 'ecs:RunTask', def, cluster('arn:aws:ecs:r:1:cluster/x:123456789012:cluster/batch-x')));
    assert.ok(!allowed(run, 'ecs:RunTask', def));
    // ArnLike compares part by part: the region's `*` does not reach into the account
    assert.ok(arnLike('arn:aws:ecs:*:123456789012:cluster/b', 'arn:aws:ecs:eu-west-1:123456789012:cluster/b'));
    assert.ok(!arnLike('arn:aws:ecs:*:cluster/b', 'arn:aws:ecs:eu-west-1:123456789012:cluster/b'));
    assert.ok(arnLike('arn:aws:ecs:r:a:task-definition/f:*', 'arn:aws:ecs:r:a:task-definition/f:3'));
    const tag: Statement[] = [
      { effect: 'Allow', actions: ['ecs:TagResource'], resources: ['arn:aws:ecs:r:a:task/batch/*'], condition: { StringEquals: { 'ecs:CreateAction': 'RunTask' } } },
    ];
    const task = 'arn:aws:ecs:r:a:task/batch/0123';
    assert.ok(allowed(tag, 'ecs:TagResource', task, { context: { 'ecs:CreateAction': 'RunTask' } }));
    assert.ok(!allowed(tag, 'ecs:TagResource', task, { context: { 'ecs:CreateAction': 'StartTask' } }));
    assert.ok(!allowed(tag, 'ecs:TagResource', task), 'a TagResource call of its own has no ecs:CreateAction');
    const pass: Statement[] = [
      { effect: 'Allow', actions: ['iam:PassRole'], resources: ['arn:aws:iam::a:role/t'], condition: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } } },
    ];
    assert.ok(allowed(pass, 'iam:PassRole', 'arn:aws:iam::a:role/t', { context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } }));
    assert.ok(!allowed(pass, 'iam:PassRole', 'arn:aws:iam::a:role/t', { context: { 'iam:PassedToService': 'lambda.amazonaws.com' } }));
    assert.ok(!allowed(pass, 'iam:PassRole', 'arn:aws:iam::a:role/t'));
    // an operator not evaluated here fails rather than passes
    const other: Statement[] = [{ ...pass[0], condition: { StringNotEquals: { 'iam:PassedToService': 'lambda.amazonaws.com' } } }];
    assert.ok(!allowed(other, 'iam:PassRole', 'arn:aws:iam::a:role/t', { context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } }));
  });

  it('the checker refuses what a role lacks (a recording the construct must not allow)', () => {
    const s = synth();
    const bad: Access[] = [
      { role: 'api', action: 'dynamodb:DeleteItem', resource: 'table:jobs', leadingKey: 'T#acme#J#payroll' },
      { role: 'api', action: 'dynamodb:Scan', resource: 'table:executions' },
      { role: 'worker', action: 'sqs:ReceiveMessage', resource: 'queue:other-pool' },
      { role: 'tick', action: 'lambda:InvokeFunction', resource: 'function:target' },
      { role: 'scan', action: 'dynamodb:PutItem', resource: 'table:other:x' },
      // Issue 28: targets and webhook secrets only through the tenant session, never as the
      // worker or the api themselves.
      { role: 'worker', action: 'secretsmanager:GetSecretValue', resource: 'secret:target' },
      { role: 'worker', action: 'lambda:InvokeFunction', resource: 'function:target' },
      { role: 'worker', action: 'sqs:SendMessage', resource: 'queue:target' },
      { role: 'api', action: 'secretsmanager:GetSecretValue', resource: 'secret:target' },
      { role: 'api', action: 'sts:AssumeRole', resource: 'role:tenant-access' },
      // The tenant session reaches targets only, none of Sundial's own resources.
      { role: 'tenant', action: 'dynamodb:GetItem', resource: 'table:jobs' },
      { role: 'tenant', action: 'sqs:SendMessage', resource: 'queue:pool' },
      { role: 'tenant', action: 'lambda:InvokeFunction', resource: 'function:scan' },
      { role: 'tenant', action: 'sts:AssumeRole', resource: 'role:tenant-access' },
      // ECS only as the tenant, on the allowed cluster, and TagResource and PassRole only as
      // RunTask needs them.
      { role: 'worker', action: 'ecs:RunTask', resource: 'task-definition:target' },
      { role: 'tenant', action: 'ecs:RunTask', resource: 'task-definition:target', context: { 'ecs:cluster': OTHER_CLUSTER } },
      { role: 'tenant', action: 'ecs:ListTasks', resource: 'unknown', context: { 'ecs:cluster': OTHER_CLUSTER } },
      { role: 'tenant', action: 'ecs:TagResource', resource: 'ecs-task:target' },
      { role: 'tenant', action: 'iam:PassRole', resource: 'ecs-roles:target', context: { 'iam:PassedToService': 'lambda.amazonaws.com' } },
      { role: 'tenant', action: 'iam:PassRole', resource: 'role:tenant-access', context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
      // The task definition's tag is read with ListTagsForResource on the allowed families'
      // revisions only: not with DescribeTaskDefinition (which IAM cannot narrow below `*`), not
      // on another family's revision, not on a family ARN without a revision.
      { role: 'tenant', action: 'ecs:DescribeTaskDefinition', resource: 'unknown' },
      { role: 'tenant', action: 'ecs:ListTagsForResource', resource: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/sundial-iam-other:1` },
      { role: 'tenant', action: 'ecs:ListTagsForResource', resource: TARGET_TASK_FAMILY },
      { role: 'worker', action: 'ecs:ListTagsForResource', resource: 'task-definition:target' },
    ];
    const d = denials(s, bad);
    for (const b of bad) assert.ok(d.some((x) => x.includes(`${b.action} on ${b.resource}`)), `${JSON.stringify(b)} was allowed:\n${d.join('\n')}`);
  });

  it('the capacity planner (what tests/tests/throughput_plan.rs records): allowed provisioned, refused on demand', () => {
    const calls: Access[] = [
      { role: 'tick', action: 'dynamodb:DescribeTable', resource: 'table:jobs' },
      { role: 'tick', action: 'dynamodb:DescribeTable', resource: 'table:executions' },
      { role: 'tick', action: 'dynamodb:UpdateTable', resource: 'table:jobs' },
      { role: 'tick', action: 'dynamodb:UpdateTable', resource: 'table:executions' },
      { role: 'tick', action: 'dynamodb:Query', resource: 'index:jobs/due' },
    ];
    assert.deepEqual(denials(synth(), calls), []);
    const onDemand = denials(synth({ ...PROPS, tableCapacity: undefined }), calls);
    assert.equal(onDemand.length, 4, onDemand.join('\n'));
    assert.ok(denials(synth(), [{ role: 'scan', action: 'dynamodb:UpdateTable', resource: 'table:jobs' }]).length === 1);
  });

  it('the tenant session (a synthetic recording of what the Rust side records): allowed, and only with the targets given', () => {
    const calls: Access[] = [
      { role: 'worker', action: 'sts:AssumeRole', resource: 'role:tenant-access' },
      { role: 'worker', action: 'sts:TagSession', resource: 'role:tenant-access' },
      { role: 'tenant', action: 'secretsmanager:GetSecretValue', resource: 'secret:target' },
      { role: 'tenant', action: 'secretsmanager:DescribeSecret', resource: 'secret:target' },
      { role: 'tenant', action: 'lambda:InvokeFunction', resource: 'function:target' },
      { role: 'tenant', action: 'lambda:GetFunction', resource: 'function:target' },
      { role: 'tenant', action: 'sqs:SendMessage', resource: 'queue:target' },
      { role: 'tenant', action: 'sqs:ListQueueTags', resource: 'queue:target' },
      { role: 'tenant', action: 'events:PutEvents', resource: 'bus:target' },
      { role: 'tenant', action: 'events:ListTagsForResource', resource: 'bus:target' },
      { role: 'tenant', action: 'sns:Publish', resource: 'topic:target' },
      { role: 'tenant', action: 'sns:ListTagsForResource', resource: 'topic:target' },
      { role: 'tenant', action: 'states:StartExecution', resource: 'state-machine:target' },
      { role: 'tenant', action: 'states:ListTagsForResource', resource: 'state-machine:target' },
      { role: 'tenant', action: 'states:DescribeExecution', resource: 'sfn-execution:target' },
      { role: 'tenant', action: 'states:StopExecution', resource: 'sfn-execution:target' },
      // functions/testkit/src/access.rs's `ecs` arm: the tag check, the adoption, the run, the
      // tracking and the stop of a timed-out attempt's task.
      { role: 'tenant', action: 'ecs:ListTagsForResource', resource: 'task-definition:target' },
      { role: 'tenant', action: 'ecs:ListTasks', resource: 'unknown' },
      { role: 'tenant', action: 'ecs:RunTask', resource: 'task-definition:target' },
      { role: 'tenant', action: 'ecs:DescribeTasks', resource: 'ecs-task:target' },
      { role: 'tenant', action: 'ecs:StopTask', resource: 'ecs-task:target' },
    ];
    assert.deepEqual(denials(synth(), calls), []);
    // Deny by default: without allowed targets every tenant call is refused (RunTask's TagResource
    // and PassRole too), the assume is not.
    const bare = synth({
      ...PROPS,
      allowedTargetFunctionArns: undefined,
      allowedTargetQueueArns: undefined,
      allowedTargetEventBusArns: undefined,
      allowedTargetTopicArns: undefined,
      allowedTargetStateMachineArns: undefined,
      allowedTargetEcsClusterArns: undefined,
      allowedTargetTaskDefinitionArns: undefined,
      allowedTargetEcsPassRoleArns: undefined,
      allowedTargetSecretArns: undefined,
    });
    const d = denials(bare, calls);
    const expected = calls.flatMap(authorizationsOf).filter((c) => c.role === 'tenant').map((c) => `tenant access role: ${c.action} on ${c.resource}`);
    assert.ok(expected.includes('tenant access role: ecs:TagResource on ecs-task:target') && expected.includes('tenant access role: iam:PassRole on ecs-roles:target'));
    // (one line per ARN: two roles are passed)
    assert.deepEqual([...new Set(d.map((x) => x.split(' (')[0]))], [...new Set(expected)].sort());
  });

  it('the tenant session\'s ECS calls: on an allowed cluster only, RunTask with the roles it passes, the tag read with ListTagsForResource (DescribeTaskDefinition denied)', () => {
    const s = synth();
    const run: Access = { role: 'tenant', action: 'ecs:RunTask', resource: 'task-definition:target' };
    assert.deepEqual(denials(s, [run]), []);
    // A cluster that is not allowed: RunTask and ListTasks are refused by the ecs:cluster condition.
    const elsewhere = { 'ecs:cluster': OTHER_CLUSTER };
    assert.deepEqual(
      [...new Set(denials(s, [{ ...run, context: elsewhere }, { role: 'tenant', action: 'ecs:ListTasks', resource: 'unknown', context: elsewhere }]).map((x) => x.split(' (')[0]))],
      ['tenant access role: ecs:ListTasks on unknown', 'tenant access role: ecs:RunTask on task-definition:target'],
    );
    // A task definition whose roles are not listed cannot be run: its PassRole is refused.
    const noRoles = denials(synth({ ...PROPS, allowedTargetEcsPassRoleArns: undefined }), [run]);
    assert.deepEqual(noRoles.map((x) => x.split(' (')[0]), ['tenant access role: iam:PassRole on ecs-roles:target', 'tenant access role: iam:PassRole on ecs-roles:target']);
    assert.ok(noRoles[0].includes(TARGET_EXECUTION_ROLE) && noRoles[1].includes(TARGET_TASK_ROLE), noRoles.join('\n'));
    assert.ok(noRoles.every((x) => x.endsWith('within ecs:RunTask')), noRoles.join('\n'));
    // The ownership check's tag read: ListTagsForResource on the revision the target names; the
    // DescribeTaskDefinition it replaced (resource `*`: every task definition of the account) is
    // granted no more.
    assert.deepEqual(denials(s, [{ role: 'tenant', action: 'ecs:ListTagsForResource', resource: 'task-definition:target' }]), []);
    assert.deepEqual(denials(s, [{ role: 'tenant', action: 'ecs:DescribeTaskDefinition', resource: 'unknown' }]), [
      'tenant access role: ecs:DescribeTaskDefinition on unknown (unknown)',
    ]);
  });

  it('the test suite recording', { skip: RECORDING ? false : 'SUNDIAL_IAM_RECORD is not set (scripts/test.sh sets it)' }, (t) => {
    assert.ok(fs.existsSync(RECORDING!), `${RECORDING} does not exist: the Rust tests recorded nothing`);
    const calls = readRecording(RECORDING!);
    // The recording reaches every function: an entry point that lost its scope would record
    // nothing and pass vacuously.
    for (const role of ['tick', 'scan', 'reconcile', 'worker', 'api', 'ingest', 'tenant'] as const) {
      assert.ok(calls.some((c) => c.role === role), `no call recorded for ${role}`);
    }
    const s = synth();
    const d = denials(s, calls);
    assert.deepEqual(d, [], `calls the roles do not allow:\n  ${d.join('\n  ')}`);
    const byRole = new Map<string, Set<string>>();
    for (const c of calls) byRole.set(c.role, (byRole.get(c.role) ?? new Set()).add(`${c.action} ${c.resource}`));
    for (const [role, set] of byRole) t.diagnostic(`${role}: ${set.size} distinct calls`);
    for (const c of calls.filter((x) => x.role === 'handler')) t.diagnostic(`not checked, an in-process handler's own call: ${c.action} on ${c.resource}`);
  });
});

/** The denials of a recording file against the default synthesized stack. */
export function denialsOfRecording(file: string): string[] {
  return denials(synth(), readRecording(file));
}
