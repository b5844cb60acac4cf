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
 * session's tenant before every such call (docs/iam.md, "What it does not cover"). Any other
 * condition counts as not satisfied.
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

/** What a condition is evaluated against: the recorded partition key, and the recorded role. */
export interface CallContext {
  readonly leadingKey?: string;
  readonly role?: Access['role'];
}

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
      if (op !== 'ForAllValues:StringLike' || key !== 'dynamodb:LeadingKeys') return false;
      if (call.leadingKey === undefined) return false;
      if (!arr(values).some((p) => globMatch(p, call.leadingKey!))) return false;
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
  }
  if (resource === 'role:tenant-access') return [s.resolver.arnOf(id(s.sundial.tenantAccessRole))];
  if ((m = resource.match(/^(role|user):(.+)$/))) return [`arn:aws:iam::${ACCOUNT}:${m[1]}/${m[2]}`];
  return [resource]; // `unknown`: only a `*` resource allows it
}

/** Every recorded call that the role it ran as does not allow, as readable lines. */
export function denials(s: Synth, calls: Access[]): string[] {
  const out: string[] = [];
  const cache = new Map<iam.IRole, Statement[]>();
  for (const c of calls) {
    for (const r of rolesOf(s, c.role)) {
      if (!cache.has(r.role)) cache.set(r.role, statementsOf(s.stack, s.json, r.role, s.resolver));
      const stmts = cache.get(r.role)!;
      for (const arn of arnsOf(s, c.resource, r.pool)) {
        if (!allowed(stmts, c.action, arn, { leadingKey: c.leadingKey, role: c.role })) {
          out.push(`${r.name}: ${c.action} on ${c.resource} (${arn})${c.leadingKey ? ` key ${c.leadingKey}` : ''}`);
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
    ];
    assert.deepEqual(denials(synth(), calls), []);
    // Deny by default: without allowed targets every tenant call is refused, the assume is not.
    const bare = synth({ ...PROPS, allowedTargetFunctionArns: undefined, allowedTargetQueueArns: undefined, allowedTargetEventBusArns: undefined, allowedTargetTopicArns: undefined, allowedTargetStateMachineArns: undefined, allowedTargetSecretArns: undefined });
    const d = denials(bare, calls);
    assert.deepEqual(
      d.map((x) => x.split(' (')[0]),
      calls.filter((c) => c.role === 'tenant').map((c) => `tenant access role: ${c.action} on ${c.resource}`).sort(),
    );
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
