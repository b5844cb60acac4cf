/**
 * The tenant boundary in IAM (issue 28, review C1): workers call targets and read secrets as the
 * tenant, through a session of the tenant access role tagged `sundial-tenant=<tenant>`, so that
 * AWS itself refuses a secret, function or queue tagged for another tenant. No worker role and no
 * API role holds a grant on a tenant's secret, function or queue any more.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';
import { SundialStack } from '../lib/sundial-stack';
import { build, Built, CDK_JSON_CONTEXT, envOf, fakeAssetsDir, JWT_PROPS, logicalId, roleStatements, Stmt } from './helpers';

const SECRETS = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:sundial-webhooks/*';
const FUNCTION = 'arn:aws:lambda:us-east-1:123456789012:function:report-builder';
const QUEUE = 'arn:aws:sqs:us-east-1:123456789012:outbox';
const TAG_CONDITION = { StringEquals: { 'aws:ResourceTag/sundial-tenant': '${aws:PrincipalTag/sundial-tenant}' } };

/** What sets the tenant tag of each kind of target the worker's ownership check reads (identity::Kind). */
const TAGGING_OF_KIND: Record<string, string[]> = {
  Secret: ['secretsmanager:TagResource', 'secretsmanager:UntagResource', 'secretsmanager:CreateSecret'],
  Function: ['lambda:TagResource', 'lambda:UntagResource', 'lambda:CreateFunction'],
  Queue: ['sqs:TagQueue', 'sqs:UntagQueue', 'sqs:CreateQueue'],
  EventBus: ['events:TagResource', 'events:UntagResource', 'events:CreateEventBus'],
  Topic: ['sns:TagResource', 'sns:UntagResource', 'sns:CreateTopic'],
  StateMachine: ['states:TagResource', 'states:UntagResource', 'states:CreateStateMachine'],
  // RunTask's and StartTask's tags (propagated or given) are authorized as ecs:TagResource too.
  TaskDefinition: ['ecs:TagResource', 'ecs:UntagResource', 'ecs:RegisterTaskDefinition'],
};

/** The tenant access role's Deny of passing the construct's own roles. */
const isPassRoleDeny = (s: Stmt) => s.effect === 'Deny' && s.actions.length === 1 && s.actions[0] === 'iam:PassRole';

const arr = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
/** IAM's action glob (`secretsmanager:*`, `*`), case-insensitive. */
const actionMatches = (pattern: string, action: string): boolean =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 'i').test(action);
const grants = (s: Stmt, action: string) => s.effect === 'Allow' && s.actions.some((a) => actionMatches(a, action));

function tenantRoleOf(b: Built): iam.IRole {
  // Read loosely so that this test ran (and failed) against the construct before the role existed.
  const role = (b.sundial as unknown as { tenantAccessRole?: iam.IRole }).tenantAccessRole;
  assert.ok(role, 'the construct exposes tenantAccessRole');
  return role;
}

