/**
 * The queues of each pool: the main queue `{prefix}{pool}`, the low lane `{prefix}{pool}-low`
 * and the DLQ both redrive to, with visibility above the pool's run timeout; and the
 * outcome-notification queue `{prefix}{pool}-notify`, which has no DLQ.
 */
import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { dlqName, lowQueueName, notifyQueueName, queueName, resources } from '../resources';
import { acknowledge, Sundial } from './context';
import { DEFAULT_ECS_RUN_TIMEOUT, DEFAULT_LAMBDA_RUN_TIMEOUT, VISIBILITY_MARGIN_SECONDS } from './limits';
import { PoolProps, WorkerKind } from './props';

/** One pool's props, resolved kind and run timeout, and its four queues. */
export interface PoolQueues {
  readonly p: PoolProps;
  readonly kind: WorkerKind;
  readonly runTimeout: Duration;
  readonly queue: sqs.Queue;
  readonly lowQueue: sqs.Queue;
  readonly dlq: sqs.Queue;
  /** Outcome notifications `{prefix}{pool}-notify` (docs/outcomes.md, "HTTPS notifications"). */
  readonly notifyQueue: sqs.Queue;
}

/** Every pool's queues, pool by pool. */
export function poolQueues(s: Sundial, poolProps: PoolProps[], queuePrefix: string): PoolQueues[] {
  return poolProps.map((p) => poolQueue(s, p, queuePrefix));
}

function poolQueue(s: Sundial, p: PoolProps, queuePrefix: string): PoolQueues {
  const r = resources();
  const kind = p.kind ?? 'lambda';
  const runTimeout = p.runTimeout ?? (kind === 'lambda' ? DEFAULT_LAMBDA_RUN_TIMEOUT : DEFAULT_ECS_RUN_TIMEOUT);
  const runSecs = runTimeout.toSeconds();
  if (kind === 'lambda' && runSecs > 900) throw new Error(`pool ${p.name}: a Lambda worker runs at most 15 minutes`);
  const visibility = Math.max(r.queues.visibilityTimeoutSeconds, runSecs + VISIBILITY_MARGIN_SECONDS);
  if (visibility > 43_200) throw new Error(`pool ${p.name}: run timeout too long for SQS visibility (12 h)`);
  const retention = Duration.seconds(r.queues.messageRetentionSeconds);
  const qo = s.props.queueOverrides ?? {};
  const encryption = queueEncryption(s);
  const dlq = new sqs.Queue(s.scope, `Pool-${p.name}-Dlq`, {
    ...qo.all,
    ...qo.dlqs,
    queueName: dlqName(queuePrefix, p.name),
    retentionPeriod: retention,
    ...encryption,
    enforceSSL: true,
  });
  const queue = new sqs.Queue(s.scope, `Pool-${p.name}-Queue`, {
    ...qo.all,
    ...qo.queues,
    queueName: queueName(queuePrefix, p.name),
    retentionPeriod: retention,
    visibilityTimeout: Duration.seconds(visibility),
    ...encryption,
    enforceSSL: true,
    deadLetterQueue: { queue: dlq, maxReceiveCount: r.queues.maxReceiveCount },
  });
  // The low lane: same settings and DLQ; workers read it after the main queue.
  const lowQueue = new sqs.Queue(s.scope, `Pool-${p.name}-LowQueue`, {
    ...qo.all,
    ...qo.queues,
    queueName: lowQueueName(queuePrefix, p.name),
    retentionPeriod: retention,
    visibilityTimeout: Duration.seconds(visibility),
    ...encryption,
    enforceSSL: true,
    deadLetterQueue: { queue: dlq, maxReceiveCount: r.queues.maxReceiveCount },
  });
  // Lambda refuses an event source on a queue whose visibility is below the function's timeout.
  const notifyVisibility = kind === 'lambda' ? visibility : r.queues.visibilityTimeoutSeconds;
  const notifyQueue = poolNotifyQueue(s, p, queuePrefix, notifyVisibility);
  return { p, kind, runTimeout, queue, lowQueue, dlq, notifyQueue };
}

/**
 * A pool's outcome-notification queue: the retention, encryption and TLS of its other queues,
 * and no DLQ: the consumer ends every message itself (deleted once delivered; on a failure, a
 * new delayed copy carrying the failure count; after the last failure, a note on the
 * execution's timeline), so a redrive would have nothing to do. Visibility: resources.json's
 * default for an ECS pool's long-polling workers; a Lambda pool's lane visibility, which is
 * above the worker function's timeout as Lambda requires of an event source's queue.
 */
function poolNotifyQueue(s: Sundial, p: PoolProps, queuePrefix: string, visibilitySecs: number): sqs.Queue {
  const qo = s.props.queueOverrides ?? {};
  const queue = new sqs.Queue(s.scope, `Pool-${p.name}-NotifyQueue`, {
    ...qo.all,
    ...qo.queues,
    queueName: notifyQueueName(queuePrefix, p.name),
    retentionPeriod: Duration.seconds(resources().queues.messageRetentionSeconds),
    visibilityTimeout: Duration.seconds(visibilitySecs),
    ...queueEncryption(s),
    enforceSSL: true,
  });
  acknowledge(
    queue,
    'AwsSolutions-SQS3',
    'The notify queue has no DLQ by design: its consumer deletes every message itself, re-sending a failed notification as a new delayed copy and giving up after its last failure with a note on the execution timeline (docs/outcomes.md).',
  );
  return queue;
}

/**
 * The queues the control loop's functions send to: both lanes of every pool (the tick, scan,
 * api, ingest and reconciler), and every pool's notify queue (the reconciler).
 */
export function loopQueueArns(queues: PoolQueues[]): { poolQueueArns: string[]; notifyQueueArns: string[] } {
  return {
    poolQueueArns: queues.flatMap((q) => [q.queue.queueArn, q.lowQueue.queueArn]),
    notifyQueueArns: queues.map((q) => q.notifyQueue.queueArn),
  };
}

/** Every queue Sundial makes is encrypted: with `encryptionKey`, or SQS-managed. */
export function queueEncryption(s: Sundial): Pick<sqs.QueueProps, 'encryption' | 'encryptionMasterKey'> {
  return s.encryptionKey
    ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: s.encryptionKey }
    : { encryption: sqs.QueueEncryption.SQS_MANAGED };
}
