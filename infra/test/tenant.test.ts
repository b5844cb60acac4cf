/**
 * The tenant boundary in IAM (issue 28, review C1): workers call targets and read secrets as the
 * tenant, through a session of the tenant access role tagged `sundial-tenant=<tenant>`, so that
 * AWS itself refuses a secret, function or queue tagged for another tenant. No worker role and no
 * API role holds a grant on a tenant's secret, function or queue any more.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { build, Built, envOf, JWT_PROPS, logicalId, roleStatements, Stmt } from './helpers';

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

  it('the trust policy admits the worker roles only, for AssumeRole and TagSession, with the session tag required', () => {
    const role = b.json.Resources[logicalId(b.stack, tenantRoleOf(b) as unknown as { node: { defaultChild?: unknown } })];
    assert.equal(role.Type, 'AWS::IAM::Role');
    const workers = new Set(s.pools.map((p) => JSON.stringify({ 'Fn::GetAtt': [logicalId(b.stack, p.role as any), 'Arn'] })));
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

  it('deny by default: without allowed targets the tenant access role has no statement', () => {
    const p = build({ ...JWT_PROPS, allowedTargetFunctionArns: undefined });
    assert.deepEqual(roleStatements(p, tenantRoleOf(p)), []);
    for (const pool of p.sundial.pools) {
      const st = roleStatements(p, pool.role);
      for (const a of ['secretsmanager:GetSecretValue', 'lambda:InvokeFunction']) assert.ok(!st.some((x) => grants(x, a)), `${pool.name}: ${a}`);
    }
  });
});
