/**
 * SundialScheduler as a library: grant methods, prop overrides (and what they cannot touch), a
 * customer-managed key, X-Ray tracing, the handler toolkit's tables, and code built from source
 * with cargo-lambda-cdk's RustFunction (bundling skipped: no Rust build in the tests).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { RustFunction } from 'cargo-lambda-cdk';
import { SundialCode } from '../lib/code';
import { resources } from '../lib/resources';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';
import { TOOLKIT_TABLES } from '../lib/toolkit';
import { actionsOn, build, Built, CDK_JSON_CONTEXT, envOf, fakeAssetsDir, JWT_PROPS, logicalId, roleStatements } from './helpers';

const r = resources();
const ROOT = path.resolve(__dirname, '..', '..');
const IAM: SundialSchedulerProps = { ...JWT_PROPS, apiAuth: { kind: 'iam' } };

/** A stack with the scheduler and a user's role, built by `f`. */
function withRole(props: SundialSchedulerProps, f: (s: SundialScheduler, role: iam.Role) => void): Built & { role: iam.Role } {
  const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
  const stack = new Stack(app, 'Consumer');
  const sundial = new SundialScheduler(stack, 'Sundial', { assetsDir: fakeAssetsDir(), ...props });
  const role = new iam.Role(stack, 'Consumer', { assumedBy: new iam.AccountRootPrincipal() });
  f(sundial, role);
  const template = Template.fromStack(stack);
  return { stack, sundial, template, json: template.toJSON() as Built['json'], role };
}

