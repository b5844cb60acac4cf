/**
 * Priorities and back-pressure in the template (docs/priority.md): a low lane per pool with the
 * pool's DLQ, the low lane's capped event source, the grants the lane depths need, the
 * back-pressure settings, and the alarms (low work starved, new work refused).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Duration } from 'aws-cdk-lib';
import { resources } from '../lib/resources';
import { actionsOn, build, envOf, JWT_PROPS, logicalId, roleStatements } from './helpers';

const r = resources();

describe('priority lanes and back-pressure', () => {
  const b = build({
    ...JWT_PROPS,
    pools: [{ name: 'default', maxConcurrency: 20, lowMaxConcurrency: 3 }, { name: 'bulk' }],
    backpressure: { deferDepth: 500, deferSecs: 90, saturatedDepth: 9000 },
  });
  const s = b.sundial;
  const res = (x: string) => b.stack.resolve(x);

  it('each pool has a low lane {prefix}{pool}-low that redrives to the pool DLQ', () => {
    for (const pool of s.pools) {
      const low = b.json.Resources[logicalId(b.stack, pool.lowQueue)];
      assert.equal(low?.Type, 'AWS::SQS::Queue', `${pool.name} low lane`);
      assert.match(JSON.stringify(low!.Properties.QueueName), new RegExp(`${pool.name}-low`));
      assert.deepEqual(low!.Properties.RedrivePolicy.deadLetterTargetArn, res(pool.dlq.queueArn));
    }
  });

  it('a Lambda pool reads its low lane through its own event source, capped', () => {
    const esms = Object.values(b.json.Resources).filter((x) => x.Type === 'AWS::Lambda::EventSourceMapping');
    const of = (q: any) => esms.find((e) => JSON.stringify(e.Properties.EventSourceArn) === JSON.stringify(res(q.queueArn)));
    const def = s.pools.find((p) => p.name === 'default')!;
    assert.equal(of(def.queue)!.Properties.ScalingConfig.MaximumConcurrency, 20);
    assert.equal(of(def.lowQueue)!.Properties.ScalingConfig.MaximumConcurrency, 3);
    const bulk = s.pools.find((p) => p.name === 'bulk')!;
    assert.equal(of(bulk.lowQueue)!.Properties.ScalingConfig.MaximumConcurrency, 2, 'default cap');
    assert.throws(() => build({ ...JWT_PROPS, pools: [{ name: 'p', lowMaxConcurrency: 1 }] }), /lowMaxConcurrency/);
  });

  it('the tick, the api and the reconciler may read lane depths; workers use both lanes', () => {
    for (const fn of [s.tickFunction, s.scanFunction, s.apiFunction, s.reconcileFunction]) {
      const st = roleStatements(b, fn.role!);
      for (const pool of s.pools) {
        for (const q of [pool.queue, pool.lowQueue]) {
          assert.deepEqual(actionsOn(st, res(q.queueArn)), ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'], fn.node.id);
        }
      }
    }
    for (const pool of s.pools) {
      const st = roleStatements(b, pool.role);
      assert.deepEqual(actionsOn(st, res(pool.lowQueue.queueArn)), actionsOn(st, res(pool.queue.queueArn)), pool.name);
    }
  });

  it('sets the back-pressure settings on the tick, the scan function and the api', () => {
    for (const fn of [s.tickFunction, s.scanFunction, s.apiFunction]) {
      const env = envOf(b, fn);
      assert.equal(env[r.env.backpressureDeferDepth], '500');
      assert.equal(env[r.env.backpressureDeferSecs], '90');
      assert.equal(env[r.env.backpressureSaturatedDepth], '9000');
    }
    assert.throws(() => build({ ...JWT_PROPS, backpressure: { deferSecs: 901 } }), /deferSecs/);
  });

  it('alarms per pool on a starved low lane and on refused work, and graphs the deferrals', () => {
    const alarms = Object.values(b.json.Resources).filter((x) => x.Type === 'AWS::CloudWatch::Alarm');
    for (const pool of s.pools) {
      const lowName = JSON.stringify(res(pool.lowQueue.queueName));
      const starved = alarms.find(
        (a) => a.Properties.MetricName === 'ApproximateAgeOfOldestMessage' && JSON.stringify(a.Properties.Dimensions?.[0]?.Value) === lowName,
      );
      assert.ok(starved, `${pool.name} low lane age alarm`);
      assert.equal(starved!.Properties.Threshold, Duration.minutes(30).toSeconds());
      const refused = alarms.find(
        (a) =>
          a.Properties.MetricName === r.metrics.names.saturatedRefusals &&
          JSON.stringify(a.Properties.Dimensions) === JSON.stringify([{ Name: 'Pool', Value: pool.name }]),
      );
      assert.ok(refused, `${pool.name} saturated alarm`);
      assert.equal(refused!.Properties.Statistic, 'Sum');
    }
    const dashboards = Object.values(b.json.Resources).filter((x) => x.Type === 'AWS::CloudWatch::Dashboard');
    assert.match(JSON.stringify(b.stack.resolve(dashboards[0].Properties.DashboardBody)), /LowPriorityDeferred/);
  });
});
