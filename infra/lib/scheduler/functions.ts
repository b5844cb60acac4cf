/**
 * The Rust functions: how each is made (`rustFunction`), and the control loop's own, the tick
 * and the scan it fans out to, the provisioned-capacity planner and the reconciler, each with
 * its schedule and the calls it makes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Annotations, Duration, Lazy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { RustFunction } from 'cargo-lambda-cdk';
import { Binary } from '../resources';
import { acknowledge, allow, grantKey, indexArn, logGroup, Sundial } from './context';
import { SCAN_TIMEOUT, TICK_TIMEOUT } from './limits';
import { FunctionOverrides } from './props';
import { EnvOf } from './settings';

/** Marker in the committed placeholder assets. */
export const PLACEHOLDER_MARKER = 'SUNDIAL_PLACEHOLDER_ASSET';

/**
 * One Rust function: its own role (CloudWatch Logs write on its own log group, the key if any;
 * the callers add the calls it makes), its own log group, JSON logs at `logLevel`, arm64 on
 * provided.al2023, from prebuilt assets or built from source by cargo-lambda-cdk.
 */
export function rustFunction(
  s: Sundial,
  id: string,
  binary: 'tick' | 'worker' | 'api' | 'ingest',
  overrides: FunctionOverrides | undefined,
  opts: Pick<lambda.FunctionProps, 'timeout' | 'memorySize' | 'environment' | 'description' | 'retryAttempts' | 'reservedConcurrentExecutions' | 'deadLetterQueue'>,
): lambda.Function {
  const logs = logGroup(s, `${id}Logs`);
  // Our own role instead of the default one with the AWSLambdaBasicExecutionRole managed
  // policy: that policy allows writing to every log group of the account.
  const role = new iam.Role(s.scope, `${id}Role`, {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: `Sundial ${id} function`,
  });
  logs.grantWrite(role);
  grantKey(s.encryptionKey, role);
  const o: FunctionOverrides = { ...s.overrides.all, ...overrides };
  if (o.vpc) {
    // Lambda needs to manage its ENIs; the role is ours, so Lambda's own managed policy is
    // added here (the default role would have got it the same way).
    role.addManagedPolicy(iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaVPCAccessExecutionRole'));
    acknowledge(
      role,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
      'A function placed in a VPC (functionOverrides.vpc) needs ENI management, which AWS scopes in this managed policy; ec2 network-interface actions do not support resource-level permissions.',
    );
  }
  if (s.tracing) {
    acknowledge(
      role,
      'AwsSolutions-IAM5[Resource::*]',
      'X-Ray active tracing (tracing: true): xray:PutTraceSegments and xray:PutTelemetryRecords do not support resource-level permissions.',
    );
  }
  const common: lambda.FunctionOptions = {
    ...opts,
    ...o,
    role,
    architecture: lambda.Architecture.ARM_64,
    logGroup: logs,
    // sundial_core::telemetry logs through the runtime's helper, which follows these.
    loggingFormat: lambda.LoggingFormat.JSON,
    applicationLogLevelV2: s.logLevel,
    tracing: s.tracing ? lambda.Tracing.ACTIVE : undefined,
  };
  const code = s.codeSource;
  if (code.kind === 'source') {
    return new RustFunction(s.scope, id, {
      ...common,
      manifestPath: code.manifestPath,
      binaryName: binary,
      bundling: { ...code.bundling, architecture: lambda.Architecture.ARM_64 },
    });
  }
  return new lambda.Function(s.scope, id, {
    ...common,
    code: assetCode(s, code.dir, binary),
    handler: 'bootstrap',
    runtime: lambda.Runtime.PROVIDED_AL2023,
  });
}

/** The staged code of one binary (prebuilt assets only). */
function assetCode(s: Sundial, dir: string, name: Binary): lambda.Code {
  const bin = path.join(dir, name);
  const bootstrap = path.join(bin, 'bootstrap');
  if (!fs.existsSync(bootstrap)) {
    throw new Error(
      `${bootstrap} is missing: build the functions with infra/scripts/build-assets.sh or point assetsDir at cargo lambda's output`,
    );
  }
  if (isPlaceholder(bootstrap)) {
    Annotations.of(s.scope).addWarningV2(
      `sundial:placeholder-${name}`,
      `${bootstrap} is a placeholder: the template synthesizes but the function will not run. Build with infra/scripts/build-assets.sh.`,
    );
  }
  return lambda.Code.fromAsset(bin);
}

function isPlaceholder(file: string): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(256);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('latin1').includes(PLACEHOLDER_MARKER);
  } finally {
    fs.closeSync(fd);
  }
}

