/**
 * The workers that drain each pool's queues: a worker Lambda with an event source per lane and
 * one on the notify queue, or an ECS Fargate service of long-poll workers (one cluster for all
 * ECS pools), and the grants a worker has on Sundial's own tables, queues and bus.
 */
import * as path from 'node:path';
import { Duration, Lazy } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { acknowledge, allow, grantKey, logGroup, Sundial } from './context';
import { rustFunction } from './functions';
import { ECS_MAX_HEALTHY_PERCENT, ECS_STOP_TIMEOUT, LAMBDA_BATCH_SIZE } from './limits';
import { PoolProps, SundialPool } from './props';
import { PoolQueues } from './queues';
import { resources } from '../resources';
import { ecsSettings, EnvOf, Settings } from './settings';

/** What the workers are granted on: Sundial's own tables and bus. */
export interface WorkerResources {
  readonly jobs: dynamodb.Table;
  readonly executions: dynamodb.Table;
  readonly eventBus: events.IEventBus;
}

/**
 * Values a worker's env names that exist only later: the tenant access role (which trusts the
 * workers' roles) and the stack's own functions (the api among them).
 */
export interface WorkerLate {
  readonly tenantRoleArn: () => string;
  readonly ownFunctions: () => string;
}

/** Every pool's workers, pool by pool, and the ECS cluster if a pool runs on ECS. */
export function workers(
  s: Sundial,
  queues: PoolQueues[],
  envOf: EnvOf,
  t: WorkerResources,
  late: WorkerLate,
): { pools: SundialPool[]; cluster?: ecs.Cluster } {
  // The workers' env only holds tokens for these; they resolve once the role and the api exist.
  const runNameKey = runNameKeySecret(s);
  const tenantEnv: Settings = {
    tenantRoleArn: Lazy.string({ produce: late.tenantRoleArn }),
    ownFunctions: Lazy.string({ produce: late.ownFunctions }),
    runNameKey: runNameKey.secretValue.unsafeUnwrap(),
  };
  const pools: SundialPool[] = [];
  let cluster: ecs.Cluster | undefined;
  for (const q of queues) {
    let pool: SundialPool;
    if (q.kind === 'lambda') {
      pool = lambdaPool(s, q, envOf, tenantEnv);
    } else {
      const env = envOf('worker-ecs', { pool: q.p.name, ...tenantEnv, ...ecsSettings(q.p) });
      for (const prop of ['lowMaxConcurrency', 'notifyConcurrency'] as const) {
        if (q.p[prop] !== undefined) throw new Error(`pool ${q.p.name}: ${prop} applies to Lambda pools only`);
      }
      cluster ??= ecsCluster(s);
      pool = { ...ecsPool(s, cluster, q, env, runNameKey), lowQueue: q.lowQueue, notifyQueue: q.notifyQueue };
    }
    grantWorker(pool.role, q.queue, q.dlq, t);
    grantWorker(pool.role, q.lowQueue, q.dlq, t);
    grantNotify(pool.role, q.notifyQueue);
    pools.push(pool);
  }
  return { pools, cluster };
}

/**
 * The key ECS run names are keyed by (`SUNDIAL_RUN_NAME_KEY`, docs/tenancy.md "Adopting a
 * task"): generated once per stack, so no other principal can tell a coming fire's
 * `startedBy`/`clientToken`. Never rotated: a takeover finds a run's task by its name, and a
 * new key would name runs in flight differently. Lambda workers get it through a dynamic
 * reference in their environment (the guardrail denies tenant principals every `lambda:`
 * action on Sundial's functions); ECS workers as a container secret.
 */
function runNameKeySecret(s: Sundial): secretsmanager.Secret {
  const key = new secretsmanager.Secret(s.scope, 'RunNameKey', {
    description: 'Sundial: the key of ECS run names (startedBy, clientToken); never rotate it while fires run',
    generateSecretString: { passwordLength: 48, excludePunctuation: true },
  });
  acknowledge(
    key,
    'AwsSolutions-SMG4',
    'The key of ECS run names must not change while fires run: a takeover finds the run\'s task by a name made with it (docs/tenancy.md).',
  );
  return key;
}

