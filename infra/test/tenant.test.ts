/**
 * The tenant boundary in IAM (issue 28, review C1): workers call targets and read secrets as the
 * tenant, through a session of the tenant access role tagged `sundial-tenant=<tenant>`, so that
 * AWS itself refuses a secret, function or queue tagged for another tenant. No worker role and no
 * API role holds a grant on a tenant's secret, function or queue any more.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';
import { build, Built, CDK_JSON_CONTEXT, envOf, fakeAssetsDir, JWT_PROPS, logicalId, roleStatements, Stmt } from './helpers';

const SECRETS = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:sundial-webhooks/*';
const FUNCTION = 'arn:aws:lambda:us-east-1:123456789012:function:report-builder';
const QUEUE = 'arn:aws:sqs:us-east-1:123456789012:outbox';
const TAG_CONDITION = { StringEquals: { 'aws:ResourceTag/sundial-tenant': '${aws:PrincipalTag/sundial-tenant}' } };

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
  const ownQueues = new Set(s.pools.flatMap((p) => [p.queue, p.lowQueue, p.dlq]).map((q) => res(q.queueArn)));
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
    assert.deepEqual(on('sqs:SendMessage'), [QUEUE]);
    assert.deepEqual(on('sqs:ListQueueTags'), [QUEUE]);
    assert.ok(st.length > 0);
    for (const x of st) {
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
    const byAction = Object.fromEntries(st.map((x) => [x.actions.join(','), { resources: x.resources, condition: x.condition }]));
    assert.deepEqual(byAction, {
      // the task definition's tag and the cluster
      'ecs:RunTask': { resources: [`${FAMILY}:*`], condition: { ...TAG_CONDITION, ...inCluster } },
      // the task's tag, propagated from its task definition
      'ecs:DescribeTasks,ecs:StopTask': { resources: [TASKS], condition: TAG_CONDITION },
      // the task being created has no tag yet: only within RunTask
      'ecs:TagResource': { resources: [TASKS], condition: { StringEquals: { 'ecs:CreateAction': 'RunTask' } } },
      // authorized on container instances (none for Fargate): the cluster
      'ecs:ListTasks': { resources: ['*'], condition: inCluster },
      // the worker reads the task definition's tag with it: on the revisions, the tag condition
      'ecs:ListTagsForResource': { resources: [`${FAMILY}:*`], condition: TAG_CONDITION },
      'iam:PassRole': { resources: ROLES, condition: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } } },
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

  it('deny by default: without allowed targets the tenant access role has no statement', () => {
    const p = build({ ...JWT_PROPS, allowedTargetFunctionArns: undefined });
    assert.deepEqual(roleStatements(p, tenantRoleOf(p)), []);
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
    assert.deepEqual(arr(q.Resource).map((r) => JSON.stringify(r)).sort(), refs(s.pools.flatMap((p) => [p.queue, p.lowQueue, p.dlq]).map((x) => x.queueArn)));
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
    assert.deepEqual(arr(t.Action).sort(), [
      'lambda:TagResource',
      'lambda:UntagResource',
      'secretsmanager:TagResource',
      'secretsmanager:UntagResource',
      'sqs:TagQueue',
      'sqs:UntagQueue',
    ]);
    assert.deepEqual(t.Condition, p.Condition);
  });

  it('for an SCP: every statement only for principals carrying the tenant tag', () => {
    const scp = b.stack.resolve(s.tenantGuardrailStatements({ onlyTaggedPrincipals: true }).map((x) => x.toStatementJson())) as any[];
    assert.equal(scp.length, statements().length);
    for (const x of scp) assert.deepEqual(x.Condition.Null, { 'aws:PrincipalTag/team': 'false' }, x.Sid);
    assert.deepEqual(bySid('SundialTenantTagOfTargets', scp).Condition['ForAnyValue:StringEquals'], { 'aws:TagKeys': ['sundial-tenant', 'team'] });
    for (const x of statements()) assert.equal(x.Condition?.Null, undefined, `${x.Sid}: no principal condition unless asked`);
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