/** What the control loop's functions read and write: the tables, and both lanes of every pool. */
export interface LoopResources {
  readonly jobs: dynamodb.Table;
  readonly executions: dynamodb.Table;
  /** Both lanes of every pool (docs/priority.md). */
  readonly poolQueueArns: string[];
  /** Every pool's outcome-notification queue (docs/outcomes.md): the reconciler sends to them. */
  readonly notifyQueueArns: string[];
}

/** The scan and the tick (one binary), the tick's minute rule, their grants, and the planner. */
export function tickAndScan(s: Sundial, envOf: EnvOf, t: LoopResources): { tick: lambda.Function; scan: lambda.Function } {
  const reserved = s.props.tick?.reservedConcurrency ?? {};
  const scan = rustFunction(s, 'Scan', 'tick', s.overrides.scan, {
    timeout: SCAN_TIMEOUT,
    memorySize: 512,
    // The same binary as the tick; a scan request never fans out further.
    // No tenant role: only the reconciler acts as a tenant (outcome notifications).
    environment: envOf('tick', { scanFunction: '', tenantRoleArn: '' }),
    description: 'Sundial scan: queues the due fires of a shard range',
    // A failed scan is repeated by the next tick from the shard watermark; retries would race it.
    retryAttempts: 0,
    reservedConcurrentExecutions: reserved === false ? undefined : reserved.scan ?? 10,
  });
  const tick = rustFunction(s, 'Tick', 'tick', s.overrides.tick, {
    timeout: TICK_TIMEOUT,
    memorySize: 256,
    environment: envOf('tick', { scanFunction: scan.functionName, tenantRoleArn: '' }),
    description: 'Sundial tick: fans the minute out to scan functions by shard range',
    retryAttempts: 0,
    reservedConcurrentExecutions: reserved === false ? undefined : reserved.tick ?? 2,
  });
  new events.Rule(s.scope, 'TickRule', {
    description: 'Sundial tick, once a minute',
    schedule: events.Schedule.rate(Duration.minutes(1)),
    // Delivery retries only within the minute: a tick delivered later is superseded by the next.
    targets: [new targets.LambdaFunction(tick, { retryAttempts: 2, maxEventAge: Duration.minutes(1) })],
  });
  for (const fn of [tick, scan]) {
    allow(fn, ['dynamodb:Query'], [indexArn(t.jobs, 'due')]);
    allow(fn, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], [t.jobs.tableArn]);
    // PutItem: each fire; UpdateItem: a `maxRuns` job's count (in the fire's transaction), and
    // the `open` index entry the verification pass and a job leaving its every-minute or daily
    // class give open fires; Query: that class leave reads the job's executions since the
    // shard's verified minute (docs/trigger.md, docs/schedule.md).
    allow(fn, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'], [t.executions.tableArn]);
    // GetQueueAttributes: lane depths, the back-pressure signal that defers low-priority fires.
    allow(fn, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], t.poolQueueArns);
  }
  allow(tick, ['lambda:InvokeFunction'], [scan.functionArn]);
  if (s.props.tableCapacity?.mode === 'provisioned') planner(s, tick, t);
  return { tick, scan };
}