describe('grant methods', () => {
  it('grantInvokeApi: execute-api:Invoke on every route of the $default stage, IAM auth only', () => {
    const b = withRole(IAM, (s, role) => {
      const g = s.grantInvokeApi(role);
      assert.ok(g.success);
    });
    const st = roleStatements(b, b.role);
    assert.equal(st.length, 1);
    assert.deepEqual(st[0].actions, ['execute-api:Invoke']);
    const arn = JSON.stringify(st[0].resources[0]);
    assert.match(arn, /execute-api/);
    assert.match(arn, /\/\$default\/\*\/\*/);
    assert.ok(arn.includes(logicalId(b.stack, b.sundial.httpApi)), 'scoped to this API');
    assert.throws(() => withRole(JWT_PROPS, (s, role) => s.grantInvokeApi(role)), /JWT/);
  });

  it('grantReadJobs / grantReadExecutions: read actions on the table and its indexes, no writes', () => {
    const b = withRole(JWT_PROPS, (s, role) => {
      s.grantReadJobs(role);
      s.grantReadExecutions(role);
    });
    const st = roleStatements(b, b.role);
    for (const t of [b.sundial.jobsTable, b.sundial.executionsTable]) {
      const acts = actionsOn(st, b.stack.resolve(t.tableArn));
      for (const a of ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query']) assert.ok(acts.includes(a), a);
      assert.ok(!acts.some((a) => /Put|Update|Delete|Write/.test(a)), acts.join());
      const indexes = actionsOn(st, { 'Fn::Join': ['', [b.stack.resolve(t.tableArn), '/index/*']] });
      assert.ok(indexes.includes('dynamodb:Query'), 'the indexes are readable too');
    }
  });

  it('grantToolkit: exactly the toolkit calls, and only when the tables exist', () => {
    const b = withRole({ ...JWT_PROPS, toolkitTables: true }, (s, role) => s.grantToolkit(role));
    const st = roleStatements(b, b.role);
    for (const [name, def] of Object.entries(TOOLKIT_TABLES)) {
      const t = b.sundial.toolkitTables![name as keyof typeof TOOLKIT_TABLES];
      assert.deepEqual(actionsOn(st, b.stack.resolve(t.tableArn)), [...def.actions].sort(), name);
    }
    assert.throws(() => withRole(JWT_PROPS, (s, role) => s.grantToolkit(role)), /toolkitTables/);
  });
});

describe('handler toolkit tables', () => {
  it('are not created unless asked for', () => {
    build().template.resourceCountIs('AWS::DynamoDB::Table', 2);
  });

  it('have the string hash key pk, TTL on the markers, the names ToolkitTables::with_prefix uses', () => {
    const b = build({ ...JWT_PROPS, toolkitTables: { namePrefix: 'acme-' } });
    b.template.resourceCountIs('AWS::DynamoDB::Table', 5);
    for (const [name, def] of Object.entries(TOOLKIT_TABLES)) {
      const t = b.json.Resources[logicalId(b.stack, b.sundial.toolkitTables![name as keyof typeof TOOLKIT_TABLES])];
      assert.equal(t.Properties.TableName, `acme-${name}`);
      assert.deepEqual(t.Properties.KeySchema, [{ AttributeName: 'pk', KeyType: 'HASH' }]);
      assert.deepEqual(t.Properties.AttributeDefinitions, [{ AttributeName: 'pk', AttributeType: 'S' }]);
      assert.deepEqual(t.Properties.TimeToLiveSpecification, def.ttlAttribute ? { AttributeName: def.ttlAttribute, Enabled: true } : undefined);
      assert.equal(t.Properties.BillingMode, 'PAY_PER_REQUEST');
      assert.equal(t.DeletionPolicy, 'Retain');
    }
  });

  it('match the Rust crate: key name, table names, TTL attribute and the calls it makes', () => {
    const src = (f: string) => fs.readFileSync(path.join(ROOT, 'functions', 'idempotency', 'src', f), 'utf8');
    assert.match(src('tables.rs'), /pub const PK: &str = "pk";/);
    for (const t of Object.values(TOOLKIT_TABLES)) assert.ok(src('tables.rs').includes(`format!("{prefix}${t.suffix}")`), t.suffix);
    assert.match(src('marker.rs'), /\.item\("expires_at"/);
    // every SDK call of the three modules is covered by the table's grant
    const calls = (f: string) => [...src(f).matchAll(/\.(get_item|put_item|update_item|scan|query|delete_item|transact_write_items)\(\)/g)].map((m) => m[1]);
    const action = (c: string) => (c === 'transact_write_items' ? 'dynamodb:PutItem' : `dynamodb:${c.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('')}`);
    for (const [file, table] of [['inbox.rs', 'inbox'], ['outbound.rs', 'outbound'], ['marker.rs', 'markers']] as const) {
      const needed = [...new Set(calls(file).map(action))].sort();
      assert.deepEqual(needed, [...TOOLKIT_TABLES[table].actions].sort(), file);
    }
  });
});

describe('overrides', () => {
  it('apply to tables, functions and queues', () => {
    const b = build({
      ...JWT_PROPS,
      tableOverrides: { all: { contributorInsightsSpecification: { enabled: true } }, executions: { tableClass: undefined, deletionProtection: false } },
      functionOverrides: { all: { memorySize: 1024 }, api: { memorySize: 2048, description: 'our api' } },
      queueOverrides: { queues: { receiveMessageWaitTime: Duration.seconds(20) }, dlqs: { maxMessageSizeBytes: 65536 } },
    });
    const res = (c: { node: { defaultChild?: unknown } }) => b.json.Resources[logicalId(b.stack, c)].Properties;
    assert.deepEqual(res(b.sundial.jobsTable).ContributorInsightsSpecification, { Enabled: true });
    assert.equal(res(b.sundial.jobsTable).DeletionProtectionEnabled, true);
    assert.equal(res(b.sundial.executionsTable).DeletionProtectionEnabled, false);
    assert.equal(res(b.sundial.tickFunction).MemorySize, 1024);
    assert.equal(res(b.sundial.apiFunction).MemorySize, 2048);
    assert.equal(res(b.sundial.apiFunction).Description, 'our api');
    for (const p of b.sundial.pools) {
      assert.equal(res(p.queue).ReceiveMessageWaitTimeSeconds, 20);
      assert.equal(res(p.queue).MaximumMessageSize, undefined);
      assert.equal(res(p.dlq).MaximumMessageSize, 65536);
      assert.equal(res(p.queue).QueueName, `SundialTest-${p.name}`, 'the name stays');
    }
    // the key schema, env and timeouts are untouched
    assert.deepEqual(res(b.sundial.jobsTable).KeySchema[0], { AttributeName: r.tables.jobs.partitionKey.name, KeyType: 'HASH' });
    assert.equal(envOf(b, b.sundial.apiFunction)[r.env.tenantClaim], r.defaults.tenantClaim);
  });

  for (const [what, props, msg] of [
    ['a table key', { tableOverrides: { jobs: { partitionKey: { name: 'id', type: 'S' } } } }, /tableOverrides\.jobs\.partitionKey/],
    ['a table name', { tableOverrides: { all: { tableName: 'x' } } }, /tableOverrides\.all\.tableName/],
    ['table encryption', { tableOverrides: { all: { encryption: 'AWS_MANAGED' } } }, /encryption/],
    ['a function env', { functionOverrides: { all: { environment: { SUNDIAL_SHARDS: '1' } } } }, /functionOverrides\.all\.environment/],
    ['a function timeout', { functionOverrides: { workers: { timeout: Duration.minutes(15) } } }, /timeout/],
    ['a function role', { functionOverrides: { api: { role: {} } } }, /role/],
    ['a queue name', { queueOverrides: { all: { queueName: 'x' } } }, /queueName/],
    ['the redrive', { queueOverrides: { queues: { deadLetterQueue: {} } } }, /deadLetterQueue/],
  ] as const) {
    it(`refuse to override ${what}`, () => {
      assert.throws(() => build({ ...JWT_PROPS, ...(props as any) }), msg);
    });
  }

  it('a function in a VPC gets Lambda’s VPC access policy (its role is the construct’s own)', () => {
    const app = new App({ context: CDK_JSON_CONTEXT });
    const stack = new Stack(app, 'Vpc');
    const vpc = new ec2.Vpc(stack, 'Net', { maxAzs: 2, natGateways: 0 });
    const s = new SundialScheduler(stack, 'Sundial', { ...JWT_PROPS, assetsDir: fakeAssetsDir(), functionOverrides: { api: { vpc, allowPublicSubnet: true } } });
    const t = Template.fromStack(stack).toJSON();
    const role = t.Resources[stack.getLogicalId(s.apiFunction.role!.node.defaultChild as any)];
    assert.match(JSON.stringify(role.Properties.ManagedPolicyArns), /AWSLambdaVPCAccessExecutionRole/);
    assert.ok(t.Resources[stack.getLogicalId(s.apiFunction.node.defaultChild as any)].Properties.VpcConfig);
  });
});

describe('customer-managed key', () => {
  const app = new App({ context: CDK_JSON_CONTEXT });
  const stack = new Stack(app, 'Kms');
  const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
  const s = new SundialScheduler(stack, 'Sundial', {
    ...JWT_PROPS,
    pools: [{ name: 'default' }, { name: 'long', kind: 'ecs' }],
    assetsDir: fakeAssetsDir(),
    encryptionKey: key,
    toolkitTables: true,
  });
  const t = Template.fromStack(stack);
  const json = t.toJSON();
  const keyRef = { 'Fn::GetAtt': [stack.getLogicalId(key.node.defaultChild as kms.CfnKey), 'Arn'] };
  const b = { stack, sundial: s, template: t, json } as Built;

  it('encrypts every table, queue and log group with it', () => {
    for (const tb of Object.values(t.findResources('AWS::DynamoDB::Table'))) {
      assert.deepEqual(tb.Properties.SSESpecification, { KMSMasterKeyId: keyRef, SSEEnabled: true, SSEType: 'KMS' });
    }
    for (const q of Object.values(t.findResources('AWS::SQS::Queue'))) assert.deepEqual(q.Properties.KmsMasterKeyId, keyRef);
    const groups = Object.values(t.findResources('AWS::Logs::LogGroup'));
    assert.ok(groups.length >= 6);
    for (const g of groups) assert.deepEqual(g.Properties.KmsKeyId, keyRef);
  });

  it('lets CloudWatch Logs use it for Sundial’s own log groups only', () => {
    const [k] = Object.values(t.findResources('AWS::KMS::Key'));
    const logs = k.Properties.KeyPolicy.Statement.find((x: any) => JSON.stringify(x.Principal ?? {}).includes('logs.'));
    assert.ok(logs, 'a statement for the logs service principal');
    const arns = logs.Condition.ArnLike['kms:EncryptionContext:aws:logs:arn'];
    assert.ok(Array.isArray(arns), JSON.stringify(logs.Condition));
    // One pattern per log group of the construct, by the name CloudFormation gives it
    // ({stack name}-{logical id}-{suffix}): no other log group of the account or the stack.
    const groups = Object.keys(t.findResources('AWS::Logs::LogGroup'));
    assert.equal(arns.length, groups.length);
    const expected = groups.map((id) => ({
      'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':logs:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:log-group:Kms-${id}-*`]],
    }));
    assert.deepEqual(arns.map((x: unknown) => JSON.stringify(x)).sort(), expected.map((x) => JSON.stringify(x)).sort());
    assert.ok(!JSON.stringify(logs.Condition).includes('log-group:*'), 'not every log group');
  });

  it('grants encrypt/decrypt to every function and the ECS task role', () => {
    const roles = [s.tickFunction.role!, s.scanFunction.role!, s.reconcileFunction.role!, s.apiFunction.role!, ...s.pools.map((p) => p.role)];
    for (const role of roles) {
      const acts = actionsOn(roleStatements(b, role), keyRef);
      for (const a of ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey']) assert.ok(acts.includes(a), `${role.node.path}: ${a}`);
    }
  });

  it('an imported key: a warning that its policy must allow CloudWatch Logs', () => {
    const app2 = new App({ context: CDK_JSON_CONTEXT });
    const st = new Stack(app2, 'Imported');
    new SundialScheduler(st, 'Sundial', {
      ...JWT_PROPS,
      assetsDir: path.resolve(__dirname, '..', 'assets'),
      encryptionKey: kms.Key.fromKeyArn(st, 'K', 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555'),
    });
    const msgs = app2.synth().getStackByName('Imported').messages.map((m) => String(m.entry.data));
    assert.ok(msgs.some((m) => m.includes('CloudWatch Logs')), msgs.join('\n'));
  });
});

describe('tracing', () => {
  it('is off by default and Active on every Lambda function when asked', () => {
    for (const f of Object.values(build().template.findResources('AWS::Lambda::Function'))) assert.equal(f.Properties.TracingConfig, undefined);
    const b = build({ ...JWT_PROPS, tracing: true });
    const fns = Object.values(b.template.findResources('AWS::Lambda::Function'));
    assert.ok(fns.length >= 5);
    for (const f of fns) assert.deepEqual(f.Properties.TracingConfig, { Mode: 'Active' });
    const st = roleStatements(b, b.sundial.apiFunction.role!);
    assert.ok(st.some((x) => x.actions.includes('xray:PutTraceSegments')));
  });
});

describe('settings reach the functions', () => {
  it('workers props and tenantClaim are in the env of the functions that read them', () => {
    const b = build({
      ...JWT_PROPS,
      pools: [{ name: 'default' }, { name: 'long', kind: 'ecs' }],
      workers: { lease: Duration.seconds(45), skewMargin: Duration.seconds(3), maxTotalRun: Duration.hours(1), tenantMaxRunning: { default: 5, tenants: { acme: 9 } } },
      tenantClaim: 'https://example.com/tenant',
    });
    const e = r.env;
    const [td] = Object.values(b.template.findResources('AWS::ECS::TaskDefinition'));
    const ecsEnv = Object.fromEntries(td.Properties.ContainerDefinitions[0].Environment.map((x: any) => [x.Name, x.Value]));
    for (const vars of [envOf(b, b.sundial.pools[0].worker!), ecsEnv]) {
      assert.equal(vars[e.leaseSecs], '45');
      assert.equal(vars[e.skewMarginMs], '3000');
      assert.equal(vars[e.maxTotalRunSecs], '3600');
      assert.equal(vars[e.tenantMaxRunning], '5,acme=9');
    }
    assert.equal(envOf(b, b.sundial.apiFunction)[e.tenantClaim], 'https://example.com/tenant');
  });
});

describe('code from source (cargo-lambda-cdk)', () => {
  // Bundling is skipped for every stack (`aws:cdk:bundling-stacks` = []), as `cdk synth
  // --exclusively` of another stack would: the functions are RustFunctions of the workspace, but
  // nothing compiles here.
  const app = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'FromSource');
  const s = new SundialScheduler(stack, 'Sundial', { ...JWT_PROPS, code: SundialCode.fromSource({ manifestPath: path.join(ROOT, 'Cargo.toml') }) });

  it('makes every function a RustFunction of its binary, arm64 on provided.al2023', () => {
    for (const fn of [s.tickFunction, s.scanFunction, s.reconcileFunction, s.apiFunction, ...s.pools.map((p) => p.worker!)]) {
      assert.ok(fn instanceof RustFunction, fn.node.id);
      assert.equal(fn.architecture, lambda.Architecture.ARM_64);
      assert.equal(fn.runtime.name, 'provided.al2023');
    }
    const t = Template.fromStack(stack);
    t.resourceCountIs('AWS::Lambda::Function', 4 + s.pools.length);
  });

  it('an ECS pool needs ecsImage (the container is not a Lambda zip)', () => {
    const st = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'S');
    const code = SundialCode.fromSource({ manifestPath: ROOT });
    assert.throws(() => new SundialScheduler(st, 'A', { ...JWT_PROPS, code, pools: [{ name: 'long', kind: 'ecs' }] }), /ecsImage/);
    new SundialScheduler(st, 'B', { ...JWT_PROPS, code, pools: [{ name: 'long', kind: 'ecs' }], ecsImage: ecs.ContainerImage.fromRegistry('example/worker-ecs:1') });
  });

  it('refuses assetsDir and code together', () => {
    assert.throws(() => build({ ...JWT_PROPS, code: SundialCode.fromAssets('/tmp') }), /assetsDir or code/);
  });
});

describe('the app’s context', () => {
  it('sundial:manifestPath builds from source, sundial:assetsDir from prebuilt assets, not both', async () => {
    const { appConfig } = await import('../lib/config');
    const ctx = (m: Record<string, string>) => (k: string) => m[k];
    const src = appConfig(ctx({ 'sundial:manifestPath': '../Cargo.toml' }), __dirname).scheduler.code!.resolve();
    assert.deepEqual(src, { kind: 'source', manifestPath: path.resolve(__dirname, '../Cargo.toml'), bundling: undefined });
    assert.equal(appConfig(ctx({ 'sundial:assetsDir': 'x' }), '/base').scheduler.assetsDir, '/base/x');
    assert.throws(() => appConfig(ctx({ 'sundial:assetsDir': 'x', 'sundial:manifestPath': 'y' }), '/'), /not both/);
  });
});
