/**
 * Observability: the alarms (each notifies `alarmTopicArn` when it fires and recovers) and the
 * dashboard, on the functions' own metrics and the EMF metrics the Rust code writes (lib/metrics.ts).
 */
import { Duration } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { METRIC_NAMESPACE, Metrics, POOL_DIMENSION, RESOURCE_DIMENSION } from '../metrics';
import { Sundial } from './context';
import { TICK_TIMEOUT } from './limits';
import { PoolProps, SundialPool } from './props';

const MINUTE = Duration.minutes(1);
/** The age of a pool's oldest outcome notification that raises its alarm. */
const NOTIFY_AGE_ALARM = Duration.minutes(15);

/** The control loop's functions, whose own metrics are watched. */
export interface LoopFunctions {
  readonly tick: lambda.Function;
  readonly scan: lambda.Function;
  readonly reconcile: lambda.Function;
}

export function alarm(s: Sundial, id: string, props: cw.AlarmProps): cw.Alarm {
  const a = new cw.Alarm(s.scope, id, { treatMissingData: cw.TreatMissingData.NOT_BREACHING, ...props });
  if (s.alarmAction) {
    a.addAlarmAction(s.alarmAction);
    a.addOkAction(s.alarmAction);
  }
  s.alarms.push(a);
  return a;
}

/** Every alarm but the ingest's, and the dashboard: the control loop first, then pool by pool. */
export function observe(s: Sundial, fns: LoopFunctions, pools: SundialPool[], poolProps: PoolProps[], lagThresholdMs: number): cw.Dashboard {
  loopAlarms(s, fns);
  scanAlarms(s);
  executionAlarms(s, fns);
  const dashboard = new cw.Dashboard(s.scope, 'Dashboard', { defaultInterval: Duration.hours(3) });
  dashboard.addWidgets(...loopWidgets(fns));
  for (const pool of pools) {
    poolAlarms(s, pool, poolProps.find((x) => x.name === pool.name)!, lagThresholdMs);
    notifyAlarm(s, pool);
    dashboard.addWidgets(...poolWidgets(pool));
  }
  return dashboard;
}

/** A pool's metric of the EMF namespace, by minute. */
function emf(metricName: string, pool: string, statistic: string, label?: string): cw.Metric {
  return new cw.Metric({
    namespace: METRIC_NAMESPACE,
    metricName,
    dimensionsMap: { [POOL_DIMENSION]: pool },
    statistic,
    period: MINUTE,
    label,
  });
}