/**
 * The provisioned-capacity planner (`{"plan": {}}` on the tick function, once a minute): it
 * counts the coming minutes' fires in the `due` index (the tick's Query grant) and sets the
 * units of the two tables and their indexes ahead of them (docs/capacity.md). Only granted
 * when the tables are provisioned: an on-demand stack has no UpdateTable anywhere.
 */
function planner(s: Sundial, fn: lambda.Function, t: LoopResources): void {
  new events.Rule(s.scope, 'PlanRule', {
    description: 'Sundial provisioned-capacity planner, once a minute',
    schedule: events.Schedule.rate(Duration.minutes(1)),
    targets: [
      new targets.LambdaFunction(fn, {
        event: events.RuleTargetInput.fromObject({ plan: {} }),
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
      }),
    ],
  });
  allow(fn, ['dynamodb:DescribeTable', 'dynamodb:UpdateTable'], [t.jobs.tableArn, t.executions.tableArn]);
}

/**
 * The reconciler: the same binary; `{"reconcile": {}}` runs one pass over the sparse `open`
 * index (executions not yet final, due for a look) and re-sends the ones nothing is acting on.
 * `tenantRoleArn` is read once the tenant access role exists (it trusts this function's role).
 */
export function reconciler(s: Sundial, envOf: EnvOf, t: LoopResources, eventBus: events.IEventBus, tenantRoleArn: () => string): lambda.Function {
  const fn = rustFunction(s, 'Reconcile', 'tick', s.overrides.reconcile, {
    timeout: SCAN_TIMEOUT,
    memorySize: 256,
    // The tenant access role: the reconciler delivers the outcome notifications a worker left
    // behind as the tenant (docs/outcomes.md), like a worker's webhook call.
    environment: envOf('tick', { scanFunction: '', tenantRoleArn: Lazy.string({ produce: tenantRoleArn }) }),
    description: 'Sundial reconciler: re-sends executions whose delivery was lost',
    // The next run repeats a failed one; retries would only race it. Two overlapping runs are
    // safe (each write is a CAS on the execution as read), so no reserved concurrency: on a new
    // account it would eat into the minimum of 10 unreserved executions and fail the deploy.
    retryAttempts: 0,
  });
  new events.Rule(s.scope, 'ReconcileRule', {
    description: 'Sundial reconciler, once a minute',
    schedule: events.Schedule.rate(Duration.minutes(1)),
    targets: [
      new targets.LambdaFunction(fn, {
        event: events.RuleTargetInput.fromObject({ reconcile: {} }),
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
      }),
    ],
  });
  allow(fn, ['dynamodb:Query'], [indexArn(t.executions, 'open')]);
  // Query: a waiting parent's children (docs/children.md), read to end it if its last child's
  // tally write was lost.
  allow(fn, ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query'], [t.executions.tableArn]);
  // GetQueueAttributes: a pool with a visible backlog gets more time before a re-send.
  allow(fn, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], t.poolQueueArns);
  // Outcome notifications (docs/outcomes.md) go to the notify queue of the execution's pool,
  // any pool's; that pool's workers deliver them.
  allow(fn, ['sqs:SendMessage', 'sqs:GetQueueUrl'], t.notifyQueueArns);
  // A fire not started by its start deadline: an operations-log entry (jobs table) and a
  // FireMissed event on the stack's bus.
  allow(fn, ['dynamodb:PutItem'], [t.jobs.tableArn]);
  allow(fn, ['events:PutEvents'], [eventBus.eventBusArn]);
  // The auto-pause (docs/outcomes.md): a job whose dead fires in a row reach its
  // autoPauseAfterDeadFires is paused by the control plane's pause, run by the reconciler that
  // flushes the outbox: the job's read and versioned write, the fires it owes put first.
  allow(fn, ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query'], [t.jobs.tableArn]);
  allow(fn, ['dynamodb:PutItem'], [t.executions.tableArn]);
  return fn;
}
