/**
 * Outcome notifications in the template (docs/outcomes.md, "HTTPS notifications"): a notify
 * queue `{prefix}{pool}-notify` per pool without a DLQ, the Lambda pools' capped event source on
 * it (`notifyConcurrency`), the grants of its producers (each pool's workers, for their own
 * pool's queue only; the reconciler, for every pool's) and its consumers, and the alarm on a
 * notification waiting too long.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Duration, Stack } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import { resources } from '../lib/resources';
import { actionsOn, build, JWT_PROPS, logicalId, roleStatements } from './helpers';

const r = resources();
/** What a pool's workers may do on their own notify queue: consume it and send to it. */
const WORKER_ACTIONS = ['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:ReceiveMessage', 'sqs:SendMessage'];

describe('outcome notifications', () => {
  const b = build({
    ...JWT_PROPS,
    queuePrefix: 'acme-',
    pools: [{ name: 'default', notifyConcurrency: 7 }, { name: 'bulk' }, { name: 'long', kind: 'ecs', runTimeout: Duration.hours(1) }],
  });
  const s = b.sundial;
  const res = (x: string) => b.stack.resolve(x);
  const props = (q: { node: { defaultChild?: unknown } }) => b.json.Resources[logicalId(b.stack, q)].Properties;
  const pool = (name: string) => s.pools.find((p) => p.name === name)!;
  const esms = Object.values(b.json.Resources).filter((x) => x.Type === 'AWS::Lambda::EventSourceMapping');
  const esmOn = (arn: string) => esms.filter((e) => JSON.stringify(e.Properties.EventSourceArn) === JSON.stringify(res(arn)));

  it('each pool has a notify queue {prefix}{pool}-notify: standard, encrypted, TLS only, 14 days, no DLQ', () => {
    const policies = Object.values(b.template.findResources('AWS::SQS::QueuePolicy'));
    for (const p of s.pools) {
      const q = props(p.notifyQueue);
      assert.equal(q.QueueName, `acme-${p.name}${r.queues.notifySuffix}`);
      assert.equal(q.RedrivePolicy, undefined, `${p.name}: the consumer ends every message itself`);
      assert.equal(q.FifoQueue, undefined);
      assert.equal(q.SqsManagedSseEnabled, true);
      assert.equal(q.MessageRetentionPeriod, r.queues.messageRetentionSeconds);
      const policy = policies.find((x) => JSON.stringify(x.Properties.Queues) === JSON.stringify([res(p.notifyQueue.queueUrl)]));
      const tls = policy?.Properties.PolicyDocument.Statement.some((x: any) => x.Effect === 'Deny' && x.Condition?.Bool?.['aws:SecureTransport'] === 'false');
      assert.ok(tls, `${p.name}: deny without TLS`);
    }
  });

  it('visibility: the default for ECS workers, at least the worker timeout for a Lambda event source', () => {
    assert.equal(props(pool('long').notifyQueue).VisibilityTimeout, r.queues.visibilityTimeoutSeconds);
    for (const name of ['default', 'bulk']) {
      const q = props(pool(name).notifyQueue);
      const fn = props(pool(name).worker!);
      // Lambda refuses (InvalidParameterValueException) an event source whose queue's
      // visibility is below the function's timeout.
      assert.ok(q.VisibilityTimeout >= fn.Timeout, `${name}: ${q.VisibilityTimeout} < ${fn.Timeout}`);
      assert.ok(q.VisibilityTimeout >= r.queues.visibilityTimeoutSeconds);
    }
  });

  it('is encrypted with encryptionKey when one is given', () => {
    const arn = 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555';
    const key = kms.Key.fromKeyArn(new Stack(), 'Key', arn);
    const k = build({ ...JWT_PROPS, encryptionKey: key }, 'SundialNotifyKms');
    for (const p of k.sundial.pools) {
      const q = k.json.Resources[logicalId(k.stack, p.notifyQueue)].Properties;
      assert.equal(q.KmsMasterKeyId, arn);
      assert.equal(q.SqsManagedSseEnabled, undefined);
    }
  });

  it('a Lambda pool consumes it through its own event source: batches of 10, partial failures, capped at notifyConcurrency (default 2)', () => {
    for (const [name, max] of [['default', 7], ['bulk', 2]] as const) {
      const p = pool(name);
      const [m, ...more] = esmOn(p.notifyQueue.queueArn);
      assert.equal(more.length, 0, name);
      assert.deepEqual(m.Properties.FunctionName, res(p.worker!.functionName), name);
      assert.equal(m.Properties.BatchSize, 10, name);
      assert.deepEqual(m.Properties.FunctionResponseTypes, ['ReportBatchItemFailures'], name);
      assert.equal(m.Properties.ScalingConfig.MaximumConcurrency, max, name);
      assert.equal(m.Properties.MaximumBatchingWindowInSeconds, undefined, name);
    }
    // the ECS workers long-poll it themselves
    assert.deepEqual(esmOn(pool('long').notifyQueue.queueArn), []);
  });

  it('refuses a notifyConcurrency outside 2-1000, or on an ECS pool, naming the pool and the prop', () => {
    for (const bad of [1, 1001, 2.5]) {
      assert.throws(
        () => build({ ...JWT_PROPS, pools: [{ name: 'reports', notifyConcurrency: bad }] }, 'SundialBadNotify'),
        /^Error: pool reports: notifyConcurrency must be 2-1000/,
        String(bad),
      );
    }
    assert.throws(
      () => build({ ...JWT_PROPS, pools: [{ name: 'default' }, { name: 'long', kind: 'ecs', notifyConcurrency: 4 }] }, 'SundialEcsNotify'),
      /^Error: pool long: notifyConcurrency applies to Lambda pools only/,
    );
  });

  it('a pool\'s workers (Lambda or ECS) consume and send on their own notify queue, never another pool\'s', () => {
    for (const p of s.pools) {
      const st = roleStatements(b, p.role);
      assert.deepEqual(actionsOn(st, res(p.notifyQueue.queueArn)), WORKER_ACTIONS, p.name);
      for (const other of s.pools.filter((x) => x !== p)) {
        assert.deepEqual(actionsOn(st, res(other.notifyQueue.queueArn)), [], `${p.name} on ${other.name}'s notify queue`);
      }
      // and no SQS action on a wildcard that would reach it some other way
      const sqsResources = st.filter((x) => x.effect === 'Allow' && x.actions.some((a) => a.startsWith('sqs:'))).flatMap((x) => x.resources);
      const own = [p.queue, p.lowQueue, p.dlq, p.notifyQueue].map((q) => JSON.stringify(res(q.queueArn)));
      for (const x of sqsResources) assert.ok(own.includes(JSON.stringify(x)), `${p.name}: sqs on ${JSON.stringify(x)}`);
    }
  });

  it('the reconciler sends to every pool\'s notify queue; the tick, the scan and the api to none', () => {
    const st = roleStatements(b, s.reconcileFunction.role!);
    for (const p of s.pools) assert.deepEqual(actionsOn(st, res(p.notifyQueue.queueArn)), ['sqs:GetQueueUrl', 'sqs:SendMessage'], p.name);
    for (const fn of [s.tickFunction, s.scanFunction, s.apiFunction]) {
      const other = roleStatements(b, fn.role!);
      for (const p of s.pools) assert.deepEqual(actionsOn(other, res(p.notifyQueue.queueArn)), [], `${fn.node.id} on ${p.name}`);
    }
  });

  it('alarms per pool when a notification has waited over 15 minutes', () => {
    const alarms = Object.values(b.json.Resources).filter((x) => x.Type === 'AWS::CloudWatch::Alarm');
    for (const p of s.pools) {
      const queueName = JSON.stringify([{ Name: 'QueueName', Value: res(p.notifyQueue.queueName) }]);
      const mine = alarms.filter((a) => a.Properties.MetricName === 'ApproximateAgeOfOldestMessage' && JSON.stringify(a.Properties.Dimensions) === queueName);
      assert.equal(mine.length, 1, p.name);
      const a = mine[0].Properties;
      assert.equal(a.Namespace, 'AWS/SQS');
      assert.equal(a.Statistic, 'Maximum');
      assert.equal(a.Period, 60);
      assert.equal(a.Threshold, Duration.minutes(15).toSeconds());
      assert.equal(a.ComparisonOperator, 'GreaterThanThreshold');
      assert.equal(a.EvaluationPeriods, 3);
      assert.equal(a.DatapointsToAlarm, 3);
      assert.equal(a.TreatMissingData, 'notBreaching');
      assert.match(a.AlarmDescription, new RegExp(`pool ${p.name}: .*receivers are not being reached`));
      assert.deepEqual(a.AlarmActions, [JWT_PROPS.alarmTopicArn]);
      assert.deepEqual(a.OKActions, [JWT_PROPS.alarmTopicArn]);
    }
  });
});