/** The tick and the scan failing, or the tick running out of its minute. */
function loopAlarms(s: Sundial, fns: LoopFunctions): void {
  alarm(s, 'TickErrors', {
    alarmDescription: 'Sundial tick failed: fires are not being queued',
    metric: fns.tick.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });
  alarm(s, 'TickDuration', {
    alarmDescription: 'Sundial tick is close to its timeout',
    metric: fns.tick.metricDuration({ period: MINUTE, statistic: 'Maximum' }),
    threshold: TICK_TIMEOUT.toMilliseconds() * 0.8,
    evaluationPeriods: 3,
    datapointsToAlarm: 2,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
  alarm(s, 'ScanErrors', {
    alarmDescription: 'Sundial scan failed: some shards are behind',
    metric: fns.scan.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });
}

/** Shards whose scan failed, and job items the scan could not read. */
function scanAlarms(s: Sundial): void {
  alarm(s, 'ShardsFailed', {
    alarmDescription: 'Sundial: some shard scans failed (their fires wait; other shards go on). See the scan logs for the shard and error',
    metric: new cw.Metric({
      namespace: METRIC_NAMESPACE,
      metricName: Metrics.shardsFailed,
      statistic: 'Sum',
      period: Duration.minutes(5),
    }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });

  alarm(s, 'InvalidJobs', {
    alarmDescription:
      'Sundial: job items in the due index that this version cannot read were skipped (a newer writer, a hand edit). Their jobs do not fire; see the scan logs for the keys',
    metric: new cw.Metric({ namespace: METRIC_NAMESPACE, metricName: Metrics.invalidJobs, statistic: 'Sum', period: Duration.minutes(5) }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });
}

/** Executions re-sent or never started, waits on an undefined resource, the reconciler failing. */
function executionAlarms(s: Sundial, fns: LoopFunctions): void {
  alarm(s, 'ExecutionsResent', {
    alarmDescription:
      'Sundial reconciler re-sent executions whose delivery was lost (a message dropped, never sent, or dead-lettered while open). Each is in the execution timeline with code Resent; see the reconciler logs',
    metric: new cw.MathExpression({
      expression: `SUM(SEARCH('{${METRIC_NAMESPACE},${POOL_DIMENSION}} MetricName="${Metrics.executionsResent}"', 'Sum', 300))`,
      label: 'Executions re-sent (all pools)',
      period: Duration.minutes(5),
    }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  alarm(s, 'FiresMissed', {
    alarmDescription:
      'Sundial: fires did not start by their job\'s startDeadlineSecs (workers stopped or behind, messages stranded, a late tick). Each is a FireMissed event on the stack\'s bus (rules on detail.jobId alert on one job) and a fire_missed entry in the operations log',
    metric: new cw.MathExpression({
      expression: `SUM(SEARCH('{${METRIC_NAMESPACE},${POOL_DIMENSION}} MetricName="${Metrics.firesMissed}"', 'Sum', 300))`,
      label: 'Fires missed (all pools)',
      period: Duration.minutes(5),
    }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  // Resource limits (docs/resources.md): a job names a resource whose limit was deleted, so its
  // executions wait (fail closed) until an operator defines it again. Waits on a defined limit
  // are the limit working and get a dashboard graph, not an alarm.
  alarm(s, 'ResourceUndefined', {
    alarmDescription:
      'Sundial: executions wait for a resource that has no limit defined (deleted while jobs still name it); define it again (PUT /v1/resources/{name}) or remove it from those jobs',
    metric: new cw.MathExpression({
      expression: `SUM(SEARCH('{${METRIC_NAMESPACE},${RESOURCE_DIMENSION}} MetricName="${Metrics.resourceUndefined}"', 'Sum', 300))`,
      label: 'Waits on undefined resources',
      period: Duration.minutes(5),
    }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  alarm(s, 'ReconcileErrors', {
    alarmDescription: 'Sundial reconciler failed: stranded executions are not being repaired',
    metric: fns.reconcile.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });
}

function loopWidgets(fns: LoopFunctions): cw.IWidget[] {
  return [
    new cw.GraphWidget({
      title: 'Tick and scan duration (max)',
      left: [
        fns.tick.metricDuration({ period: MINUTE, statistic: 'Maximum' }),
        fns.scan.metricDuration({ period: MINUTE, statistic: 'Maximum' }),
      ],
      width: 12,
    }),
    new cw.GraphWidget({
      title: 'Tick and scan errors',
      left: [fns.tick.metricErrors({ period: MINUTE }), fns.scan.metricErrors({ period: MINUTE })],
      width: 12,
    }),
    new cw.GraphWidget({
      title: 'Resource limits: holders (max) and waits, per resource',
      left: [
        new cw.MathExpression({
          expression: `SEARCH('{${METRIC_NAMESPACE},${RESOURCE_DIMENSION}} MetricName="${Metrics.resourceHolders}"', 'Maximum', 60)`,
          label: 'holders',
          period: MINUTE,
        }),
      ],
      right: [
        new cw.MathExpression({
          expression: `SEARCH('{${METRIC_NAMESPACE},${RESOURCE_DIMENSION}} MetricName="${Metrics.resourceWaits}"', 'Sum', 60)`,
          label: 'waits',
          period: MINUTE,
        }),
      ],
      width: 24,
    }),
  ];
}

/** A pool's alarms: its DLQ, the age of its lanes, back-pressure refusals, schedule and start lag. */
function poolAlarms(s: Sundial, pool: SundialPool, p: PoolProps, lagThresholdMs: number): void {
  const name = pool.name;
  alarm(s, `Pool-${name}-DlqDepth`, {
    alarmDescription: `Sundial pool ${name}: messages in the dead-letter queue`,
    metric: pool.dlq.metricApproximateNumberOfMessagesVisible({ period: MINUTE, statistic: 'Maximum' }),
    threshold: 0,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
  alarm(s, `Pool-${name}-OldestMessage`, {
    alarmDescription: `Sundial pool ${name}: workers are not keeping up`,
    metric: pool.queue.metricApproximateAgeOfOldestMessage({ period: MINUTE, statistic: 'Maximum' }),
    threshold: (p.queueAgeAlarmThreshold ?? Duration.minutes(5)).toSeconds(),
    evaluationPeriods: 3,
    datapointsToAlarm: 3,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
  // Back-pressure (docs/priority.md): low work starved for long, or new work refused.
  alarm(s, `Pool-${name}-LowLaneOldestMessage`, {
    alarmDescription: `Sundial pool ${name}: low-priority work has waited too long (the pool is saturated with higher-priority work)`,
    metric: pool.lowQueue.metricApproximateAgeOfOldestMessage({ period: MINUTE, statistic: 'Maximum' }),
    threshold: (p.lowLaneAgeAlarmThreshold ?? Duration.minutes(30)).toSeconds(),
    evaluationPeriods: 3,
    datapointsToAlarm: 3,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
  alarm(s, `Pool-${name}-Saturated`, {
    alarmDescription: `Sundial pool ${name}: the API refused new work because a lane was saturated (429 saturated)`,
    metric: emf(Metrics.saturatedRefusals, name, 'Sum'),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  alarm(s, `Pool-${name}-ScheduleLag`, {
    alarmDescription: `Sundial pool ${name}: p99 schedule lag above ${lagThresholdMs} ms`,
    metric: emf(Metrics.scheduleLag, name, 'p99'),
    threshold: lagThresholdMs,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });

  // The precision SLO (docs/performance.md, "Targets"): p99 of worker start − scheduled second.
  alarm(s, `Pool-${name}-StartLag`, {
    alarmDescription: `Sundial pool ${name}: p99 start lag (worker start − scheduled) above ${lagThresholdMs} ms`,
    metric: emf(Metrics.startLag, name, 'p99'),
    threshold: lagThresholdMs,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
}

/**
 * Outcome notifications waiting too long in a pool's notify queue (docs/outcomes.md, "HTTPS
 * notifications"): each message is deleted once delivered and given up after its last failure,
 * so an old one means the workers are not reaching the receivers (or not reading the queue).
 */
function notifyAlarm(s: Sundial, pool: SundialPool): void {
  const name = pool.name;
  alarm(s, `Pool-${name}-NotifyOldestMessage`, {
    alarmDescription: `Sundial pool ${name}: outcome notifications have waited over 15 minutes (receivers are not being reached)`,
    metric: pool.notifyQueue.metricApproximateAgeOfOldestMessage({ period: MINUTE, statistic: 'Maximum' }),
    threshold: NOTIFY_AGE_ALARM.toSeconds(),
    evaluationPeriods: 3,
    datapointsToAlarm: 3,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
}

/** A pool's row: a title, then lag, queue wait, outcomes, and what went wrong. */
function poolWidgets(pool: SundialPool): cw.IWidget[] {
  const name = pool.name;
  return [
    new cw.TextWidget({ markdown: `### Pool \`${name}\` (${pool.kind})`, width: 24, height: 1 }),
    new cw.GraphWidget({
      title: `${name}: schedule lag and start lag (ms)`,
      left: [
        emf(Metrics.scheduleLag, name, 'p99', 'enqueue lag p99'),
        emf(Metrics.startLag, name, 'p50', 'start lag p50'),
        emf(Metrics.startLag, name, 'p99', 'start lag p99'),
      ],
      width: 6,
    }),
    new cw.GraphWidget({
      title: `${name}: queue wait (ms)`,
      left: [emf(Metrics.queueWait, name, 'p50', 'p50'), emf(Metrics.queueWait, name, 'p99', 'p99')],
      right: [pool.queue.metricApproximateAgeOfOldestMessage({ period: MINUTE, statistic: 'Maximum', label: 'oldest message (s)' })],
      width: 6,
    }),
    new cw.GraphWidget({
      title: `${name}: outcomes`,
      left: [
        emf(Metrics.executionsSucceeded, name, 'Sum', 'succeeded'),
        emf(Metrics.executionsFailed, name, 'Sum', 'failed'),
        emf(Metrics.executionsDead, name, 'Sum', 'dead'),
      ],
      stacked: true,
      width: 6,
    }),
    new cw.GraphWidget({
      title: `${name}: takeovers, misfires, missed starts, DLQ`,
      left: [
        emf(Metrics.leaseTakeovers, name, 'Sum', 'lease takeovers'),
        emf(Metrics.staleTokenRejections, name, 'Sum', 'stale-token rejections'),
        emf(Metrics.retries, name, 'Sum', 'retries'),
        emf(Metrics.misfires, name, 'Sum', 'misfires'),
        emf(Metrics.firesMissed, name, 'Sum', 'start deadlines missed'),
        emf(Metrics.lowPriorityDeferred, name, 'Sum', 'low-priority fires deferred'),
        emf(Metrics.saturatedRefusals, name, 'Sum', '429 saturated'),
      ],
      right: [pool.dlq.metricApproximateNumberOfMessagesVisible({ period: MINUTE, statistic: 'Maximum', label: 'DLQ depth' })],
      width: 6,
    }),
  ];
}