describe('tenant boundary: targets only through the tenant-scoped identity', () => {
  const b = build({
    ...JWT_PROPS,
    pools: [{ name: 'default' }, { name: 'bulk' }, { name: 'long', kind: 'ecs', runTimeout: Duration.minutes(30) }],
    allowedTargetSecretArns: [SECRETS],
    allowedTargetFunctionArns: [FUNCTION],
    allowedTargetQueueArns: [QUEUE],
  });
  const s = b.sundial;
  const res = (x: string) => JSON.stringify(b.stack.resolve(x));
  const ownFunctions = new Set(
    [s.tickFunction, s.scanFunction, s.reconcileFunction, s.apiFunction, ...s.pools.flatMap((p) => (p.worker ? [p.worker] : []))].map((f) =>
      res(f.functionArn),
    ),
  );
  const ownQueues = new Set(s.pools.flatMap((p) => [p.queue, p.lowQueue, p.dlq, p.notifyQueue]).map((q) => res(q.queueArn)));
  const sundialRoles = [
    ...s.pools.map((p) => ({ name: `worker of ${p.name} (${p.kind})`, role: p.role })),
    { name: 'api', role: s.apiFunction.role! },
  ];

  for (const { name, role } of sundialRoles) {
    it(`${name}: no grant on a tenant's secret, function or queue`, () => {
      const st = roleStatements(b, role);
      const bad: string[] = [];
      for (const x of st) {
        if (grants(x, 'secretsmanager:GetSecretValue')) bad.push(`GetSecretValue on ${JSON.stringify(x.resources)}`);
        if (grants(x, 'lambda:InvokeFunction')) {
          for (const r of x.resources) if (!ownFunctions.has(JSON.stringify(r))) bad.push(`InvokeFunction on ${JSON.stringify(r)}`);
        }
        if (grants(x, 'sqs:SendMessage')) {
          for (const r of x.resources) if (!ownQueues.has(JSON.stringify(r))) bad.push(`SendMessage on ${JSON.stringify(r)}`);
        }
      }
      assert.deepEqual(bad, []);
    });
  }

  it('the tenant access role has the target grants, every statement under the tenant tag condition', () => {
    const st = roleStatements(b, tenantRoleOf(b));
    const on = (action: string) => st.filter((x) => grants(x, action)).flatMap((x) => x.resources);
    assert.deepEqual(on('secretsmanager:GetSecretValue'), [SECRETS]);
    assert.deepEqual(on('secretsmanager:DescribeSecret'), [SECRETS]);
    assert.deepEqual(on('lambda:InvokeFunction'), [FUNCTION, `${FUNCTION}:*`]);
    assert.deepEqual(on('lambda:GetFunction'), [FUNCTION, `${FUNCTION}:*`]);
    // GetFunction answers a function's tags only to a caller allowed lambda:ListTags (review
    // F1), so the ownership check reads them with ListTags, on the unqualified function.
    assert.deepEqual(on('lambda:ListTags'), [FUNCTION]);
    assert.deepEqual(on('sqs:SendMessage'), [QUEUE]);
    assert.deepEqual(on('sqs:ListQueueTags'), [QUEUE]);
    assert.ok(st.length > 0);
    for (const x of st.filter((y) => !isPassRoleDeny(y))) {
      assert.equal(x.effect, 'Allow');
      assert.deepEqual(x.condition, TAG_CONDITION, `${x.actions}: the tag condition`);
      assert.ok(!x.actions.some((a) => a.includes('*')), `${x.actions}: exact actions`);
    }
  });

  it('the trust policy admits the worker roles and the reconciler (outcome notifications) only, for AssumeRole and TagSession, with the session tag required', () => {
    const role = b.json.Resources[logicalId(b.stack, tenantRoleOf(b) as unknown as { node: { defaultChild?: unknown } })];
    assert.equal(role.Type, 'AWS::IAM::Role');
    const workers = new Set([...s.pools.map((p) => p.role), s.reconcileFunction.role!].map((r) => JSON.stringify({ 'Fn::GetAtt': [logicalId(b.stack, r as any), 'Arn'] })));
    const statements = arr(role.Properties.AssumeRolePolicyDocument.Statement) as any[];
    assert.ok(statements.length > 0);
    const principals = new Set<string>();
    for (const x of statements) {
      assert.equal(x.Effect, 'Allow');
      assert.deepEqual(Object.keys(x.Principal), ['AWS'], 'IAM principals only (no service, no account root)');
      for (const p of arr(x.Principal.AWS)) principals.add(JSON.stringify(p));
      assert.deepEqual(arr(x.Action).sort(), ['sts:AssumeRole', 'sts:TagSession']);
      assert.deepEqual(x.Condition, {
        Null: { 'aws:RequestTag/sundial-tenant': 'false' },
        'ForAllValues:StringEquals': { 'aws:TagKeys': ['sundial-tenant'] },
      });
    }
    assert.deepEqual([...principals].sort(), [...workers].sort());
  });

  it('every worker may assume it (with the session tag), the api may not; workers are told its ARN', () => {
    const arn = b.stack.resolve(tenantRoleOf(b).roleArn);
    for (const p of s.pools) {
      const st = roleStatements(b, p.role).filter((x) => x.resources.some((r) => JSON.stringify(r) === JSON.stringify(arn)));
      assert.deepEqual(st.flatMap((x) => x.actions).sort(), ['sts:AssumeRole', 'sts:TagSession'], p.name);
    }
    const api = roleStatements(b, s.apiFunction.role!);
    assert.ok(!api.some((x) => grants(x, 'sts:AssumeRole')), 'the api assumes nothing');
    const [td] = Object.values(b.template.findResources('AWS::ECS::TaskDefinition'));
    const ecsEnv = Object.fromEntries(td.Properties.ContainerDefinitions[0].Environment.map((x: any) => [x.Name, x.Value]));
    for (const vars of [...s.pools.flatMap((p) => (p.worker ? [envOf(b, p.worker)] : [])), ecsEnv]) {
      assert.deepEqual(vars.SUNDIAL_TENANT_ROLE_ARN, arn);
    }
  });

  it("workers are told the stack's own functions, which no job may name", () => {
    const [td] = Object.values(b.template.findResources('AWS::ECS::TaskDefinition'));
    const ecsEnv = Object.fromEntries(td.Properties.ContainerDefinitions[0].Environment.map((x: any) => [x.Name, x.Value]));
    for (const vars of [...s.pools.flatMap((p) => (p.worker ? [envOf(b, p.worker)] : [])), ecsEnv]) {
      const own = JSON.stringify(vars.SUNDIAL_OWN_FUNCTIONS);
      assert.ok(own, 'SUNDIAL_OWN_FUNCTIONS is set');
      for (const fn of [s.tickFunction, s.scanFunction, s.reconcileFunction, s.apiFunction]) {
        assert.ok(own.includes(JSON.stringify(b.stack.resolve(fn.functionName))), `${fn.node.id} is named`);
      }
      // The workers (which cannot name each other without a dependency cycle): the stack's
      // CloudFormation-generated function names.
      assert.ok(own.includes(`:function:${b.stack.stackName}-*`), own);
    }
  });

  it('ecs targets: the tenant tag condition wherever IAM can evaluate it, and where it cannot, the narrowest condition there is', () => {
    const CLUSTER = 'arn:aws:ecs:us-east-1:123456789012:cluster/batch';
    const FAMILY = 'arn:aws:ecs:us-east-1:123456789012:task-definition/acme-*';
    const ROLES = ['arn:aws:iam::123456789012:role/acme-task', 'arn:aws:iam::123456789012:role/acme-task-execution'];
    const e = build(
      { ...JWT_PROPS, allowedTargetEcsClusterArns: [CLUSTER], allowedTargetTaskDefinitionArns: [FAMILY], allowedTargetEcsPassRoleArns: ROLES, allowedTargetFunctionArns: undefined },
      'SundialEcsTargets',
    );
    const st = roleStatements(e, tenantRoleOf(e));
    const inCluster = { ArnLike: { 'ecs:cluster': [CLUSTER] } };
    const TASKS = 'arn:aws:ecs:us-east-1:123456789012:task/batch/*';
    const byAction = Object.fromEntries(st.filter((x) => x.effect === 'Allow').map((x) => [x.actions.join(','), { resources: x.resources, condition: x.condition }]));
    assert.deepEqual(byAction, {
      // the task definition's tag and the cluster
      'ecs:RunTask': { resources: [`${FAMILY}:*`], condition: { ...TAG_CONDITION, ...inCluster } },
      // the task's tag, propagated from its task definition
      'ecs:DescribeTasks,ecs:StopTask': { resources: [TASKS], condition: TAG_CONDITION },
      // the task being created has no tag yet: only within RunTask
      'ecs:TagResource': { resources: [TASKS], condition: { StringEquals: { 'ecs:CreateAction': 'RunTask', 'aws:RequestTag/sundial-tenant': '${aws:PrincipalTag/sundial-tenant}' } } },
      // authorized on container instances (none for Fargate): the cluster
      'ecs:ListTasks': { resources: ['*'], condition: inCluster },
      // the worker reads the task definition's tag with it: on the revisions, the tag condition
      'ecs:ListTagsForResource': { resources: [`${FAMILY}:*`], condition: TAG_CONDITION },
      // only a role tagged for the session's tenant (review N4), and only to ECS tasks
      'iam:PassRole': { resources: ROLES, condition: { StringEquals: { ...TAG_CONDITION.StringEquals, 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } } },
    });
    // DescribeTaskDefinition (no resource type: `*`, every task definition of the account) is
    // not granted, by any statement
    assert.ok(!st.some((x) => grants(x, 'ecs:DescribeTaskDefinition')), JSON.stringify(st));
    // and none of it on a worker's own role
    for (const pool of e.sundial.pools) assert.ok(!roleStatements(e, pool.role).some((x) => x.actions.some((a) => a.startsWith('ecs:RunTask') || a === 'iam:PassRole')), pool.name);
  });

  it('ecs targets: clusters and task definitions go together, PassRole needs both, and ARNs must be what they say', () => {
    const CLUSTER = 'arn:aws:ecs:us-east-1:123456789012:cluster/batch';
    const FAMILY = 'arn:aws:ecs:us-east-1:123456789012:task-definition/acme-settle';
    const make = (p: Partial<SundialSchedulerProps>) => () => build({ ...JWT_PROPS, ...p }, 'SundialEcsRefused');
    assert.throws(make({ allowedTargetEcsClusterArns: [CLUSTER] }), /go together/);
    assert.throws(make({ allowedTargetTaskDefinitionArns: [FAMILY] }), /go together/);
    assert.throws(make({ allowedTargetEcsPassRoleArns: ['arn:aws:iam::123456789012:role/acme-task'] }), /allowedTargetEcsPassRoleArns/);
    assert.throws(make({ allowedTargetEcsClusterArns: [CLUSTER], allowedTargetTaskDefinitionArns: [`${FAMILY}:3`] }), /without a revision/);
    assert.throws(make({ allowedTargetEcsClusterArns: ['arn:aws:ecs:us-east-1:123456789012:service/batch/x'], allowedTargetTaskDefinitionArns: [FAMILY] }), /not an ECS cluster ARN/);
    assert.throws(make({ allowedTargetEcsClusterArns: ['batch'], allowedTargetTaskDefinitionArns: [FAMILY] }), /not an ECS cluster ARN/);
  });

  it('ecs targets: never a role of the construct to pass (review N4): an explicit Deny on each, and no glob that names them', () => {
    const CLUSTER = 'arn:aws:ecs:us-east-1:123456789012:cluster/batch';
    const FAMILY = 'arn:aws:ecs:us-east-1:123456789012:task-definition/acme-*';
    const ecs = { ...JWT_PROPS, allowedTargetEcsClusterArns: [CLUSTER], allowedTargetTaskDefinitionArns: [FAMILY] };
    const e = build({ ...ecs, pools: [{ name: 'default' }, { name: 'long', kind: 'ecs' }], allowedTargetEcsPassRoleArns: ['arn:aws:iam::123456789012:role/tenants/*'] }, 'SundialPassRole');
    const deny = roleStatements(e, tenantRoleOf(e)).filter(isPassRoleDeny);
    assert.equal(deny.length, 1);
    const own = e.sundial.node.findAll().filter((c): c is iam.Role => c instanceof iam.Role);
    assert.ok(own.length >= 6, own.map((r) => r.node.path).join());
    assert.deepEqual(deny[0].resources.map((r) => JSON.stringify(r)).sort(), own.map((r) => JSON.stringify(e.stack.resolve(r.roleArn))).sort());
    // A glob that can name them is refused at synth, naming the prop: every role, or the names
    // CloudFormation gives the stack's roles (`<stackName>-<logical id>-<suffix>`).
    const refused = (glob: string) => () => build({ ...ecs, allowedTargetEcsPassRoleArns: [glob] }, 'SundialRefused');
    for (const glob of ['arn:aws:iam::*:role/*', 'arn:aws:iam::123456789012:role/*', 'arn:aws:iam::123456789012:role/Sundial*', 'arn:aws:iam::123456789012:role/SundialRefused-*', 'arn:aws:iam::123456789012:role/SundialRefused-SundialWorker*', 'arn:aws:iam::123456789012:role/*-task']) {
      assert.throws(refused(glob), /allowedTargetEcsPassRoleArns: .*roles of this stack/, glob);
    }
    assert.throws(refused('arn:aws:ecs:us-east-1:123456789012:role/x'), /allowedTargetEcsPassRoleArns: .*not an IAM role ARN/);
    for (const glob of ['arn:aws:iam::123456789012:role/acme-*', 'arn:aws:iam::123456789012:role/tenants/*', 'arn:aws:iam::123456789012:role/acme-task']) refused(glob)();
  });

  it('deny by default: without allowed targets the tenant access role allows nothing', () => {
    const p = build({ ...JWT_PROPS, allowedTargetFunctionArns: undefined });
    assert.deepEqual(roleStatements(p, tenantRoleOf(p)).filter((x) => !isPassRoleDeny(x)), []);
    for (const pool of p.sundial.pools) {
      const st = roleStatements(p, pool.role);
      for (const a of ['secretsmanager:GetSecretValue', 'lambda:InvokeFunction']) assert.ok(!st.some((x) => grants(x, a)), `${pool.name}: ${a}`);
    }
  });
});