/** A Lambda pool: the worker function, an event source on the queue and capped ones on the low lane and the notify queue. */
function lambdaPool(s: Sundial, q: PoolQueues, envOf: EnvOf, tenantEnv: Settings): SundialPool {
  if (q.p.slots !== undefined || q.p.shutdownGrace !== undefined) {
    throw new Error(`pool ${q.p.name}: slots and shutdownGrace apply to ECS pools only`);
  }
  const maxConcurrency = q.p.maxConcurrency ?? 10;
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
    throw new Error(`pool ${q.p.name}: maxConcurrency of a Lambda pool must be 2-1000 (SQS event source limit)`);
  }
  const worker = rustFunction(s, `Worker-${q.p.name}`, 'worker', s.overrides.workers, {
    timeout: q.runTimeout,
    memorySize: q.p.memorySize ?? 256,
    environment: envOf('worker', { pool: q.p.name, ...tenantEnv }),
    description: `Sundial worker of pool ${q.p.name}`,
  });
  const batchingWindow = q.p.batchingWindow;
  if (batchingWindow !== undefined && (batchingWindow.toSeconds() < 0 || batchingWindow.toSeconds() > 300)) {
    throw new Error(`pool ${q.p.name}: batchingWindow must be 0-300 seconds (SQS event source limit)`);
  }
  worker.addEventSource(
    new SqsEventSource(q.queue, {
      batchSize: LAMBDA_BATCH_SIZE,
      reportBatchItemFailures: true,
      maxConcurrency,
      ...(batchingWindow && batchingWindow.toSeconds() > 0 ? { maxBatchingWindow: batchingWindow } : {}),
    }),
  );
  // The low lane's own event source, capped: low work never takes more than this many
  // invocations, whatever its backlog (docs/priority.md).
  worker.addEventSource(cappedSource(q, q.lowQueue, 'lowMaxConcurrency'));
  // The notify queue's, capped the same way: outcome notifications to tenants' receivers
  // (docs/outcomes.md) never hold more invocations than this, however slow the receivers.
  worker.addEventSource(cappedSource(q, q.notifyQueue, 'notifyConcurrency'));
  const { queue, lowQueue, dlq, notifyQueue, runTimeout } = q;
  return { name: q.p.name, kind: 'lambda', queue, lowQueue, dlq, notifyQueue, runTimeout, worker, role: worker.role! };
}

/**
 * An event source on a side queue of a Lambda pool (the low lane, the notify queue): full
 * batches, each record's failure reported on its own, and at most the pool's `prop`
 * invocations at once (2-1000, default 2).
 */
function cappedSource(q: PoolQueues, queue: sqs.IQueue, prop: 'lowMaxConcurrency' | 'notifyConcurrency'): SqsEventSource {
  const maxConcurrency = q.p[prop] ?? 2;
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
    throw new Error(`pool ${q.p.name}: ${prop} must be 2-1000 (SQS event source limit)`);
  }
  return new SqsEventSource(queue, { batchSize: LAMBDA_BATCH_SIZE, reportBatchItemFailures: true, maxConcurrency });
}

/** One cluster (and, unless a VPC is given, one public-subnet VPC without NAT) for all ECS pools. */
function ecsCluster(s: Sundial): ecs.Cluster {
  let vpc = s.props.vpc;
  if (!vpc) {
    const own = new ec2.Vpc(s.scope, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }],
    });
    // Rejected traffic only: the workers make outbound calls all day, and accepted flows
    // would cost more than they tell; rejections are what an investigation needs.
    own.addFlowLog('FlowLog', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(logGroup(s, 'VpcFlowLogs')),
      trafficType: ec2.FlowLogTrafficType.REJECT,
    });
    vpc = own;
  }
  return new ecs.Cluster(s.scope, 'Cluster', { vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED });
}

/** An ECS pool: the worker task definition and its Fargate service, scaled on the queue's backlog. */
function ecsPool(
  s: Sundial,
  cluster: ecs.Cluster,
  q: PoolQueues,
  env: Record<string, string>,
  runNameKey: secretsmanager.ISecret,
): Omit<SundialPool, 'lowQueue' | 'notifyQueue'> {
  const { p, queue, dlq, runTimeout } = q;
  const taskDef = workerTaskDefinition(s, p, env, runNameKey);
  const minTasks = p.minTasks ?? 1;
  const maxTasks = p.maxConcurrency ?? 1;
  if (!Number.isInteger(maxTasks) || maxTasks < minTasks) {
    throw new Error(`pool ${p.name}: maxConcurrency (max tasks) must be an integer >= minTasks`);
  }
  const publicOnly = s.props.vpc === undefined;
  const service = new ecs.FargateService(s.scope, `WorkerService-${p.name}`, {
    cluster,
    taskDefinition: taskDef,
    desiredCount: minTasks,
    assignPublicIp: publicOnly,
    vpcSubnets: publicOnly ? { subnetType: ec2.SubnetType.PUBLIC } : undefined,
    circuitBreaker: { rollback: true },
    minHealthyPercent: 100,
    maxHealthyPercent: ECS_MAX_HEALTHY_PERCENT,
  });
  if (maxTasks > minTasks) {
    service
      .autoScaleTaskCount({ minCapacity: minTasks, maxCapacity: maxTasks })
      .scaleOnMetric('Backlog', {
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
        scalingSteps: [
          { upper: 0, change: -1 },
          { lower: 100, change: +1 },
          { lower: 1000, change: +3 },
        ],
        adjustmentType: appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
      });
  }
  return { name: p.name, kind: 'ecs', queue, dlq, runTimeout, service, role: taskDef.taskRole };
}

