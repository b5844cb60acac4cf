/**
 * SundialScheduler's template, checked with aws-cdk-lib/assertions: tables, queues, schedule,
 * event sources, least-privilege IAM per function, alarms, dashboard and the API's auth.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App, Duration, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { resources } from '../lib/resources';
import { SundialScheduler } from '../lib/sundial-scheduler';
import { actionsOn, allActions, build, Built, CDK_JSON_CONTEXT, envOf, JWT_PROPS, logicalId, roleStatements } from './helpers';

const r = resources();

describe('tables', () => {
  const b = build();

  it('are on-demand with point-in-time recovery, TTL, deletion protection and RETAIN', () => {
    const tables = b.template.findResources('AWS::DynamoDB::Table');
    assert.equal(Object.keys(tables).length, 2);
    for (const t of Object.values(tables)) {
      assert.equal(t.Properties.BillingMode, 'PAY_PER_REQUEST');
      assert.deepEqual(t.Properties.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true });
      assert.deepEqual(t.Properties.TimeToLiveSpecification, { AttributeName: 'expires_at', Enabled: true });
      assert.equal(t.Properties.DeletionProtectionEnabled, true);
      assert.equal(t.DeletionPolicy, 'Retain');
      assert.equal(t.UpdateReplacePolicy, 'Retain');
      // CloudFormation names them unless tableNamePrefix is given.
      assert.equal(t.Properties.TableName, undefined);
    }
  });

  it('have the jobs key schema and the due and by_tenant indexes', () => {
    b.template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: Match.arrayWith([
        {
          IndexName: 'due',
          KeySchema: [
            { AttributeName: 'due_pk', KeyType: 'HASH' },
            { AttributeName: 'due_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
        {
          IndexName: 'by_tenant',
          KeySchema: [
            { AttributeName: 'tenant_pk', KeyType: 'HASH' },
            { AttributeName: 'tenant_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ]),
    });
    b.template.hasResourceProperties('AWS::DynamoDB::Table', {
      GlobalSecondaryIndexes: [
        Match.objectLike({ IndexName: 'attention', Projection: { ProjectionType: 'ALL' } }),
        Match.objectLike({ IndexName: 'open', Projection: { ProjectionType: 'KEYS_ONLY' } }),
      ],
    });
  });

  it('get physical names from tableNamePrefix', () => {
    const p = build({ ...JWT_PROPS, tableNamePrefix: 'prod-' });
    p.template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'prod-sundial-jobs' });
    p.template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'prod-sundial-executions' });
  });

  it('can be made disposable for test stacks', () => {
    const p = build({ ...JWT_PROPS, retainData: false });
    for (const t of Object.values(p.template.findResources('AWS::DynamoDB::Table'))) {
      assert.equal(t.DeletionPolicy, 'Delete');
      assert.equal(t.Properties.DeletionProtectionEnabled, false);
    }
  });
});

describe('queues', () => {
  const b = build();

  it('are named {prefix}{pool} and {prefix}{pool}-dlq with the stack name as default prefix', () => {
    assert.equal(b.sundial.queuePrefix, 'SundialTest-');
    for (const pool of ['default', 'bulk']) {
      b.template.hasResourceProperties('AWS::SQS::Queue', { QueueName: `SundialTest-${pool}` });
      b.template.hasResourceProperties('AWS::SQS::Queue', { QueueName: `SundialTest-${pool}-dlq` });
    }
  });

  it('redrive to their own DLQ, are encrypted and keep messages 14 days', () => {
    for (const pool of b.sundial.pools) {
      const q = b.json.Resources[logicalId(b.stack, pool.queue)].Properties;
      assert.deepEqual(q.RedrivePolicy, {
        deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(b.stack, pool.dlq), 'Arn'] },
        maxReceiveCount: 50,
      });
      assert.equal(q.SqsManagedSseEnabled, true);
      assert.equal(q.MessageRetentionPeriod, 1209600);
      const d = b.json.Resources[logicalId(b.stack, pool.dlq)].Properties;
      assert.equal(d.SqsManagedSseEnabled, true);
      assert.equal(d.MessageRetentionPeriod, 1209600);
    }
  });

  it('deny every request not made over TLS', () => {
    const policies = Object.values(b.template.findResources('AWS::SQS::QueuePolicy'));
    // one per queue: 2 pools x (queue + low lane + DLQ + notify queue)
    assert.equal(policies.length, 8);
    for (const p of policies) {
      assert.ok(
        p.Properties.PolicyDocument.Statement.some(
          (s: any) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false',
        ),
      );
    }
  });

  it('have a visibility timeout above the worker timeout', () => {
    for (const pool of b.sundial.pools) {
      const q = b.json.Resources[logicalId(b.stack, pool.queue)].Properties;
      const fn = b.json.Resources[logicalId(b.stack, pool.worker!)].Properties;
      assert.ok(q.VisibilityTimeout > fn.Timeout, `${pool.name}: ${q.VisibilityTimeout} <= ${fn.Timeout}`);
      assert.ok(q.VisibilityTimeout >= r.queues.visibilityTimeoutSeconds);
    }
    assert.equal(b.json.Resources[logicalId(b.stack, b.sundial.pools[0].worker!)].Properties.Timeout, 180);
  });
});

describe('functions', () => {
  const b = build();

  it('are Rust on provided.al2023 arm64 from assets, one log group with retention each', () => {
    const fns = b.template.findResources('AWS::Lambda::Function');
    // tick, scan, reconcile, api, 2 workers
    assert.equal(Object.keys(fns).length, 6);
    for (const f of Object.values(fns)) {
      assert.equal(f.Properties.Runtime, 'provided.al2023');
      assert.deepEqual(f.Properties.Architectures, ['arm64']);
      assert.equal(f.Properties.Handler, 'bootstrap');
      assert.ok(f.Properties.Code.S3Key, 'code comes from an asset');
      assert.ok(f.Properties.LoggingConfig.LogGroup, 'explicit log group');
    }
    for (const g of Object.values(b.template.findResources('AWS::Logs::LogGroup'))) {
      assert.equal(g.Properties.RetentionInDays, 30);
    }
  });

  it('tick and scan share the tick asset', () => {
    const tick = b.json.Resources[logicalId(b.stack, b.sundial.tickFunction)].Properties.Code;
    const scan = b.json.Resources[logicalId(b.stack, b.sundial.scanFunction)].Properties.Code;
    assert.deepEqual(tick, scan);
  });

  it('the tick runs every minute from EventBridge', () => {
    b.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(b.stack, b.sundial.tickFunction), 'Arn'] } })],
    });
    b.template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalId(b.stack, b.sundial.tickFunction), 'Arn'] },
    });
  });

  it('the reconciler runs on its own schedule and alarms when it re-sends', () => {
    const fn = logicalId(b.stack, b.sundial.reconcileFunction);
    b.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fn, 'Arn'] }, Input: '{"reconcile":{}}' })],
    });
    const props = b.json.Resources[fn].Properties;
    assert.equal(props.ReservedConcurrentExecutions, undefined, 'no reserved concurrency (new accounts have 10)');
    assert.deepEqual(props.Code, b.json.Resources[logicalId(b.stack, b.sundial.tickFunction)].Properties.Code);
    const alarms = Object.values(b.template.findResources('AWS::CloudWatch::Alarm')) as any[];
    const resent = alarms.find((a) => String(a.Properties.AlarmDescription).includes('re-sent executions'));
    assert.ok(resent, 'an alarm on re-sent executions');
    assert.match(JSON.stringify(resent.Properties.Metrics), /ExecutionsResent/);
    assert.ok(alarms.some((a) => String(a.Properties.AlarmDescription).includes('reconciler failed')));
  });

  it('the stack owns an event bus for FireMissed, named to every function, put to by the reconciler and workers only', () => {
    const buses = b.template.findResources('AWS::Events::EventBus');
    assert.equal(Object.keys(buses).length, 1, 'one bus');
    const busName = b.sundial.eventBusName;
    b.template.hasResourceProperties('AWS::Events::EventBus', { Name: busName });
    const env = (fn: lambda.IFunction) => b.json.Resources[logicalId(b.stack, fn)].Properties.Environment.Variables;
    for (const fn of [b.sundial.reconcileFunction, b.sundial.tickFunction, b.sundial.apiFunction]) {
      assert.deepEqual(env(fn).SUNDIAL_EVENT_BUS, busName, fn.node.id);
    }
    const busArn = b.stack.resolve(b.sundial.eventBus.eventBusArn);
    for (const fn of [b.sundial.tickFunction, b.sundial.scanFunction, b.sundial.apiFunction]) {
      assert.deepEqual(actionsOn(roleStatements(b, fn.role!), busArn), [], `${fn.node.id} puts no events`);
    }
    const alarms = Object.values(b.template.findResources('AWS::CloudWatch::Alarm')) as any[];
    const missed = alarms.find((a) => String(a.Properties.AlarmDescription).includes('startDeadlineSecs'));
    assert.ok(missed, 'an alarm on missed starts');
    assert.match(JSON.stringify(missed.Properties.Metrics), /FiresMissed/);
    const named = build({ ...JWT_PROPS, eventBusName: 'acme-sundial-events' });
    named.template.hasResourceProperties('AWS::Events::EventBus', { Name: 'acme-sundial-events' });
    assert.throws(() => build({ ...JWT_PROPS, eventBusName: 'bad name' }), /eventBusName/);
  });

  it('the executions table has the sparse open index, keys only', () => {
    const [t] = Object.values(b.template.findResources('AWS::DynamoDB::Table')).filter((x: any) =>
      (x.Properties.GlobalSecondaryIndexes ?? []).some((i: any) => i.IndexName === 'attention'),
    ) as any[];
    const open = t.Properties.GlobalSecondaryIndexes.find((i: any) => i.IndexName === 'open');
    assert.deepEqual(open.KeySchema, [
      { AttributeName: 'open_pk', KeyType: 'HASH' },
      { AttributeName: 'open_due', KeyType: 'RANGE' },
    ]);
    assert.equal(open.Projection.ProjectionType, 'KEYS_ONLY');
    assert.ok(t.Properties.AttributeDefinitions.some((a: any) => a.AttributeName === 'open_due' && a.AttributeType === 'N'));
  });

  it('workers consume their pool queue with partial batch responses and maximum concurrency', () => {
    const maps = Object.values(b.template.findResources('AWS::Lambda::EventSourceMapping'));
    // the pool queue, its low lane (docs/priority.md; test/priority.test.ts) and its notify
    // queue (test/notify.test.ts)
    assert.equal(maps.length, 6);
    const byPool = new Map(b.sundial.pools.map((p) => [p.name, p]));
    for (const [name, max] of [
      ['default', 20],
      ['bulk', 5],
    ] as const) {
      const pool = byPool.get(name)!;
      b.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [logicalId(b.stack, pool.queue), 'Arn'] },
        FunctionName: { Ref: logicalId(b.stack, pool.worker!) },
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: max },
      });
    }
    // No batching window by default: a message is handed over as soon as it is visible.
    for (const m of maps as any[]) assert.equal(m.Properties.MaximumBatchingWindowInSeconds, undefined);
  });

  it('a Lambda pool can trade start lag for fuller batches with a batching window', () => {
    const props = { ...JWT_PROPS, pools: [{ name: 'default', batchingWindow: Duration.seconds(3) }] };
    const t = build(props, 'SundialBatching').template;
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 10, MaximumBatchingWindowInSeconds: 3 });
    const bad = { ...JWT_PROPS, pools: [{ name: 'default', batchingWindow: Duration.seconds(301) }] };
    assert.throws(() => build(bad, 'SundialBadBatching'), /batchingWindow must be 0-300 seconds/);
  });
});

describe('least privilege', () => {
  const b = build();
  const s = b.sundial;
  const res = (x: string) => b.stack.resolve(x);
  const jobs = res(s.jobsTable.tableArn);
  const execs = res(s.executionsTable.tableArn);
  const dueIndex = b.stack.resolve(`${s.jobsTable.tableArn}/index/due`);
  const defaultPool = s.pools.find((p) => p.name === 'default')!;
  const bulkPool = s.pools.find((p) => p.name === 'bulk')!;

  it('tick: query the due index, update jobs, put executions, send to pool queues, invoke scan', () => {
    const st = roleStatements(b, s.tickFunction.role!);
    assert.deepEqual(actionsOn(st, dueIndex), ['dynamodb:Query']);
    assert.deepEqual(actionsOn(st, jobs), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    assert.deepEqual(actionsOn(st, execs), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    for (const pool of s.pools) {
      // GetQueueAttributes: lane depths, the back-pressure signal (docs/priority.md)
      assert.deepEqual(actionsOn(st, res(pool.queue.queueArn)), ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
      assert.deepEqual(actionsOn(st, res(pool.dlq.queueArn)), [], 'the tick never writes to a DLQ');
    }
    assert.deepEqual(actionsOn(st, res(s.scanFunction.functionArn)), ['lambda:InvokeFunction']);
    const invokes = st.filter((x) => x.actions.includes('lambda:InvokeFunction'));
    assert.equal(invokes.length, 1);
    assert.deepEqual(invokes[0].resources, [res(s.scanFunction.functionArn)]);
    assert.deepEqual(allActions(st), [
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'lambda:InvokeFunction',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:SendMessage',
    ]);
  });

  it('every function writes logs to its own log group only, with no managed policy', () => {
    const fns = [s.tickFunction, s.scanFunction, s.reconcileFunction, s.apiFunction, ...s.pools.map((p) => p.worker!)];
    for (const fn of fns) {
      const st = roleStatements(b, fn.role!);
      const logGroupArn = res((fn as any).logGroup.logGroupArn);
      assert.deepEqual(actionsOn(st, logGroupArn), ['logs:CreateLogStream', 'logs:PutLogEvents'], fn.node.id);
      const logs = st.filter((x) => x.actions.some((a) => a.startsWith('logs:')));
      assert.ok(logs.every((x) => x.resources.every((r) => JSON.stringify(r) === JSON.stringify(logGroupArn))), fn.node.id);
      const role = b.json.Resources[logicalId(b.stack, fn.role!)];
      assert.equal(role.Properties.ManagedPolicyArns, undefined, `${fn.node.id}: no AWSLambdaBasicExecutionRole`);
    }
  });

  it('reconciler: queries the open index, reads and updates executions, sends to pool queues, reports missed starts, pauses jobs for their dead fires, assumes the tenant access role for outcome notifications, nothing else', () => {
    const st = roleStatements(b, s.reconcileFunction.role!);
    assert.deepEqual(actionsOn(st, b.stack.resolve(`${s.executionsTable.tableArn}/index/open`)), ['dynamodb:Query']);
    // Query: a waiting parent's children (docs/children.md); PutItem: the fires a job owes,
    // put by the auto-pause before it pauses (docs/outcomes.md)
    assert.deepEqual(actionsOn(st, execs), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    // PutItem: the operations-log entry of a missed start; the rest: the auto-pause's read and
    // versioned write of the job (docs/outcomes.md)
    assert.deepEqual(actionsOn(st, jobs), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    assert.deepEqual(actionsOn(st, res(s.eventBus.eventBusArn)), ['events:PutEvents']);
    for (const pool of s.pools) {
      assert.deepEqual(actionsOn(st, res(pool.queue.queueArn)), ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
      assert.deepEqual(actionsOn(st, res(pool.dlq.queueArn)), []);
    }
    assert.deepEqual(allActions(st), [
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'events:PutEvents',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:SendMessage',
      // The outcome notifications a worker left behind, delivered as the tenant (docs/outcomes.md).
      'sts:AssumeRole',
      'sts:TagSession',
    ]);
    assert.deepEqual(actionsOn(st, res(s.tenantAccessRole.roleArn)), ['sts:AssumeRole', 'sts:TagSession']);
  });

  it('scan: the same data access as the tick, and no invoke', () => {
    const st = roleStatements(b, s.scanFunction.role!);
    assert.deepEqual(actionsOn(st, dueIndex), ['dynamodb:Query']);
    assert.ok(!allActions(st).includes('lambda:InvokeFunction'));
    assert.ok(!allActions(st).includes('dynamodb:Scan'));
  });

  it('worker: its executions and job counters, its own queue and DLQ, no target (the tenant access role calls those)', () => {
    const st = roleStatements(b, defaultPool.role);
    assert.deepEqual(actionsOn(st, execs), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    // Query: a first claim reads the job with its batch covers; PutItem: a batch's cover
    assert.deepEqual(actionsOn(st, jobs), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    assert.deepEqual(actionsOn(st, res(s.eventBus.eventBusArn)), ['events:PutEvents'], 'a late start is reported on the bus');
    assert.deepEqual(actionsOn(st, res(defaultPool.queue.queueArn)), [
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
      'sqs:SendMessage',
    ]);
    assert.deepEqual(actionsOn(st, res(defaultPool.dlq.queueArn)), ['sqs:GetQueueUrl', 'sqs:SendMessage']);
    // nothing on another pool's queues
    assert.deepEqual(actionsOn(st, res(bulkPool.queue.queueArn)), []);
    assert.deepEqual(actionsOn(st, res(bulkPool.dlq.queueArn)), []);
    assert.ok(!allActions(st).includes('lambda:InvokeFunction'), 'allowedTargetFunctionArns is the tenant access role\'s');
    // ...which the worker assumes with the tenant's session tag (test/tenant.test.ts)
    assert.deepEqual(actionsOn(st, res(s.tenantAccessRole.roleArn)), ['sts:AssumeRole', 'sts:TagSession']);
    const invokes = roleStatements(b, s.tenantAccessRole).filter((x) => x.actions.includes('lambda:InvokeFunction'));
    assert.deepEqual(
      invokes.flatMap((x) => x.resources),
      ['arn:aws:lambda:us-east-1:123456789012:function:target-a', 'arn:aws:lambda:us-east-1:123456789012:function:target-a:*'],
    );
  });

  it('without allowed targets nobody may invoke a target or read a secret', () => {
    const p = build({ ...JWT_PROPS, allowedTargetFunctionArns: undefined });
    for (const role of [...p.sundial.pools.map((x) => x.role), p.sundial.tenantAccessRole]) {
      assert.ok(!allActions(roleStatements(p, role)).includes('lambda:InvokeFunction'));
      assert.ok(!allActions(roleStatements(p, role)).includes('secretsmanager:GetSecretValue'));
    }
  });

  it('only the tenant access role reads the allowed webhook secrets, under the tenant tag; workers and the api none', () => {
    const arn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:sundial-webhooks/*';
    const p = build({ ...JWT_PROPS, allowedTargetSecretArns: [arn] });
    for (const role of [...p.sundial.pools.map((x) => x.role), p.sundial.apiFunction.role!]) {
      assert.ok(!allActions(roleStatements(p, role)).includes('secretsmanager:GetSecretValue'));
    }
    const reads = roleStatements(p, p.sundial.tenantAccessRole).filter((x) => x.actions.includes('secretsmanager:GetSecretValue'));
    assert.deepEqual(reads.flatMap((x) => x.resources), [arn]);
    for (const x of reads) assert.deepEqual(x.condition, { StringEquals: { 'aws:ResourceTag/sundial-tenant': '${aws:PrincipalTag/sundial-tenant}' } });
  });

  it('api: item access on both tables and their indexes, sends to the pool queues, nothing else', () => {
    const all = roleStatements(b, s.apiFunction.role!);
    // DeleteItem only of quota counters and idempotency records, under a LeadingKeys condition.
    const st = all.filter((x) => !x.condition);
    const expected = ['dynamodb:BatchGetItem', 'dynamodb:ConditionCheckItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'];
    assert.deepEqual(actionsOn(st, jobs), expected);
    assert.deepEqual(actionsOn(st, execs), expected);
    assert.deepEqual(actionsOn(st, b.stack.resolve(`${s.jobsTable.tableArn}/index/*`)), ['dynamodb:Query']);
    // trigger-now, backfill and replay send to every pool's queue, and to no DLQ; GET /v1/pools
    // counts the DLQ's messages (read-only)
    for (const pool of s.pools) {
      assert.deepEqual(actionsOn(st, b.stack.resolve(pool.queue.queueArn)), ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
      assert.deepEqual(actionsOn(st, b.stack.resolve(pool.dlq.queueArn)), ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl']);
    }
    const actions = allActions(st);
    assert.deepEqual(actions.filter((a) => a.startsWith('sqs:')).sort(), ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
    assert.ok(!actions.includes('lambda:InvokeFunction'));
    assert.ok(!actions.includes('dynamodb:Scan'));
    assert.ok(!actions.includes('dynamodb:DeleteItem'));
    // JWT tenancy reads no IAM tags
    assert.ok(!actions.some((a) => a.startsWith('iam:')), `api has ${actions}`);
  });

  it('tenancy: jwt sets the claim; iam reads the principal tag unless account tenancy is asked for', () => {
    const env = (p: Built) => envOf(p, p.sundial.apiFunction) as Record<string, string>;
    const jwt = build({ ...JWT_PROPS, tenantClaim: 'tenant_id' });
    assert.equal(env(jwt).SUNDIAL_TENANCY, 'jwt');
    assert.equal(env(jwt).SUNDIAL_TENANT_CLAIM, 'tenant_id');
    const tagged = build({ ...JWT_PROPS, apiAuth: { kind: 'iam', tenantTag: 'team' } });
    assert.equal(env(tagged).SUNDIAL_TENANCY, 'iam-principal-tag');
    assert.equal(env(tagged).SUNDIAL_TENANT_TAG, 'team');
    const reads = roleStatements(tagged, tagged.sundial.apiFunction.role!).filter((x) => x.actions.some((a) => a.startsWith('iam:')));
    assert.deepEqual(reads.map((x) => x.actions).flat().sort(), ['iam:ListRoleTags', 'iam:ListUserTags']);
    assert.deepEqual(
      reads.flatMap((x) => x.resources).map((r) => JSON.stringify(r)).sort(),
      [
        JSON.stringify({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':role/*']] }),
        JSON.stringify({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':user/*']] }),
      ],
    );
    const account = build({ ...JWT_PROPS, apiAuth: { kind: 'iam', tenancy: 'account' } });
    assert.equal(env(account).SUNDIAL_TENANCY, 'iam-account');
    assert.ok(!allActions(roleStatements(account, account.sundial.apiFunction.role!)).some((a) => a.startsWith('iam:')));
    assert.throws(() => build({ ...JWT_PROPS, apiAuth: { kind: 'iam', tenantTag: 'bad,key' } }), /not a valid IAM tag key/);
  });

  it('nothing gets a wildcard action, DeleteTable or any table/queue admin action', () => {
    const forbidden = /^(dynamodb:\*|sqs:\*|lambda:\*|\*|dynamodb:(DeleteTable|CreateTable|UpdateTable|Scan|BatchWriteItem)|sqs:(DeleteQueue|PurgeQueue|SetQueueAttributes|CreateQueue))$/;
    let seen = 0;
    for (const p of Object.values(b.template.findResources('AWS::IAM::Policy'))) {
      for (const st of [p.Properties.PolicyDocument.Statement].flat()) {
        for (const a of [st.Action].flat()) {
          seen++;
          assert.ok(!forbidden.test(a), `forbidden action ${a}`);
        }
      }
    }
    assert.ok(seen > 20);
    // and the worker specifically cannot delete tables
    for (const pool of s.pools) {
      assert.ok(!allActions(roleStatements(b, pool.role)).includes('dynamodb:DeleteTable'));
    }
  });
});

describe('observability', () => {
  const b = build();
  const alarms = Object.values(b.template.findResources('AWS::CloudWatch::Alarm'));

  it('alarms on tick errors and duration', () => {
    const tickId = logicalId(b.stack, b.sundial.tickFunction);
    for (const metric of ['Errors', 'Duration']) {
      assert.ok(
        alarms.some(
          (a) =>
            a.Properties.MetricName === metric &&
            a.Properties.Namespace === 'AWS/Lambda' &&
            a.Properties.Dimensions?.[0]?.Value?.Ref === tickId,
        ),
        `tick ${metric} alarm`,
      );
    }
  });

  it('alarms per pool on DLQ depth, age of oldest message and p99 schedule lag', () => {
    for (const pool of b.sundial.pools) {
      const dlqName = b.stack.resolve(pool.dlq.queueName);
      const qName = b.stack.resolve(pool.queue.queueName);
      const dim = (a: any) => JSON.stringify(a.Properties.Dimensions?.[0]?.Value);
      assert.ok(
        alarms.some(
          (a) =>
            a.Properties.MetricName === 'ApproximateNumberOfMessagesVisible' &&
            dim(a) === JSON.stringify(dlqName) &&
            a.Properties.Threshold === 0 &&
            a.Properties.ComparisonOperator === 'GreaterThanThreshold',
        ),
        `${pool.name} DLQ depth alarm`,
      );
      assert.ok(
        alarms.some((a) => a.Properties.MetricName === 'ApproximateAgeOfOldestMessage' && dim(a) === JSON.stringify(qName)),
        `${pool.name} oldest message alarm`,
      );
      assert.ok(
        alarms.some(
          (a) =>
            a.Properties.MetricName === 'ScheduleLagMs' &&
            a.Properties.Namespace === 'Sundial' &&
            a.Properties.ExtendedStatistic === 'p99' &&
            JSON.stringify(a.Properties.Dimensions) === JSON.stringify([{ Name: 'Pool', Value: pool.name }]),
        ),
        `${pool.name} lag alarm`,
      );
      assert.ok(
        alarms.some(
          (a) =>
            a.Properties.MetricName === 'StartLagMs' &&
            a.Properties.ExtendedStatistic === 'p99' &&
            JSON.stringify(a.Properties.Dimensions) === JSON.stringify([{ Name: 'Pool', Value: pool.name }]),
        ),
        `${pool.name} start-lag (precision SLO) alarm`,
      );
    }
    assert.ok(
      alarms.some(
        (a) =>
          a.Properties.MetricName === 'ShardsFailed' &&
          a.Properties.Namespace === 'Sundial' &&
          a.Properties.Statistic === 'Sum' &&
          a.Properties.Threshold === 1 &&
          a.Properties.Dimensions === undefined,
      ),
      'failed shard scans alarm',
    );
  });

  it('sends every alarm and recovery to the alarm topic', () => {
    assert.ok(alarms.length >= 3 + 3 * 2);
    for (const a of alarms) {
      assert.deepEqual(a.Properties.AlarmActions, ['arn:aws:sns:us-east-1:123456789012:ops']);
      assert.deepEqual(a.Properties.OKActions, ['arn:aws:sns:us-east-1:123456789012:ops']);
    }
    const quiet = build({ ...JWT_PROPS, alarmTopicArn: undefined });
    for (const a of Object.values(quiet.template.findResources('AWS::CloudWatch::Alarm'))) {
      assert.equal(a.Properties.AlarmActions, undefined);
    }
  });

  it('has a dashboard with lag, queue wait, outcomes, takeovers and misfires per pool', () => {
    const dashboards = Object.values(b.template.findResources('AWS::CloudWatch::Dashboard'));
    assert.equal(dashboards.length, 1);
    const body = JSON.stringify(b.stack.resolve(dashboards[0].Properties.DashboardBody));
    for (const m of ['ScheduleLagMs', 'StartLagMs', 'QueueWaitMs', 'ExecutionsSucceeded', 'ExecutionsFailed', 'ExecutionsDead', 'LeaseTakeovers', 'StaleTokenRejections', 'Retries', 'Misfires']) {
      for (const pool of ['default', 'bulk']) {
        assert.ok(body.includes(`\\"${m}\\",\\"Pool\\",\\"${pool}\\"`), `dashboard ${m} for ${pool}`);
      }
    }
  });
});

describe('api', () => {
  it('is an HTTP API whose proxy route needs the JWT authorizer', () => {
    const b = build();
    b.template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    b.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const authorizers = b.template.findResources('AWS::ApiGatewayV2::Authorizer');
    const [authId, auth] = Object.entries(authorizers)[0];
    assert.equal(Object.keys(authorizers).length, 1);
    assert.equal(auth.Properties.AuthorizerType, 'JWT');
    assert.deepEqual(auth.Properties.JwtConfiguration, { Issuer: 'https://issuer.example.com/', Audience: ['sundial-api'] });
    assert.deepEqual(auth.Properties.IdentitySource, ['$request.header.Authorization']);
    b.template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      RouteKey: 'ANY /{proxy+}',
      AuthorizationType: 'JWT',
      AuthorizerId: { Ref: authId },
    });
    b.template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'GET /openapi.json', AuthorizationType: 'NONE' });
    // The web console's static files are public; its data calls go through the proxy route.
    b.template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'GET /console', AuthorizationType: 'NONE' });
    b.template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'GET /console/{file}', AuthorizationType: 'NONE' });
    const [stage] = Object.values(b.template.findResources('AWS::ApiGatewayV2::Stage'));
    assert.equal(stage.Properties.StageName, '$default');
    assert.equal(stage.Properties.AutoDeploy, true);
    assert.match(stage.Properties.AccessLogSettings.Format, /\$context\.requestId/);
    assert.ok(stage.Properties.AccessLogSettings.DestinationArn['Fn::GetAtt'], 'access logs go to a log group of the stack');
    b.template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: { 'Fn::GetAtt': [logicalId(b.stack, b.sundial.apiFunction), 'Arn'] },
      PayloadFormatVersion: '2.0',
    });
  });

  it('throttles the stage, reserves the tick and scan capacity, and passes the quotas', () => {
    const b = build();
    const [stage] = Object.values(b.template.findResources('AWS::ApiGatewayV2::Stage'));
    assert.deepEqual(stage.Properties.DefaultRouteSettings, { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    const fns = b.template.findResources('AWS::Lambda::Function');
    assert.equal(fns[logicalId(b.stack, b.sundial.tickFunction)].Properties.ReservedConcurrentExecutions, 2);
    assert.equal(fns[logicalId(b.stack, b.sundial.scanFunction)].Properties.ReservedConcurrentExecutions, 10);
    const api = fns[logicalId(b.stack, b.sundial.apiFunction)].Properties.Environment.Variables;
    assert.deepEqual(
      [api.SUNDIAL_QUOTA_MAX_JOBS, api.SUNDIAL_QUOTA_MIN_INTERVAL_SECS, api.SUNDIAL_QUOTA_API_EXECUTIONS_PER_MINUTE, api.SUNDIAL_QUOTA_TRIGGERS_PER_MINUTE],
      ['10000', '1', '1000', '60'],
      'the defaults of resources.json',
    );

    const c = build({
      ...JWT_PROPS,
      quotas: { maxJobs: 50, minIntervalSecs: 60, apiExecutionsPerMinute: 100, triggersPerMinute: 5 },
      apiThrottle: { rateLimit: 10, burstLimit: 20 },
      tick: { reservedConcurrency: false },
    });
    const cf = c.template.findResources('AWS::Lambda::Function');
    const env = cf[logicalId(c.stack, c.sundial.apiFunction)].Properties.Environment.Variables;
    assert.deepEqual(
      [env.SUNDIAL_QUOTA_MAX_JOBS, env.SUNDIAL_QUOTA_MIN_INTERVAL_SECS, env.SUNDIAL_QUOTA_API_EXECUTIONS_PER_MINUTE, env.SUNDIAL_QUOTA_TRIGGERS_PER_MINUTE],
      ['50', '60', '100', '5'],
    );
    assert.equal(cf[logicalId(c.stack, c.sundial.tickFunction)].Properties.ReservedConcurrentExecutions, undefined);
    const [cs] = Object.values(c.template.findResources('AWS::ApiGatewayV2::Stage'));
    assert.deepEqual(cs.Properties.DefaultRouteSettings, { ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 });
    assert.throws(() => build({ ...JWT_PROPS, quotas: { maxJobs: 0 } }), /quotas\.maxJobs/);
  });

  it('the public routes have a throttle of their own (review N7): a flood of them cannot use up what tenants share', () => {
    const PUBLIC = ['GET /console', 'GET /console/{file}', 'GET /openapi.json'];
    const stageOf = (x: Built) => Object.entries(x.template.findResources('AWS::ApiGatewayV2::Stage'))[0];
    const b = build();
    const [, stage] = stageOf(b);
    assert.deepEqual(Object.keys(stage.Properties.RouteSettings ?? {}).sort(), PUBLIC);
    for (const key of PUBLIC) assert.deepEqual(stage.Properties.RouteSettings[key], { ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 }, key);
    // The authenticated routes keep the stage's default.
    assert.deepEqual(stage.Properties.DefaultRouteSettings, { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    // CloudFormation refuses route settings of a route that does not exist yet: the stage waits for them.
    const routes = b.template.findResources('AWS::ApiGatewayV2::Route');
    const publicIds = Object.entries(routes).filter(([, r]) => PUBLIC.includes(r.Properties.RouteKey)).map(([id]) => id);
    assert.equal(publicIds.length, 3);
    for (const id of publicIds) assert.ok((stage.DependsOn ?? []).includes(id), `the stage depends on ${id}`);

    const c = build({ ...JWT_PROPS, apiThrottle: { publicRoutes: { rateLimit: 2, burstLimit: 5 } } }, 'SundialPublicThrottle');
    const [, cs] = stageOf(c);
    for (const key of PUBLIC) assert.deepEqual(cs.Properties.RouteSettings[key], { ThrottlingRateLimit: 2, ThrottlingBurstLimit: 5 }, key);
    assert.deepEqual(cs.Properties.DefaultRouteSettings, { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    assert.throws(() => build({ ...JWT_PROPS, apiThrottle: { publicRoutes: { burstLimit: -1 } } }, 'SundialPublicThrottleBad'), /apiThrottle\.publicRoutes\.burstLimit/);
  });

  it('reserves the api function 50 concurrent executions by default (a tenant\'s slow requests cannot take the workers\' share), or as asked', () => {
    const reservedOf = (x: Built) =>
      x.template.findResources('AWS::Lambda::Function')[logicalId(x.stack, x.sundial.apiFunction)].Properties.ReservedConcurrentExecutions;
    assert.equal(reservedOf(build()), 50);
    assert.equal(reservedOf(build({ ...JWT_PROPS, apiReservedConcurrency: 20 }, 'SundialApi20')), 20);
    assert.equal(reservedOf(build({ ...JWT_PROPS, apiReservedConcurrency: false }, 'SundialApiNone')), undefined);
    assert.throws(() => build({ ...JWT_PROPS, apiReservedConcurrency: 0 }, 'SundialApiZero'), /apiReservedConcurrency/);
    // Workers are bounded by their event sources' maximum concurrency instead (README).
    const b = build();
    for (const p of b.sundial.pools) {
      assert.equal(b.json.Resources[logicalId(b.stack, p.worker!)].Properties.ReservedConcurrentExecutions, undefined, p.name);
    }
  });

  it('sets the operator tenants on the api and refuses a bad one', () => {
    const env = (b: ReturnType<typeof build>) => b.template.findResources('AWS::Lambda::Function');
    const api = (b: ReturnType<typeof build>) =>
      Object.values(env(b)).map((f) => f.Properties.Environment?.Variables ?? {}).find((v) => v.SUNDIAL_TENANT_CLAIM !== undefined);
    assert.equal(api(build())?.SUNDIAL_OPERATOR_TENANTS, '');
    assert.equal(api(build({ ...JWT_PROPS, operatorTenants: ['ops', 'sre'] }))?.SUNDIAL_OPERATOR_TENANTS, 'ops,sre');
    assert.throws(() => build({ ...JWT_PROPS, operatorTenants: ['a,b'] }), /operatorTenants/);
  });

  it('may delete only quota counters, idempotency records and resource limits', () => {
    const b = build();
    const stmts = roleStatements(b, b.sundial.apiFunction.role!).filter((st) => st.actions.includes('dynamodb:DeleteItem'));
    assert.equal(stmts.length, 1, JSON.stringify(stmts));
    assert.deepEqual(stmts[0].actions, ['dynamodb:DeleteItem']);
    assert.deepEqual(stmts[0].condition, { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['T#*#QUOTA', 'T#*#IDEM#*', 'RESOURCES'] } });
  });

  it('can require IAM instead', () => {
    const b = build({ ...JWT_PROPS, apiAuth: { kind: 'iam' } });
    b.template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 0);
    b.template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'ANY /{proxy+}', AuthorizationType: 'AWS_IAM' });
  });
});

describe('ECS pools', () => {
  const b = build({
    ...JWT_PROPS,
    pools: [
      { name: 'default' },
      { name: 'long', kind: 'ecs', maxConcurrency: 4, runTimeout: Duration.hours(2) },
    ],
  });
  const long = b.sundial.pools.find((p) => p.name === 'long')!;

  it('run the worker-ecs image on arm64 Fargate with the pool env', () => {
    b.template.resourceCountIs('AWS::ECS::Service', 1);
    b.template.hasResourceProperties('AWS::ECS::Service', { LaunchType: 'FARGATE', DesiredCount: 1 });
    const [td] = Object.values(b.template.findResources('AWS::ECS::TaskDefinition'));
    assert.deepEqual(td.Properties.RuntimePlatform, { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' });
    const env = Object.fromEntries(td.Properties.ContainerDefinitions[0].Environment.map((e: any) => [e.Name, e.Value]));
    assert.equal(env.SUNDIAL_POOL, 'long');
    assert.equal(env.SUNDIAL_PRIVATE_TARGET_CIDRS, '');
    assert.equal(env.SUNDIAL_POOLS, 'default,long');
    // only the Lambda pool has event sources (its queue, its low lane and its notify queue)
    b.template.resourceCountIs('AWS::Lambda::EventSourceMapping', 3);
    b.template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', { MaxCapacity: 4, MinCapacity: 1 });
  });

  it('have a visibility timeout above the run timeout', () => {
    const q = b.json.Resources[logicalId(b.stack, long.queue)].Properties;
    assert.ok(q.VisibilityTimeout > 7200);
  });

  it('task role gets the worker grants on its own queue only', () => {
    const st = roleStatements(b, long.role);
    assert.deepEqual(actionsOn(st, b.stack.resolve(long.queue.queueArn)), [
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
      'sqs:SendMessage',
    ]);
    const other = b.sundial.pools.find((p) => p.name === 'default')!;
    assert.deepEqual(actionsOn(st, b.stack.resolve(other.queue.queueArn)), []);
    assert.ok(!allActions(st).includes('dynamodb:DeleteTable'));
  });
});

describe('validation', () => {
  const bad: Array<[string, Partial<typeof JWT_PROPS>, RegExp]> = [
    ['a bad pool name', { pools: [{ name: 'no spaces' }] }, /pool name/],
    ['a duplicate pool', { pools: [{ name: 'a' }, { name: 'a' }] }, /twice/],
    ['no pools', { pools: [] }, /at least one pool/],
    ['zero shards', { shards: 0 }, /shards/],
    ['too many shards', { shards: 70_000 }, /shards/],
    ['a Lambda pool over 15 minutes', { pools: [{ name: 'a', runTimeout: Duration.minutes(20) }] }, /15 minutes/],
    ['maxConcurrency 1 on Lambda', { pools: [{ name: 'a', maxConcurrency: 1 }] }, /2-1000/],
    ['a JWT without audience', { apiAuth: { kind: 'jwt', issuer: 'https://x/', audience: [] } }, /audience/],
    ['a queue prefix with a dot', { queuePrefix: 'a.b-' }, /queuePrefix/],
    ['a queue name over 80 characters', { queuePrefix: 'x'.repeat(70) }, /80 characters/],
    // {prefix}default-dlq fits in 80; {prefix}default-notify, the longest name, does not
    ['a notify queue name over 80 characters', { queuePrefix: 'x'.repeat(68) }, /x{68}default-notify is longer than SQS's 80/],
    ['a lease under 2 s', { workers: { lease: Duration.seconds(1) } }, /workers.lease/],
    ['a skew margin over 60 s', { workers: { skewMargin: Duration.minutes(2) } }, /workers.skewMargin/],
    ['a zero catch-up budget', { tick: { catchUpGlobal: 0 } }, /tick.catchUpGlobal/],
    ['a tenant limit of 0', { workers: { tenantMaxRunning: { default: 0 } } }, /tenantMaxRunning/],
    ['a tenant id with a comma', { workers: { tenantMaxRunning: { tenants: { 'a,b': 1 } } } }, /tenant/],
    ['an empty tenant claim', { tenantClaim: '' }, /tenantClaim/],
    ['slots on a Lambda pool', { pools: [{ name: 'a', slots: 4 }] }, /ECS pools only/],
    ['ECS slots over 1000', { pools: [{ name: 'a', kind: 'ecs', slots: 1001 }] }, /slots/],
    ['a shutdown grace past the stop timeout', { pools: [{ name: 'a', kind: 'ecs', shutdownGrace: Duration.minutes(2) }] }, /shutdownGrace/],
  ];
  for (const [what, props, msg] of bad) {
    it(`rejects ${what}`, () => {
      assert.throws(() => build({ ...JWT_PROPS, ...props }), msg);
    });
  }

  it('uses the pools of resources.json and its shard count by default', () => {
    const b = build({ apiAuth: { kind: 'iam' } });
    assert.deepEqual(
      b.sundial.pools.map((p) => p.name),
      r.queues.defaultPools,
    );
    assert.equal(envOf(b, b.sundial.tickFunction).SUNDIAL_SHARDS, String(r.defaults.shards));
    assert.ok(b.stack instanceof Stack);
  });
});

describe('assets', () => {
  it('the committed placeholders synthesize, with a warning that they do not run', () => {
    const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
    const stack = new Stack(app, 'Placeholders');
    new SundialScheduler(stack, 'Sundial', { apiAuth: { kind: 'iam' } });
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('placeholder'));
    assert.equal(warnings.length, 3);
  });

  it('a missing asset directory fails synth with a hint', () => {
    assert.throws(() => build({ ...JWT_PROPS, assetsDir: '/nonexistent' }), /build-assets\.sh/);
  });

  it('an ECS pool does not need Docker at synth: the image is a staged asset', () => {
    const b = build({ ...JWT_PROPS, pools: [{ name: 'long', kind: 'ecs' }] });
    const td = Object.values(b.template.findResources('AWS::ECS::TaskDefinition'))[0];
    assert.match(JSON.stringify(td.Properties.ContainerDefinitions[0].Image), /container-assets/);
  });
});

describe('settings', () => {
  const b = build({
    ...JWT_PROPS,
    pools: [{ name: 'default' }, { name: 'long', kind: 'ecs', slots: 32, shutdownGrace: Duration.seconds(60) }],
    tick: { inProcessMaxShards: 64, shardsPerScan: 32, catchUpGlobal: 100, catchUpPerTenant: 10, fairQueues: false },
    workers: {
      lease: Duration.minutes(2),
      skewMargin: Duration.seconds(5),
      maxTotalRun: Duration.hours(1),
      tenantMaxRunning: { default: 5, tenants: { acme: 10 } },
    },
    tenantClaim: 'tenant_id',
    privateTargetCidrs: ['10.1.0.0/16', 'fd12::/16'],
    tenantTargets: { acme: { lambda: ['arn:aws:lambda:*:*:function:acme-*'], http: ['*.acme.com'] }, '*': { http: ['*'] } },
    logLevel: lambda.ApplicationLogLevel.DEBUG,
  });
  const e = r.env;
  const long = b.sundial.pools.find((p) => p.name === 'long')!;
  const ecsEnv = (): Record<string, string> => {
    const [td] = Object.values(b.template.findResources('AWS::ECS::TaskDefinition'));
    return Object.fromEntries(td.Properties.ContainerDefinitions[0].Environment.map((x: any) => [x.Name, x.Value]));
  };

  it('the tick props reach the tick and the scan function', () => {
    for (const fn of [b.sundial.tickFunction, b.sundial.scanFunction]) {
      const v = envOf(b, fn);
      assert.equal(v[e.tickInProcessMaxShards], '64');
      assert.equal(v[e.shardsPerScan], '32');
      assert.equal(v[e.catchUpGlobal], '100');
      assert.equal(v[e.catchUpPerTenant], '10');
      assert.equal(v[e.fairQueues], 'false');
    }
  });

  it('the worker props reach Lambda and ECS workers alike', () => {
    const lambdaWorker = envOf(b, b.sundial.pools.find((p) => p.name === 'default')!.worker!);
    for (const v of [lambdaWorker, ecsEnv()]) {
      assert.equal(v[e.leaseSecs], '120');
      assert.equal(v[e.skewMarginMs], '5000');
      assert.equal(v[e.maxTotalRunSecs], '3600');
      assert.equal(v[e.tenantMaxRunning], '5,acme=10');
      assert.equal(v[e.privateTargetCidrs], '10.1.0.0/16,fd12::/16');
    }
    // The target policy is judged at create (api) and at run (workers) alike.
    for (const v of [lambdaWorker, ecsEnv(), envOf(b, b.sundial.apiFunction)]) {
      assert.equal(v[e.privateTargetCidrs], '10.1.0.0/16,fd12::/16');
      assert.deepEqual(JSON.parse(String(v[e.tenantTargets])), {
        acme: { lambda: ['arn:aws:lambda:*:*:function:acme-*'], http: ['*.acme.com'] },
        '*': { http: ['*'] },
      });
    }
    assert.equal(ecsEnv()[e.workerSlots], '32');
    assert.equal(ecsEnv()[e.shutdownGraceSecs], '60');
    // The stack's worker capacity, on every worker: the Lambda pool's event sources at their
    // maximum concurrency (10 + low lane 2) × 10, and the ECS pool's one task × 2 (deployments
    // overlap, maxHealthyPercent 200) × 32 slots
    for (const v of [lambdaWorker, ecsEnv()]) assert.equal(v[e.workerCapacity], String(12 * 10 + 1 * 2 * 32));
    // and each pool's, which bounds a tenant confined to some pools (its cell)
    // (and the API's, which measures GET /v1/pools' saturation against it)
    for (const v of [lambdaWorker, ecsEnv(), envOf(b, b.sundial.apiFunction)]) {
      assert.equal(v[e.poolCapacity], `default=${12 * 10},long=${1 * 2 * 32}`);
    }
    const [svc] = Object.values(b.template.findResources('AWS::ECS::Service'));
    assert.equal(svc.Properties.DeploymentConfiguration.MaximumPercent, 200);
    assert.equal(long.kind, 'ecs');
  });

  it('tenantTargets takes every kind the Rust side reads (functions/model/src/outbound/allow.rs), ARN kinds as ARN globs only', () => {
    const allow = {
      acme: {
        sns: ['arn:aws:sns:*:123456789012:acme-*'],
        stepFunctions: ['arn:aws:states:*:123456789012:stateMachine:acme-*'],
        ecsTaskDefinitions: ['arn:aws:ecs:*:123456789012:task-definition/acme-*'],
        ecsClusters: ['arn:aws:ecs:*:123456789012:cluster/batch'],
        eventBridge: ['*'],
      },
    };
    const t = build({ ...JWT_PROPS, tenantTargets: allow }, 'SundialTargetKinds');
    assert.deepEqual(JSON.parse(String(envOf(t, t.sundial.apiFunction)[e.tenantTargets])), allow);
    assert.throws(() => build({ ...JWT_PROPS, tenantTargets: { acme: { ecsClusters: ['batch'] } } }, 'SundialTargetKindsBad'), /ecsClusters: globs match ARNs/);
    assert.throws(() => build({ ...JWT_PROPS, tenantTargets: { acme: { ecs: ['*'] } as never } }, 'SundialTargetKindsUnknown'), /unknown kind ecs/);
  });

  it('warns at synth when nothing but IAM keeps tenants apart: tenantTargets unset, and allowedTarget*Arns without it (review M3)', () => {
    const warned = (x: Built, id: string) => Annotations.fromStack(x.stack).findWarning('*', Match.stringLikeRegexp(`\\[ack: ${id}\\]`));
    // JWT_PROPS: tenants (every apiAuth serves them), allowedTargetFunctionArns, no tenantTargets
    const b = build();
    assert.equal(warned(b, 'sundial:tenant-targets-unset').length, 1);
    const arns = warned(b, 'sundial:allowed-targets-without-tenant-targets');
    assert.equal(arns.length, 1);
    assert.match(String(arns[0].entry.data), /allowedTargetFunctionArns/);
    const bare = build({ ...JWT_PROPS, allowedTargetFunctionArns: undefined }, 'SundialNoTargets');
    assert.equal(warned(bare, 'sundial:tenant-targets-unset').length, 1);
    assert.equal(warned(bare, 'sundial:allowed-targets-without-tenant-targets').length, 0);
    const bounded = build({ ...JWT_PROPS, tenantTargets: { '*': { http: ['*'] } } }, 'SundialBounded');
    assert.equal(warned(bounded, 'sundial:tenant-targets-unset').length + warned(bounded, 'sundial:allowed-targets-without-tenant-targets').length, 0);
  });

  it('tenantTargets: the ECS network a tenant may choose (review N1), subnets and security groups by id or glob, a public IP by yes or no', () => {
    const allow = {
      acme: {
        ecsClusters: ['arn:aws:ecs:*:123456789012:cluster/batch'],
        ecsSubnets: ['subnet-0123456789abcdef0', 'subnet-0aa*'],
        ecsSecurityGroups: ['sg-0123456789abcdef0'],
        ecsPublicIp: true,
      },
      '*': { ecsSubnets: ['*'], ecsPublicIp: false },
    };
    const t = build({ ...JWT_PROPS, tenantTargets: allow }, 'SundialTargetNetwork');
    // The names the workers deserialize (SUNDIAL_TENANT_TARGETS, unknown fields refused).
    assert.deepEqual(JSON.parse(String(envOf(t, t.sundial.apiFunction)[e.tenantTargets])), allow);
    const refused = (acme: Record<string, unknown>, message: RegExp) =>
      assert.throws(() => build({ ...JWT_PROPS, tenantTargets: { acme } as never }, 'SundialTargetNetworkBad'), message, JSON.stringify(acme));
    refused({ ecsSubnets: ['sg-0123'] }, /tenantTargets\.acme\.ecsSubnets: .*subnet-/);
    refused({ ecsSubnets: ['subnet-0123', 'vpc-1'] }, /tenantTargets\.acme\.ecsSubnets: .*subnet-/);
    refused({ ecsSecurityGroups: ['subnet-0123'] }, /tenantTargets\.acme\.ecsSecurityGroups: .*sg-/);
    refused({ ecsSecurityGroups: 'sg-0123' }, /tenantTargets\.acme\.ecsSecurityGroups must be a list/);
    refused({ ecsPublicIp: 'true' }, /tenantTargets\.acme\.ecsPublicIp must be true or false/);
  });

  it('the tenant claim reaches the api', () => {
    assert.equal(envOf(b, b.sundial.apiFunction)[e.tenantClaim], 'tenant_id');
    assert.deepEqual(Annotations.fromStack(b.stack).findWarning('*', Match.stringLikeRegexp('tenantClaim')), [], 'no warning for an issuer-set claim');
  });

  it('a Cognito custom: attribute as the tenant claim is warned about at synth (users may write their own)', () => {
    const c = build({ ...JWT_PROPS, tenantClaim: 'custom:tenant' }, 'SundialCustomClaim');
    assert.equal(envOf(c, c.sundial.apiFunction)[e.tenantClaim], 'custom:tenant', 'still allowed: a read-only attribute is safe');
    const warnings = Annotations.fromStack(c.stack).findWarning('*', Match.stringLikeRegexp('tenantClaim custom:tenant'));
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(String(warnings[0].entry.data), /read-only|pre-token/);
  });

  it('no such warning with IAM auth, where the claim is not read', () => {
    const c = build({ ...JWT_PROPS, apiAuth: { kind: 'iam' }, tenantClaim: 'custom:tenant' }, 'SundialIamClaim');
    assert.deepEqual(Annotations.fromStack(c.stack).findWarning('*', Match.stringLikeRegexp('tenantClaim')), []);
  });

  it('every function logs JSON at the chosen level', () => {
    const s = b.sundial;
    const fns = [s.tickFunction, s.scanFunction, s.apiFunction, ...s.pools.flatMap((p) => (p.worker ? [p.worker] : []))];
    assert.equal(fns.length, 4);
    for (const f of fns.map((fn) => b.json.Resources[logicalId(b.stack, fn)])) {
      assert.equal(f.Properties.LoggingConfig.LogFormat, 'JSON');
      assert.equal(f.Properties.LoggingConfig.ApplicationLogLevel, 'DEBUG');
      assert.equal(f.Properties.Environment.Variables.RUST_LOG, undefined, 'RUST_LOG would override the level');
    }
    assert.equal(ecsEnv().AWS_LAMBDA_LOG_FORMAT, 'JSON');
    assert.equal(ecsEnv().AWS_LAMBDA_LOG_LEVEL, 'DEBUG');
  });

  it('the default level is INFO', () => {
    const d = build();
    for (const f of Object.values(d.template.findResources('AWS::Lambda::Function'))) {
      assert.equal(f.Properties.LoggingConfig.ApplicationLogLevel, 'INFO');
    }
  });
});