describe('deployment boundary: the guardrail for tenant principals (review H1, L3)', () => {
  const b = build({
    ...JWT_PROPS,
    apiAuth: { kind: 'iam', tenantTag: 'team' },
    pools: [{ name: 'default' }, { name: 'long', kind: 'ecs', runTimeout: Duration.minutes(30) }],
    toolkitTables: true,
  });
  const s = b.sundial;
  const statements = () => b.stack.resolve(s.tenantGuardrailStatements().map((x) => x.toStatementJson())) as any[];
  const bySid = (sid: string, list = statements()) => {
    const x = list.find((y) => y.Sid === sid);
    assert.ok(x, sid);
    return x;
  };
  const refs = (xs: unknown[]) => xs.map((x) => JSON.stringify(b.stack.resolve(x))).sort();

  it('denies, never allows', () => {
    for (const x of statements()) assert.equal(x.Effect, 'Deny', x.Sid);
  });

  it("Sundial's functions: every Lambda action, and event source mappings feeding them", () => {
    const fns = [s.tickFunction, s.scanFunction, s.reconcileFunction, s.apiFunction, s.pools[0].worker!];
    const x = bySid('SundialFunctions');
    assert.deepEqual(arr(x.Action), ['lambda:*']);
    assert.deepEqual(arr(x.Resource).map((r) => JSON.stringify(r)).sort(), refs(fns.flatMap((f) => [f.functionArn, `${f.functionArn}:*`])));
    const esm = bySid('SundialEventSourceMappings');
    assert.deepEqual(arr(esm.Resource), ['*']);
    assert.deepEqual(esm.Condition.ArnLike['lambda:FunctionArn'], x.Resource);
  });

  it('its tables (with indexes), queues, bus and log groups', () => {
    const tables = [s.jobsTable, s.executionsTable, ...Object.values(s.toolkitTables!)];
    const t = bySid('SundialTables');
    assert.deepEqual(arr(t.Action), ['dynamodb:*']);
    assert.deepEqual(arr(t.Resource).map((r) => JSON.stringify(r)).sort(), refs(tables.flatMap((x) => [x.tableArn, `${x.tableArn}/*`])));
    const q = bySid('SundialQueues');
    assert.deepEqual(arr(q.Action), ['sqs:*']);
    assert.deepEqual(arr(q.Resource).map((r) => JSON.stringify(r)).sort(), refs(s.pools.flatMap((p) => [p.queue, p.lowQueue, p.dlq, p.notifyQueue]).map((x) => x.queueArn)));
    assert.deepEqual(arr(bySid('SundialEventBus').Resource).map((r) => JSON.stringify(r)), refs([s.eventBus.eventBusArn]));
    const logs = bySid('SundialLogs');
    assert.deepEqual(arr(logs.Action), ['logs:*']);
    assert.ok(arr(logs.Resource).length >= 6);
  });

  it('its roles: no iam action (PassRole included), no assume, the tenant access role first', () => {
    const roles = [s.tenantAccessRole, ...s.pools.map((p) => p.role), s.apiFunction.role!, s.tickFunction.role!];
    const iamStmt = bySid('SundialRoles');
    assert.deepEqual(arr(iamStmt.Action), ['iam:*']);
    const names = arr(iamStmt.Resource).map((r) => JSON.stringify(r));
    for (const r of roles) assert.ok(names.includes(JSON.stringify(b.stack.resolve(r.roleArn))), r.node.path);
    const sts = bySid('SundialAssumeRoles');
    assert.deepEqual(arr(sts.Action).sort(), ['sts:AssumeRole', 'sts:SetSourceIdentity', 'sts:TagSession']);
    assert.deepEqual(arr(sts.Resource)[0], b.stack.resolve(s.tenantAccessRole.roleArn));
    assert.deepEqual(arr(sts.Resource).map((r) => JSON.stringify(r)).sort(), [...names].sort());
  });

  it('setting the tenant tag: on principals (iam Tag/Untag/Create of roles and users) and on targets, by aws:TagKeys', () => {
    const p = bySid('SundialTenantTagOfPrincipals');
    assert.deepEqual(arr(p.Action).sort(), ['iam:CreateRole', 'iam:CreateUser', 'iam:TagRole', 'iam:TagUser', 'iam:UntagRole', 'iam:UntagUser']);
    assert.deepEqual(arr(p.Resource), ['*']);
    // both the API's principal tag (here `team`) and the session tag of the tenant access role
    assert.deepEqual(p.Condition, { 'ForAnyValue:StringEquals': { 'aws:TagKeys': ['sundial-tenant', 'team'] } });
    const t = bySid('SundialTenantTagOfTargets');
    assert.deepEqual(arr(t.Resource), ['*']);
    assert.deepEqual(t.Condition['ForAnyValue:StringEquals'], p.Condition['ForAnyValue:StringEquals']);
  });

  it('the tenant tag of every kind of target Sundial judges by it (identity::Kind): no tagging, untagging or creating with it (review N3)', () => {
    // The kinds the worker's ownership check knows, read from the Rust source, so that a kind
    // added there without its tagging actions here fails this test.
    const src = fs.readFileSync(path.join(__dirname, '..', '..', 'functions/core/src/execution/target/identity.rs'), 'utf8');
    const body = src.match(/pub enum Kind \{([\s\S]*?)\n\}/);
    assert.ok(body, 'identity.rs declares `pub enum Kind`');
    const kinds = [...body[1].matchAll(/^\s*([A-Z][A-Za-z0-9]*),?\s*$/gm)].map((m) => m[1]);
    assert.ok(kinds.length >= 7, JSON.stringify(kinds));
    assert.deepEqual(kinds.filter((k) => !(k in TAGGING_OF_KIND)), [], 'a kind without its tagging actions: add them to the guardrail and to TAGGING_OF_KIND');
    const t = bySid('SundialTenantTagOfTargets');
    const denied = arr(t.Action) as string[];
    // ECS clusters: where a tenant's task may run (tenantTargets ecsClusters)
    const expected = [...kinds.flatMap((k) => TAGGING_OF_KIND[k]), 'ecs:CreateCluster'];
    assert.deepEqual(expected.filter((a) => !denied.includes(a)), []);
    // Tag at creation too: aws:TagKeys holds the key of every tag a request carries.
    assert.deepEqual(t.Condition['ForAnyValue:StringEquals'], { 'aws:TagKeys': ['sundial-tenant', 'team'] });
  });

  it("the tenant access role stays free to tag a task at RunTask with its tenant's tag (propagated from the task definition)", () => {
    const role = b.stack.resolve(s.tenantAccessRole.roleArn);
    assert.deepEqual(bySid('SundialTenantTagOfTargets').Condition.ArnNotEquals, { 'aws:PrincipalArn': role });
    const scp = b.stack.resolve(s.tenantGuardrailStatements({ onlyTaggedPrincipals: true }).map((x) => x.toStatementJson())) as any[];
    // The session carries aws:PrincipalTag/sundial-tenant, so an SCP's tagged-principal scope alone would catch it.
    assert.deepEqual(bySid('SundialTenantTagOfTargets', scp).Condition.ArnNotEquals, { 'aws:PrincipalArn': role });
  });

  it('for an SCP: every statement only for principals carrying the tenant tag', () => {
    const scp = b.stack.resolve(s.tenantGuardrailStatements({ onlyTaggedPrincipals: true }).map((x) => x.toStatementJson())) as any[];
    assert.equal(scp.length, statements().length);
    for (const x of scp) assert.equal(x.Condition.Null['aws:PrincipalTag/team'], 'false', x.Sid);
    assert.deepEqual(bySid('SundialTenantTagOfTargets', scp).Condition['ForAnyValue:StringEquals'], { 'aws:TagKeys': ['sundial-tenant', 'team'] });
    for (const x of statements()) assert.equal(x.Condition?.Null?.['aws:PrincipalTag/team'], undefined, `${x.Sid}: no principal condition unless asked`);
  });

  it('the app (bin/app.ts, SundialStack) makes the guardrail policies and names them in an output, to attach to every tenant principal', () => {
    const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
    const stack = new SundialStack(app, 'GuardrailApp', { scheduler: { ...JWT_PROPS, assetsDir: fakeAssetsDir() } });
    const t = Template.fromStack(stack);
    const policies = Object.entries(t.findResources('AWS::IAM::ManagedPolicy')) as Array<[string, any]>;
    assert.equal(policies.length, 3);
    const sids = policies.flatMap(([, p]) => (p.Properties.PolicyDocument.Statement as any[]).map((x) => x.Sid)).sort();
    assert.deepEqual(sids, (stack.resolve(stack.scheduler.tenantGuardrailStatements().map((x) => x.toStatementJson())) as any[]).map((x) => x.Sid).sort());
    const outputs = t.findOutputs('TenantGuardrailPolicyArns');
    assert.deepEqual(Object.values(outputs).map((o: any) => o.Value), [{ 'Fn::Join': [',', policies.map(([id]) => ({ Ref: id }))] }]);
  });

  it("each guardrail policy fits IAM's 6,144 characters for a managed policy, every name at its longest", () => {
    const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
    // The app's props with a long stack name, and a construct with every part that adds ARNs.
    const stack = new SundialStack(app, 'Sundial-production-eu-west-1', {
      scheduler: {
        apiAuth: { kind: 'iam' },
        assetsDir: fakeAssetsDir(),
        pools: [{ name: 'default' }, { name: 'bulk' }, { name: 'long', kind: 'ecs' }],
        toolkitTables: true,
        eventSources: [{ tenant: 'acme', bus: {} }, { tenant: 'globex', bus: {} }],
      },
    });
    const json = Template.fromStack(stack).toJSON();
    // Every generated name at 64 characters (CloudFormation's names of functions and roles reach it).
    const resolve = (e: any): any => {
      if (typeof e !== 'object' || e === null) return e;
      if (Array.isArray(e)) return e.map(resolve);
      if (e.Ref) return e.Ref.startsWith('AWS::') ? (e.Ref === 'AWS::AccountId' ? '123456789012' : e.Ref === 'AWS::Region' ? 'ap-southeast-2' : 'aws') : 'n'.repeat(64);
      if (e['Fn::GetAtt']) return `arn:aws:service:ap-southeast-2:123456789012:type/${'n'.repeat(64)}`;
      if (e['Fn::Join']) return (e['Fn::Join'][1] as any[]).map(resolve).join(e['Fn::Join'][0]);
      return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, resolve(v)]));
    };
    const policies = Object.entries(json.Resources).filter(([, r]: [string, any]) => r.Type === 'AWS::IAM::ManagedPolicy') as Array<[string, any]>;
    assert.equal(policies.length, 3);
    for (const [id, p] of policies) {
      const size = JSON.stringify(resolve(p.Properties.PolicyDocument)).length;
      assert.ok(size <= 6144, `${id}: ${size} characters`);
    }
  });

  it('as a managed policy of the stack, created once; the key is covered when there is one', () => {
    const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
    const stack = new Stack(app, 'Guardrail');
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
    const sundial = new SundialScheduler(stack, 'Sundial', { ...JWT_PROPS, assetsDir: fakeAssetsDir(), encryptionKey: key });
    const policy = sundial.tenantGuardrailPolicy();
    assert.equal(sundial.tenantGuardrailPolicy(), policy);
    const synthesized = Object.values(Template.fromStack(stack).findResources('AWS::IAM::ManagedPolicy')) as any[];
    assert.equal(synthesized.length, 1);
    const st = synthesized[0].Properties.PolicyDocument.Statement as any[];
    assert.ok(st.every((x) => x.Effect === 'Deny'));
    const k = st.find((x) => x.Sid === 'SundialKey');
    assert.deepEqual(k.Action, 'kms:*');
    assert.deepEqual(k.Resource, stack.resolve(key.keyArn));
    assert.ok(!statements().some((x) => x.Sid === 'SundialKey'), 'no key, no key statement');
  });
});