/** The worker-ecs container on arm64 Fargate, its log group, and the key for its task role. */
function workerTaskDefinition(
  s: Sundial,
  p: PoolProps,
  env: Record<string, string>,
  runNameKey: secretsmanager.ISecret,
): ecs.FargateTaskDefinition {
  // The run-name key is a container secret, not a plain variable of the task definition.
  const keyName = resources().env.runNameKey;
  const { [keyName]: _key, ...plain } = env;
  const taskDef = new ecs.FargateTaskDefinition(s.scope, `WorkerTask-${p.name}`, {
    cpu: p.cpu ?? 256,
    memoryLimitMiB: p.memoryLimitMiB ?? 512,
    runtimePlatform: {
      cpuArchitecture: ecs.CpuArchitecture.ARM64,
      operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
    },
  });
  const image = s.props.ecsImage ?? ecsImageFromAssets(s, p.name);
  const logs = logGroup(s, `WorkerEcs-${p.name}Logs`);
  taskDef.addContainer('worker', {
    image,
    // The variables Lambda's logging controls set, read by the same telemetry setup.
    environment: { AWS_LAMBDA_LOG_FORMAT: 'JSON', AWS_LAMBDA_LOG_LEVEL: s.logLevel, ...plain },
    secrets: { [keyName]: ecs.Secret.fromSecretsManager(runNameKey) },
    logging: ecs.LogDrivers.awsLogs({ streamPrefix: p.name, logGroup: logs }),
    readonlyRootFilesystem: true,
    // Fargate allows at most 120 s between SIGTERM and SIGKILL: the worker stops claiming and
    // lets in-flight runs finish or their leases lapse (fencing tokens keep that safe).
    stopTimeout: ECS_STOP_TIMEOUT,
  });
  acknowledge(
    taskDef,
    'AwsSolutions-ECS2',
    'The environment holds the env contract of resources.json (table names, queue prefix, pool, limits): configuration, no secrets. Webhook secrets are read from Secrets Manager at run time by ARN.',
  );
  // The execution role pulls the image: ecr:GetAuthorizationToken has no resource-level permissions.
  acknowledge(
    taskDef.obtainExecutionRole(),
    'AwsSolutions-IAM5[Resource::*]',
    'ecr:GetAuthorizationToken (pulling the worker image) does not support resource-level permissions; the other actions are scoped to the image repository and log group.',
  );
  grantKey(s.encryptionKey, taskDef.taskRole);
  return taskDef;
}

/** The worker-ecs image built from the assets directory at deploy time. */
function ecsImageFromAssets(s: Sundial, pool: string): ecs.ContainerImage {
  if (s.codeSource.kind !== 'assets') {
    throw new Error(
      `pool ${pool}: an ECS pool runs the worker-ecs container, which SundialCode.fromSource does not build; give ecsImage (e.g. ContainerImage.fromAsset of the directory infra/scripts/build-assets.sh writes to worker-ecs/)`,
    );
  }
  return ecs.ContainerImage.fromAsset(path.join(s.codeSource.dir, 'worker-ecs'), { platform: Platform.LINUX_ARM64 });
}

/**
 * The worker's grants, the same for a Lambda or an ECS worker: Sundial's own tables, queues and
 * bus. Nothing on a tenant's target: those are the tenant access role's (`tenantAccess`).
 */
function grantWorker(role: iam.IRole, queue: sqs.IQueue, dlq: sqs.IQueue, t: WorkerResources): void {
  allow(
    role,
    ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
    [t.executions.tableArn],
  );
  // Per-job concurrency counters live on the job item; PutItem: the operations-log entry of a
  // fire the worker starts past its start deadline (with a FireMissed event on the bus), and a
  // fireOnce batch's cover at its first claim; Query: a fire's first claim reads its job with
  // the batch covers beside it (`begins_with(sk, DEF)`, docs/execution.md).
  allow(role, ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:Query'], [t.jobs.tableArn]);
  allow(role, ['events:PutEvents'], [t.eventBus.eventBusArn]);
  allow(
    role,
    // SendMessage: a wait (policy, tenant limit, retry backoff) re-queues a fresh, delayed copy
    // instead of returning the delivered one, so waiting never counts toward the DLQ.
    ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
    [queue.queueArn],
  );
  allow(role, ['sqs:SendMessage', 'sqs:GetQueueUrl'], [dlq.queueArn]);
}

/**
 * The worker's grants on its own pool's outcome-notification queue, and no other pool's: it
 * sends the notifications of the executions it ends, consumes them (the Lambda's event source,
 * or the ECS worker's long poll), and re-sends a failed one as a new, delayed copy.
 */
function grantNotify(role: iam.IRole, notifyQueue: sqs.IQueue): void {
  allow(
    role,
    ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
    [notifyQueue.queueArn],
  );
}
