/**
 * `SundialScheduler`: the whole of Sundial as one construct to drop into a stack.
 *
 * Layout (see DESIGN.md §1):
 *   EventBridge rate(1 minute) -> Tick -> (async, per shard range) -> Scan
 *   Scan -> jobs/executions tables -> per-pool SQS queue (+ DLQ)
 *   pool queue -> worker Lambda (SQS event source) or ECS Fargate long-poll worker
 *   HTTP API (JWT or IAM auth) -> api Lambda -> tables
 *
 * Every table, index, queue name and env variable comes from `functions/model/resources.json`
 * (read by `./resources`), the same file the Rust functions compile in. Each function gets every
 * setting its binary reads (`envLoaders` there), from the props below or their documented
 * defaults (README.md "Settings" has the full table). Each function's role
 * lists only the actions that function uses on only the resources it uses; nothing gets
 * `dynamodb:*`, `sqs:*` or a table-level admin action.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Annotations, Arn, ArnFormat, Duration, Lazy, RemovalPolicy, Stack, Tags, Token, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer, HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { RustFunction } from 'cargo-lambda-cdk';
import { Construct, IConstruct } from 'constructs';
import { ResolvedCode, SundialCode } from './code';
import { METRIC_NAMESPACE, Metrics, POOL_DIMENSION, RESOURCE_DIMENSION } from './metrics';
import { Binary, dlqName, lowQueueName, PACKAGE_ROOT, queueName, resources, SettingName, settingsOf, TableDef, validatePoolName } from './resources';
import { TOOLKIT_TABLES, ToolkitTableName } from './toolkit';
import {
  ApiAuth,
  FunctionOverrides,
  FunctionOverridesProps,
  PoolProps,
  PROTECTED_FUNCTION_PROPS,
  PROTECTED_QUEUE_PROPS,
  PROTECTED_TABLE_PROPS,
  SundialPool,
  SundialSchedulerProps,
  TableCapacity,
  TableOverrides,
  TargetAllow,
} from './scheduler/props';

export * from './scheduler/props';

/** The table props of a billing choice (empty for on demand, the construct's default). */
function capacityProps(c: TableCapacity | undefined): TableOverrides {
  if (c === undefined || c.mode === 'onDemand') return {};
  for (const [name, v] of [['writeCapacity', c.writeCapacity], ['readCapacity', c.readCapacity]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 40_000) {
      throw new Error(`tableCapacity.${name} must be an integer from 1 to 40,000 (the default table quota), got ${v}`);
    }
  }
  return { billingMode: dynamodb.BillingMode.PROVISIONED, writeCapacity: c.writeCapacity, readCapacity: c.readCapacity };
}

const DEFAULT_LAMBDA_RUN_TIMEOUT = Duration.minutes(2);
const DEFAULT_ECS_RUN_TIMEOUT = Duration.minutes(15);
/** Visibility is this much above the run timeout so a slow finish is not redelivered. */
const VISIBILITY_MARGIN_SECONDS = 30;
const TICK_TIMEOUT = Duration.seconds(30);
const SCAN_TIMEOUT = Duration.seconds(60);
/** Fargate's longest wait between SIGTERM and SIGKILL. */
const ECS_STOP_TIMEOUT = Duration.seconds(120);
/** Records in one worker invocation (the SQS event sources' batch size). */
const LAMBDA_BATCH_SIZE = 10;
/** ECS deployments start the new tasks before the old ones stop: up to twice the tasks. */
const ECS_MAX_HEALTHY_PERCENT = 200;
/** The tag that names a target's tenant, and the session tag of the tenant access role (docs/tenancy.md). */
export const TENANT_TAG_KEY = 'sundial-tenant';
/** Marker in the committed placeholder assets. */
export const PLACEHOLDER_MARKER = 'SUNDIAL_PLACEHOLDER_ASSET';

export class SundialScheduler extends Construct {
  public readonly jobsTable: dynamodb.Table;
  public readonly executionsTable: dynamodb.Table;
  public readonly pools: SundialPool[] = [];
  public readonly tickFunction: lambda.Function;
  public readonly scanFunction: lambda.Function;
  /** The reconciler: re-sends executions whose delivery is gone (its own schedule). */
  public readonly reconcileFunction: lambda.Function;
  public readonly apiFunction: lambda.Function;
  /** The tenants' event sources' function (only with `eventSources`). */
  public readonly ingestFunction?: lambda.Function;
  /** The bus made for each tenant with a `bus` source, by tenant. */
  public readonly tenantBuses: Record<string, events.EventBus> = {};
  private readonly tenantRules: events.Rule[] = [];
  /** Bus events the ingest failed three times (Lambda's asynchronous retries), kept 14 days. */
  public readonly ingestDeadLetterQueue?: sqs.Queue;
  public readonly httpApi: apigwv2.HttpApi;
  public readonly queuePrefix: string;
  public readonly shards: number;
  public readonly alarms: cw.Alarm[] = [];
  public readonly dashboard: cw.Dashboard;
  /**
   * The stack's own EventBridge bus: the reconciler and the workers put `FireMissed` events on
   * it (source `sundial`, detail-type `FireMissed`, detail: tenant, jobId, executionId,
   * scheduledAt, deadline, observedAt, startDeadlineSecs, reason, status, pool, defVersion).
   * Add rules to it, e.g. one that matches `detail.jobId` to alert on one job.
   */
  public readonly eventBus: events.EventBus;
  /** The bus's name (`SUNDIAL_EVENT_BUS`). */
  public readonly eventBusName: string;
  /** The handler toolkit's tables, when `toolkitTables` asked for them. */
  public readonly toolkitTables?: Readonly<Record<ToolkitTableName, dynamodb.Table>>;
  /** The customer-managed key, when one was given. */
  public readonly encryptionKey?: kms.IKey;
  /**
   * The tenant access role (docs/tenancy.md): every worker assumes it with the session tag
   * `sundial-tenant=<tenant>` and calls job targets (Lambda, SQS) and reads webhook secrets only
   * through that session. Its statements are the `allowedTarget*Arns` grants, each limited to
   * resources whose `sundial-tenant` tag equals the session's; its trust policy admits the
   * stack's worker roles only, and only with that one session tag. Grant it `kms:Decrypt` on a
   * customer-managed key of a target secret or queue.
   */
  public readonly tenantAccessRole: iam.Role;
  private ecsCluster?: ecs.Cluster;
  private readonly apiAuthKind: ApiAuth['kind'];
  /** The IAM tag that names an API caller's tenant (`apiAuth.tenantTag`, default `sundial-tenant`). */
  private readonly principalTenantTag: string;
  /** That tag and the tenant access role's session tag: the keys no tenant may set. */
  private readonly tenantTagKeys: string[];
  private guardrailPolicy?: iam.ManagedPolicy;
  private readonly codeSource: ResolvedCode;
  private readonly tracing: boolean;
  private readonly overrides: FunctionOverridesProps;

  private readonly retain: boolean;
  private readonly logRetention: logs.RetentionDays;
  private readonly alarmAction?: cw.IAlarmAction;
  private readonly logLevel: lambda.ApplicationLogLevel;

  constructor(scope: Construct, id: string, props: SundialSchedulerProps) {
    super(scope, id);
    const r = resources();
    const stack = Stack.of(this);

    this.retain = props.retainData ?? true;
    this.logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    if (props.assetsDir !== undefined && props.code !== undefined) throw new Error('give assetsDir or code, not both');
    this.codeSource = (props.code ?? SundialCode.fromAssets(props.assetsDir ?? path.join(PACKAGE_ROOT, 'assets'))).resolve();
    this.logLevel = props.logLevel ?? lambda.ApplicationLogLevel.INFO;
    this.tracing = props.tracing ?? false;
    this.apiAuthKind = props.apiAuth.kind;
    this.principalTenantTag = tenantTagOf(props.apiAuth, resources().defaults.tenantTag);
    this.tenantTagKeys = [...new Set([TENANT_TAG_KEY, this.principalTenantTag])];
    this.encryptionKey = props.encryptionKey;
    this.overrides = props.functionOverrides ?? {};
    for (const [k, o] of Object.entries(this.overrides)) checkOverrides(`functionOverrides.${k}`, o, PROTECTED_FUNCTION_PROPS);
    for (const [k, o] of Object.entries(props.tableOverrides ?? {})) checkOverrides(`tableOverrides.${k}`, o, PROTECTED_TABLE_PROPS);
    for (const [k, o] of Object.entries(props.queueOverrides ?? {})) checkOverrides(`queueOverrides.${k}`, o, PROTECTED_QUEUE_PROPS);
    if (this.encryptionKey) this.allowLogsToUseKey(this.encryptionKey);
    if (props.alarmTopicArn) {
      this.alarmAction = new cwActions.SnsAction(sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn));
    }

    // ---- validation (fail at synth, not at deploy) -------------------------------------------
    this.shards = props.shards ?? r.defaults.shards;
    if (!Number.isInteger(this.shards) || this.shards < 1 || this.shards > 65_536) {
      throw new Error(`shards must be an integer between 1 and 65536, got ${this.shards}`);
    }
    const poolProps: PoolProps[] = props.pools ?? r.queues.defaultPools.map((name) => ({ name }));
    if (poolProps.length === 0) throw new Error('at least one pool is required');
    const seen = new Set<string>();
    for (const p of poolProps) {
      const err = validatePoolName(p.name);
      if (err) throw new Error(err);
      if (seen.has(p.name)) throw new Error(`pool ${p.name} is listed twice`);
      seen.add(p.name);
    }
    this.queuePrefix = props.queuePrefix ?? `${stack.stackName}-`;
    if (!Token.isUnresolved(this.queuePrefix)) {
      if (!/^[A-Za-z0-9_-]*$/.test(this.queuePrefix)) {
        throw new Error(`queuePrefix ${JSON.stringify(this.queuePrefix)} may only contain A-Z, a-z, 0-9, '-' and '_'`);
      }
      for (const p of poolProps) {
        const longest = dlqName(this.queuePrefix, p.name);
        if (longest.length > 80) {
          throw new Error(`queue name ${longest} is longer than SQS's 80 characters; set a shorter queuePrefix`);
        }
      }
    }
    if (props.apiAuth.kind === 'jwt' && (!props.apiAuth.issuer || props.apiAuth.audience.length === 0)) {
      throw new Error('apiAuth jwt needs an issuer and at least one audience');
    }

    // ---- tables ----------------------------------------------------------------------------
    const to = props.tableOverrides ?? {};
    const cap = capacityProps(props.tableCapacity);
    this.jobsTable = this.table('JobsTable', r.tables.jobs, props.tableNamePrefix, { ...cap, ...to.all, ...to.jobs });
    this.executionsTable = this.table('ExecutionsTable', r.tables.executions, props.tableNamePrefix, { ...cap, ...to.all, ...to.executions });
    if (props.toolkitTables) {
      const prefix = props.toolkitTables === true ? undefined : props.toolkitTables.namePrefix;
      this.toolkitTables = this.toolkit(prefix, { ...to.all, ...to.toolkit });
    }

    // ---- event bus -------------------------------------------------------------------------
    // Sundial's own bus: start-deadline misses (FireMissed) go here, one event per job and fire,
    // so users alert on one job with a rule instead of a metric per job.
    // Named here, like the queues (`{stack}-...`), so the functions' env carries the name itself
    // rather than a Ref (moto's CloudFormation cannot resolve a bus Ref into an env value).
    this.eventBusName = props.eventBusName ?? `${stack.stackName}-sundial-events`;
    if (!Token.isUnresolved(this.eventBusName) && !/^[A-Za-z0-9._-]{1,256}$/.test(this.eventBusName)) {
      throw new Error(`eventBusName ${JSON.stringify(this.eventBusName)} may only contain A-Z, a-z, 0-9, '.', '-' and '_' (at most 256)`);
    }
    this.eventBus = new events.EventBus(this, 'EventBus', { eventBusName: this.eventBusName });

    // ---- queues ----------------------------------------------------------------------------
    const queues = poolProps.map((p) => {
      const kind = p.kind ?? 'lambda';
      const runTimeout = p.runTimeout ?? (kind === 'lambda' ? DEFAULT_LAMBDA_RUN_TIMEOUT : DEFAULT_ECS_RUN_TIMEOUT);
      const runSecs = runTimeout.toSeconds();
      if (kind === 'lambda' && runSecs > 900) throw new Error(`pool ${p.name}: a Lambda worker runs at most 15 minutes`);
      const visibility = Math.max(r.queues.visibilityTimeoutSeconds, runSecs + VISIBILITY_MARGIN_SECONDS);
      if (visibility > 43_200) throw new Error(`pool ${p.name}: run timeout too long for SQS visibility (12 h)`);
      const retention = Duration.seconds(r.queues.messageRetentionSeconds);
      const qo = props.queueOverrides ?? {};
      const encryption: Pick<sqs.QueueProps, 'encryption' | 'encryptionMasterKey'> = this.encryptionKey
        ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: this.encryptionKey }
        : { encryption: sqs.QueueEncryption.SQS_MANAGED };
      const dlq = new sqs.Queue(this, `Pool-${p.name}-Dlq`, {
        ...qo.all,
        ...qo.dlqs,
        queueName: dlqName(this.queuePrefix, p.name),
        retentionPeriod: retention,
        ...encryption,
        enforceSSL: true,
      });
      const queue = new sqs.Queue(this, `Pool-${p.name}-Queue`, {
        ...qo.all,
        ...qo.queues,
        queueName: queueName(this.queuePrefix, p.name),
        retentionPeriod: retention,
        visibilityTimeout: Duration.seconds(visibility),
        ...encryption,
        enforceSSL: true,
        deadLetterQueue: { queue: dlq, maxReceiveCount: r.queues.maxReceiveCount },
      });
      // The low lane: same settings and DLQ; workers read it after the main queue.
      const lowQueue = new sqs.Queue(this, `Pool-${p.name}-LowQueue`, {
        ...qo.all,
        ...qo.queues,
        queueName: lowQueueName(this.queuePrefix, p.name),
        retentionPeriod: retention,
        visibilityTimeout: Duration.seconds(visibility),
        ...encryption,
        enforceSSL: true,
        deadLetterQueue: { queue: dlq, maxReceiveCount: r.queues.maxReceiveCount },
      });
      return { p, kind, runTimeout, queue, lowQueue, dlq };
    });

    // ---- env contract ----------------------------------------------------------------------
    // Every setting a binary reads (resources.json envLoaders) gets a value here or per function.
    const settings = this.settingValues(props, poolProps);
    const envOf = (binary: Binary, perFunction: Partial<Record<SettingName, string>> = {}): Record<string, string> => {
      const env: Record<string, string> = {};
      for (const name of settingsOf(binary, r)) {
        const value = perFunction[name] ?? settings[name];
        if (value === undefined) throw new Error(`no value for setting ${name} (${r.env[name]}) of ${binary}`);
        env[r.env[name]] = value;
      }
      return env;
    };

    // ---- tick and scan ---------------------------------------------------------------------
    const reserved = props.tick?.reservedConcurrency ?? {};
    this.scanFunction = this.rustFunction('Scan', 'tick', this.overrides.scan, {
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
    this.tickFunction = this.rustFunction('Tick', 'tick', this.overrides.tick, {
      timeout: TICK_TIMEOUT,
      memorySize: 256,
      environment: envOf('tick', { scanFunction: this.scanFunction.functionName, tenantRoleArn: '' }),
      description: 'Sundial tick: fans the minute out to scan functions by shard range',
      retryAttempts: 0,
      reservedConcurrentExecutions: reserved === false ? undefined : reserved.tick ?? 2,
    });
    new events.Rule(this, 'TickRule', {
      description: 'Sundial tick, once a minute',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      // Delivery retries only within the minute: a tick delivered later is superseded by the next.
      targets: [new targets.LambdaFunction(this.tickFunction, { retryAttempts: 2, maxEventAge: Duration.minutes(1) })],
    });
    // Both lanes of every pool (docs/priority.md).
    const poolQueueArns = queues.flatMap((q) => [q.queue.queueArn, q.lowQueue.queueArn]);
    for (const fn of [this.tickFunction, this.scanFunction]) {
      allow(fn, ['dynamodb:Query'], [indexArn(this.jobsTable, 'due')]);
      allow(fn, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], [this.jobsTable.tableArn]);
      // PutItem: each fire; UpdateItem: a `maxRuns` job's count (in the fire's transaction), and
      // the `open` index entry the verification pass and a job leaving its every-minute or daily
      // class give open fires; Query: that class leave reads the job's executions since the
      // shard's verified minute (docs/trigger.md, docs/schedule.md).
      allow(fn, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'], [this.executionsTable.tableArn]);
      // GetQueueAttributes: lane depths, the back-pressure signal that defers low-priority fires.
      allow(fn, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], poolQueueArns);
    }
    allow(this.tickFunction, ['lambda:InvokeFunction'], [this.scanFunction.functionArn]);
    if (props.tableCapacity?.mode === 'provisioned') this.planner(this.tickFunction);

    // ---- reconciler ------------------------------------------------------------------------
    // The same binary; `{"reconcile": {}}` runs one pass over the sparse `open` index (executions
    // not yet final, due for a look) and re-sends the ones nothing is acting on.
    this.reconcileFunction = this.rustFunction('Reconcile', 'tick', this.overrides.reconcile, {
      timeout: SCAN_TIMEOUT,
      memorySize: 256,
      // The tenant access role: the reconciler delivers the outcome notifications a worker left
      // behind as the tenant (docs/outcomes.md), like a worker's webhook call.
      environment: envOf('tick', { scanFunction: '', tenantRoleArn: Lazy.string({ produce: () => this.tenantAccessRole.roleArn }) }),
      description: 'Sundial reconciler: re-sends executions whose delivery was lost',
      // The next run repeats a failed one; retries would only race it. Two overlapping runs are
      // safe (each write is a CAS on the execution as read), so no reserved concurrency: on a new
      // account it would eat into the minimum of 10 unreserved executions and fail the deploy.
      retryAttempts: 0,
    });
    new events.Rule(this, 'ReconcileRule', {
      description: 'Sundial reconciler, once a minute',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [
        new targets.LambdaFunction(this.reconcileFunction, {
          event: events.RuleTargetInput.fromObject({ reconcile: {} }),
          retryAttempts: 0,
          maxEventAge: Duration.minutes(1),
        }),
      ],
    });
    allow(this.reconcileFunction, ['dynamodb:Query'], [indexArn(this.executionsTable, 'open')]);
    // Query: a waiting parent's children (docs/children.md), read to end it if its last child's
    // tally write was lost.
    allow(this.reconcileFunction, ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query'], [this.executionsTable.tableArn]);
    // GetQueueAttributes: a pool with a visible backlog gets more time before a re-send.
    allow(this.reconcileFunction, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], poolQueueArns);
    // A fire not started by its start deadline: an operations-log entry (jobs table) and a
    // FireMissed event on the stack's bus.
    allow(this.reconcileFunction, ['dynamodb:PutItem'], [this.jobsTable.tableArn]);
    allow(this.reconcileFunction, ['events:PutEvents'], [this.eventBus.eventBusArn]);
    // The auto-pause (docs/outcomes.md): a job whose dead fires in a row reach its
    // autoPauseAfterDeadFires is paused by the control plane's pause, run by the reconciler that
    // flushes the outbox: the job's read and versioned write, the fires it owes put first.
    allow(this.reconcileFunction, ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query'], [this.jobsTable.tableArn]);
    allow(this.reconcileFunction, ['dynamodb:PutItem'], [this.executionsTable.tableArn]);

    // ---- workers ---------------------------------------------------------------------------
    // Both are set once the role and the api exist (below); the workers' env only holds tokens.
    const tenantEnv: Partial<Record<SettingName, string>> = {
      tenantRoleArn: Lazy.string({ produce: () => this.tenantAccessRole.roleArn }),
      ownFunctions: Lazy.string({ produce: () => this.ownFunctionGlobs(this.overrides) }),
    };
    for (const q of queues) {
      let pool: SundialPool;
      if (q.kind === 'lambda') {
        if (q.p.slots !== undefined || q.p.shutdownGrace !== undefined) {
          throw new Error(`pool ${q.p.name}: slots and shutdownGrace apply to ECS pools only`);
        }
        const maxConcurrency = q.p.maxConcurrency ?? 10;
        if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
          throw new Error(`pool ${q.p.name}: maxConcurrency of a Lambda pool must be 2-1000 (SQS event source limit)`);
        }
        const worker = this.rustFunction(`Worker-${q.p.name}`, 'worker', this.overrides.workers, {
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
        const lowMaxConcurrency = q.p.lowMaxConcurrency ?? 2;
        if (!Number.isInteger(lowMaxConcurrency) || lowMaxConcurrency < 2 || lowMaxConcurrency > 1000) {
          throw new Error(`pool ${q.p.name}: lowMaxConcurrency must be 2-1000 (SQS event source limit)`);
        }
        worker.addEventSource(
          new SqsEventSource(q.lowQueue, { batchSize: LAMBDA_BATCH_SIZE, reportBatchItemFailures: true, maxConcurrency: lowMaxConcurrency }),
        );
        pool = { name: q.p.name, kind: 'lambda', queue: q.queue, lowQueue: q.lowQueue, dlq: q.dlq, runTimeout: q.runTimeout, worker, role: worker.role! };
      } else {
        const env = envOf('worker-ecs', { pool: q.p.name, ...tenantEnv, ...this.ecsSettings(q.p) });
        if (q.p.lowMaxConcurrency !== undefined) throw new Error(`pool ${q.p.name}: lowMaxConcurrency applies to Lambda pools only`);
        pool = { ...this.ecsPool(q.p, q.queue, q.dlq, q.runTimeout, env, props), lowQueue: q.lowQueue };
      }
      this.grantWorker(pool.role, q.queue, q.dlq);
      this.grantWorker(pool.role, q.lowQueue, q.dlq);
      this.pools.push(pool);
    }
    this.tenantAccessRole = this.tenantAccess(props);

    // ---- api -------------------------------------------------------------------------------
    // The workers' log groups, for the web console's Logs Insights links by execution id.
    const workerLogGroups = this.pools.map((p) =>
      p.kind === 'lambda' && p.worker
        ? p.worker.logGroup.logGroupName
        : (this.node.findChild(`WorkerEcs-${p.name}Logs`) as logs.LogGroup).logGroupName,
    );
    const apiReserved = props.apiReservedConcurrency ?? 50;
    if (apiReserved !== false && (!Number.isInteger(apiReserved) || apiReserved < 1)) {
      throw new Error(`apiReservedConcurrency must be a positive integer or false, got ${apiReserved}`);
    }
    this.apiFunction = this.rustFunction('Api', 'api', this.overrides.api, {
      timeout: Duration.seconds(29),
      memorySize: 256,
      environment: envOf('api', {
        consoleLogGroups: workerLogGroups.join(','),
        // Events naming another API (or none) are refused (docs/tenancy.md): set once the API exists.
        apiId: Lazy.string({ produce: () => this.httpApi.apiId }),
      }),
      description: 'Sundial HTTP API',
      reservedConcurrentExecutions: apiReserved === false ? undefined : apiReserved,
    });
    // Tenant scoping is enforced in the api code: every key it builds starts with T#{tenant}#,
    // and the tenant comes from the verified JWT claims or IAM principal. IAM's
    // dynamodb:LeadingKeys cannot express that (the role is shared by all tenants), so the
    // grant is table-level but limited to item reads/writes: no Scan, no DeleteItem, no admin.
    // The list of every call it makes is proven by infra/test/iam.test.ts from the test suite's
    // recording (sundial_core::access): BatchGetItem reads the definitions of a jobs page.
    const tables = [this.jobsTable, this.executionsTable];
    allow(
      this.apiFunction,
      ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem', 'dynamodb:Query'],
      tables.map((t) => t.tableArn),
    );
    // Trigger-now, backfill and dead-letter replay create READY executions and send them to their
    // pool's queue; without this they would answer 500 and leave the executions to the reconciler.
    // GetQueueAttributes: lane depths, the back-pressure signal behind 429 `saturated`.
    allow(this.apiFunction, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], poolQueueArns);
    // GET /v1/pools (operators): each pool's dead letters are counted too, read-only.
    allow(this.apiFunction, ['sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], queues.map((q) => q.dlq.queueArn));
    if (tenancyOf(props.apiAuth) === 'iam-principal-tag') {
      // The caller's tenant is the tag on its role or user (functions/api/src/auth.rs).
      allow(this.apiFunction, ['iam:ListRoleTags'], [stack.formatArn({ service: 'iam', region: '', resource: 'role', resourceName: '*' })]);
      allow(this.apiFunction, ['iam:ListUserTags'], [stack.formatArn({ service: 'iam', region: '', resource: 'user', resourceName: '*' })]);
      const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
      const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
      for (const kind of ['role', 'user']) {
        acknowledge(
          this.apiFunction.role!,
          `AwsSolutions-IAM5[Resource::arn:${partition}:iam::${account}:${kind}/*]`,
          `Any ${kind} of the account may call the API; its tenant is its sundial-tenant tag, so the api reads the tags (List${kind === 'role' ? 'Role' : 'User'}Tags only, a read of tags) of whichever ${kind} signed the request.`,
        );
      }
    }
    allow(this.apiFunction, ['dynamodb:Query'], tables.map((t) => `${t.tableArn}/index/*`));
    // Quota counters (T#{tenant}#QUOTA) and Idempotency-Key records (T#{tenant}#IDEM#{key}) go
    // back to nothing when a request is refused: DeleteItem, but only of those items; and an
    // operator deletes a resource limit (RESOURCES, docs/resources.md).
    this.apiFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:DeleteItem'],
        resources: [this.jobsTable.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['T#*#QUOTA', 'T#*#IDEM#*', 'RESOURCES'] } },
      }),
    );
    this.httpApi = new apigwv2.HttpApi(this, 'HttpApi', { description: 'Sundial API', createDefaultStage: false });
    const accessLogs = this.logGroup('ApiAccessLogs');
    new apigwv2.HttpStage(this, 'HttpApiDefaultStage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.apiThrottle?.rateLimit ?? 100, burstLimit: props.apiThrottle?.burstLimit ?? 200 },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(accessLogs),
        // One JSON line per request; `sub` is the caller's JWT subject (empty with IAM auth).
        format: apigw.AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            route: '$context.routeKey',
            status: '$context.status',
            latencyMs: '$context.responseLatency',
            ip: '$context.identity.sourceIp',
            sub: '$context.authorizer.claims.sub',
            iamArn: '$context.identity.userArn',
            error: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', this.apiFunction);
    const authorizer =
      props.apiAuth.kind === 'jwt'
        ? new HttpJwtAuthorizer('JwtAuthorizer', props.apiAuth.issuer, { jwtAudience: props.apiAuth.audience })
        : new HttpIamAuthorizer();
    this.httpApi.addRoutes({ path: '/{proxy+}', methods: [apigwv2.HttpMethod.ANY], integration, authorizer });
    // The OpenAPI document is public so clients can discover the API before they hold a token.
    const openapi = this.httpApi.addRoutes({ path: '/openapi.json', methods: [apigwv2.HttpMethod.GET], integration });
    for (const route of openapi) {
      acknowledge(route, 'AwsSolutions-APIG4', 'GET /openapi.json is public by design: the OpenAPI document describes the API and holds no tenant data; every other route needs JWT or IAM auth.');
    }
    // The web console's static files (docs/console.md) are public too: the same bytes for
    // everyone, no tenant data; the page then calls the /v1 routes above with the user's token.
    const consoleRoutes = [
      ...this.httpApi.addRoutes({ path: '/console', methods: [apigwv2.HttpMethod.GET], integration }),
      ...this.httpApi.addRoutes({ path: '/console/{file}', methods: [apigwv2.HttpMethod.GET], integration }),
    ];
    for (const route of consoleRoutes) {
      acknowledge(route, 'AwsSolutions-APIG4', 'GET /console and /console/{file} are public by design: the web console\'s static files and its sign-in settings hold no tenant data; every data call goes to a /v1 route, which needs JWT or IAM auth.');
    }
    // The api reads every index of its own two tables (jobs: due, by_tenant; executions:
    // attention, open, ...): `index/*` under those two table ARNs, nothing else.
    for (const t of tables) {
      acknowledge(
        this.apiFunction.role!,
        `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(t.node.defaultChild as dynamodb.CfnTable)}.Arn>/index/*]`,
        'The api queries the indexes of its own table only; index/* is scoped to that table ARN (resources.json lists them).',
      );
    }

    // ---- tenants' event sources --------------------------------------------------------------
    // docs/events.md: the ingest is the same control plane as the API (binary `ingest` of the
    // api crate), so it reads the API's settings (quotas, back-pressure) and makes the same calls
    // for an event as POST /v1/jobs/{jobId}/events; the tenant is the source's, declared here.
    const sources = props.eventSources ?? [];
    if (sources.length > 0) {
      const declared: Record<string, string>[] = [];
      const busOf: Record<string, events.EventBus> = {};
      for (const [i, src] of sources.entries()) {
        if (!/^[A-Za-z0-9_-]{1,64}$/.test(src.tenant)) throw new Error(`eventSources[${i}].tenant: ${JSON.stringify(src.tenant)} must be 1-64 characters of A-Z, a-z, 0-9, '-' or '_' (a tenant id)`);
        if ((src.queue === undefined) === (src.bus === undefined)) throw new Error(`eventSources[${i}]: give exactly one of queue and bus`);
        if (src.bus !== undefined) {
          if (busOf[src.tenant]) throw new Error(`eventSources[${i}]: tenant ${src.tenant} already has a bus`);
          const busName = `${stack.stackName}-tenant-${src.tenant}`;
          const bus = new events.EventBus(this, `TenantBus-${src.tenant}`, { eventBusName: busName });
          Tags.of(bus).add('sundial-tenant', src.tenant);
          for (const account of src.bus.accounts ?? []) {
            bus.addToResourcePolicy(
              new iam.PolicyStatement({
                sid: `PutEvents${account}`,
                principals: [new iam.AccountPrincipal(account)],
                actions: ['events:PutEvents'],
                resources: [bus.eventBusArn],
              }),
            );
          }
          busOf[src.tenant] = bus;
          this.tenantBuses[src.tenant] = bus;
          declared.push({ tenant: src.tenant, bus: busName });
        } else {
          declared.push({ tenant: src.tenant, queueArn: src.queue!.queueArn });
        }
      }
      const ingestDlq = new sqs.Queue(this, 'IngestDeadLetters', {
        retentionPeriod: Duration.days(14),
        enforceSSL: true,
        ...(this.encryptionKey ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: this.encryptionKey } : { encryption: sqs.QueueEncryption.SQS_MANAGED }),
      });
      this.ingestDeadLetterQueue = ingestDlq;
      const ingest = this.rustFunction('Ingest', 'ingest', this.overrides.ingest, {
        timeout: Duration.seconds(30),
        memorySize: 256,
        environment: envOf('ingest', {
          consoleLogGroups: workerLogGroups.join(','),
          apiId: Lazy.string({ produce: () => this.httpApi.apiId }),
          eventSources: stack.toJsonString(declared),
        }),
        description: "Sundial ingest: the tenants' event sources to executions",
        retryAttempts: 2,
        deadLetterQueue: ingestDlq,
      });
      this.ingestFunction = ingest;
      // The same item calls as the API's events route (key claim, execution put, quota and
      // rate counters, ops log), proven by infra/test/iam.test.ts from the recording.
      // No index: an event reads its job and execution by key.
      allow(
        ingest,
        ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem', 'dynamodb:Query'],
        tables.map((t) => t.tableArn),
      );
      ingest.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['dynamodb:DeleteItem'],
          resources: [this.jobsTable.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['T#*#QUOTA'] } },
        }),
      );
      allow(ingest, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], poolQueueArns);
      for (const src of sources) {
        if (src.queue !== undefined) {
          // The mapping consumes the queue; the function reads its sundial-tenant tag.
          src.queue.grantConsumeMessages(ingest);
          allow(ingest, ['sqs:GetQueueUrl', 'sqs:ListQueueTags'], [src.queue.queueArn]);
          // At most 5 concurrent batches per tenant queue: one tenant's flood cannot take the
          // account's Lambda concurrency from the others (its messages wait in its own queue).
          ingest.addEventSource(new SqsEventSource(src.queue, { batchSize: 10, reportBatchItemFailures: true, maxConcurrency: 5 }));
        } else {
          const bus = busOf[src.tenant];
          const rule: events.Rule = new events.Rule(this, `TenantRule-${src.tenant}`, {
            eventBus: bus,
            description: `Sundial: events of tenant ${src.tenant} to the ingest`,
            eventPattern: src.bus?.eventPattern ?? { detailType: ['Sundial Event'] },
            targets: [
              new targets.LambdaFunction(ingest, {
                deadLetterQueue: ingestDlq,
                retryAttempts: 185,
                maxEventAge: Duration.hours(24),
              }),
            ],
          });
          // The whole event, stamped with the tenant and bus: `<aws.events.event>` is
          // EventBridge's predefined variable for the original event as JSON (a value, not a key).
          const stamp = JSON.stringify({ tenant: src.tenant, bus: `${stack.stackName}-tenant-${src.tenant}` });
          this.tenantRules.push(rule);
          (rule.node.defaultChild as events.CfnRule).addPropertyOverride('Targets.0.InputTransformer', {
            InputTemplate: `{"sundialEventSource":${stamp},"event":<aws.events.event>}`,
          });
        }
      }
      this.alarm('IngestErrors', {
        alarmDescription: "Sundial ingest failed: events from the tenants' sources are being retried (see the ingest logs)",
        metric: ingest.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      });
      this.alarm('IngestDeadLettersAlarm', {
        alarmDescription: 'Sundial ingest dead-lettered bus events it could not take in three tries (IngestDeadLetters queue)',
        metric: ingestDlq.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      });
    }

    // ---- observability ---------------------------------------------------------------------
    this.dashboard = this.observe(props.scheduleLagAlarmThresholdMs ?? 5000, poolProps);
  }

  /** The cluster of ECS pools, if any. */
  public get cluster(): ecs.Cluster | undefined {
    return this.ecsCluster;
  }

  /** The HTTP API's base URL. */
  public get apiUrl(): string {
    return this.httpApi.apiEndpoint;
  }

  /**
   * Lets `grantee` call the API with IAM auth (SigV4): `execute-api:Invoke` on every route of the
   * `$default` stage. Which tenant the caller acts for is decided by the API (see README
   * "Settings" and docs/api.md), not by this grant. With JWT auth there is nothing to grant (the
   * caller needs a token from the issuer), so this throws.
   */
  public grantInvokeApi(grantee: iam.IGrantable): iam.Grant {
    if (this.apiAuthKind !== 'iam') {
      throw new Error('grantInvokeApi: the API uses JWT auth; callers need a token from the issuer, not an IAM grant');
    }
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ['execute-api:Invoke'],
      resourceArns: [this.httpApi.arnForExecuteApi('*', '/*', '$default')],
    });
  }

  /**
   * Read access to the jobs table and its indexes (DynamoDB's read actions, and decrypt on
   * `encryptionKey`), e.g. for analytics. It reads every tenant's jobs: tenant scoping lives in
   * the API, so give this only to principals that may see all tenants.
   */
  public grantReadJobs(grantee: iam.IGrantable): iam.Grant {
    return this.jobsTable.grantReadData(grantee);
  }

  /** Read access to the executions table and its indexes; every tenant's executions (see `grantReadJobs`). */
  public grantReadExecutions(grantee: iam.IGrantable): iam.Grant {
    return this.executionsTable.grantReadData(grantee);
  }

  /**
   * The deployment boundary (docs/tenancy.md): Deny statements for tenant principals, i.e. every
   * principal that acts for a tenant (in `iam-principal-tag` tenancy, the tagged roles and users
   * of this account). A tenant principal that could invoke, update or configure Sundial's
   * functions, touch its tables, queues, bus, log groups or key, or pass, change or assume its
   * roles could act as any tenant (an event sent straight to the api function carries whatever
   * tenant it names) or read every tenant's data; one that could set the tenant tag could become
   * another tenant. The statements deny exactly that:
   * - `lambda:*` on Sundial's functions (and their versions and aliases), and creating, changing
   *   or deleting an event source mapping that feeds one;
   * - `dynamodb:*` on its tables and their indexes and streams; `sqs:*` on its queues (pool, low
   *   lane, DLQ); `events:*` on its bus; `logs:*` on its log groups; `kms:*` on `encryptionKey`;
   * - `iam:*` on its roles (`iam:PassRole` included) and `sts:AssumeRole`, `sts:TagSession`,
   *   `sts:SetSourceIdentity` on them, the tenant access role first;
   * - tagging with the tenant tag (`sundial-tenant`, and `apiAuth.tenantTag`): `iam:TagRole`,
   *   `iam:UntagRole`, `iam:TagUser`, `iam:UntagUser`, `iam:CreateRole`, `iam:CreateUser` (a
   *   principal's tenant), and `TagResource`/`UntagResource` of secrets and functions,
   *   `TagQueue`/`UntagQueue` of queues (a target's tenant), by `aws:TagKeys`.
   *
   * `onlyTaggedPrincipals` adds `Null: { aws:PrincipalTag/<apiAuth.tenantTag>: false }` to each, so the
   * statements can go into an SCP (or any policy shared with Sundial's own roles and the
   * deployment roles, which carry no tenant tag: do not tag the stack with it). Call this after
   * the construct is complete (it names what exists when called).
   */
  public tenantGuardrailStatements(options: { readonly onlyTaggedPrincipals?: boolean } = {}): iam.PolicyStatement[] {
    const all = this.node.findAll();
    const functionArns = all.filter((c): c is lambda.Function => c instanceof lambda.Function).flatMap((f) => [f.functionArn, `${f.functionArn}:*`]);
    const tableArns = all.filter((c): c is dynamodb.Table => c instanceof dynamodb.Table).flatMap((t) => [t.tableArn, `${t.tableArn}/*`]);
    const queueArns = all.filter((c): c is sqs.Queue => c instanceof sqs.Queue).map((q) => q.queueArn);
    const roleArns = all.filter((c): c is iam.Role => c instanceof iam.Role).map((r) => r.roleArn);
    const logGroupArns = all.filter((c): c is logs.LogGroup => c instanceof logs.LogGroup).map((g) => g.logGroupArn);
    const principal = options.onlyTaggedPrincipals ? { Null: { [`aws:PrincipalTag/${this.principalTenantTag}`]: 'false' } } : undefined;
    const deny = (sid: string, actions: string[], resources: string[], conditions?: Record<string, unknown>) =>
      new iam.PolicyStatement({ sid, effect: iam.Effect.DENY, actions, resources, conditions: { ...principal, ...conditions } });
    const tagKeys = { 'ForAnyValue:StringEquals': { 'aws:TagKeys': this.tenantTagKeys } };
    return [
      deny('SundialFunctions', ['lambda:*'], functionArns),
      deny('SundialEventSourceMappings', ['lambda:CreateEventSourceMapping', 'lambda:UpdateEventSourceMapping', 'lambda:DeleteEventSourceMapping'], ['*'], {
        ArnLike: { 'lambda:FunctionArn': functionArns },
      }),
      deny('SundialTables', ['dynamodb:*'], tableArns),
      deny('SundialQueues', ['sqs:*'], queueArns),
      deny('SundialEventBus', ['events:*'], [this.eventBus.eventBusArn]),
      deny('SundialLogs', ['logs:*'], logGroupArns),
      // The tenants' buses (eventSources): a tenant may put events on its own bus and do nothing
      // else to any (its rule and its bus policy are the construct's), nor put on another's.
      ...(this.tenantRules.length + Object.keys(this.tenantBuses).length > 0
        ? [
            new iam.PolicyStatement({
              sid: 'SundialTenantBusesAdmin',
              effect: iam.Effect.DENY,
              notActions: ['events:PutEvents'],
              resources: [...Object.values(this.tenantBuses).map((b) => b.eventBusArn), ...this.tenantRules.map((r) => r.ruleArn)],
              conditions: principal,
            }),
            // One statement per bus (Sids by position: tenant ids may differ only in '-' or '_').
            ...Object.entries(this.tenantBuses).map(([tenant, bus], i) =>
              deny(`SundialTenantBus${i}`, ['events:PutEvents'], [bus.eventBusArn], {
                StringNotEquals: { [`aws:PrincipalTag/${this.principalTenantTag}`]: tenant },
              }),
            ),
          ]
        : []),
      ...(this.encryptionKey ? [deny('SundialKey', ['kms:*'], [this.encryptionKey.keyArn])] : []),
      deny('SundialRoles', ['iam:*'], roleArns),
      deny('SundialAssumeRoles', ['sts:AssumeRole', 'sts:TagSession', 'sts:SetSourceIdentity'], [this.tenantAccessRole.roleArn, ...roleArns.filter((a) => a !== this.tenantAccessRole.roleArn)]),
      deny('SundialTenantTagOfPrincipals', ['iam:TagRole', 'iam:UntagRole', 'iam:TagUser', 'iam:UntagUser', 'iam:CreateRole', 'iam:CreateUser'], ['*'], tagKeys),
      deny(
        'SundialTenantTagOfTargets',
        ['secretsmanager:TagResource', 'secretsmanager:UntagResource', 'lambda:TagResource', 'lambda:UntagResource', 'sqs:TagQueue', 'sqs:UntagQueue'],
        ['*'],
        tagKeys,
      ),
    ];
  }

  /**
   * `tenantGuardrailStatements()` as a customer-managed policy of this stack (created once), to
   * attach to every tenant principal (role, user or group): its Deny statements override any
   * Allow the principal has. As a permissions boundary it needs an Allow as well (a boundary
   * allows only what it allows); as an SCP use `tenantGuardrailStatements({ onlyTaggedPrincipals:
   * true })` (docs/tenancy.md has the JSON).
   */
  public tenantGuardrailPolicy(): iam.ManagedPolicy {
    this.guardrailPolicy ??= new iam.ManagedPolicy(this, 'TenantGuardrail', {
      description: 'Sundial: what a tenant principal must never do (invoke or change Sundial, touch its data, roles or the tenant tag)',
      statements: this.tenantGuardrailStatements(),
    });
    return this.guardrailPolicy;
  }

  /**
   * What a handler using the `sundial-idempotency` toolkit needs on the toolkit's tables: exactly
   * the calls the toolkit makes (lib/toolkit.ts), plus encrypt/decrypt on `encryptionKey`.
   * Throws unless `toolkitTables` created them. The handler's own tables are its own to grant.
   */
  public grantToolkit(grantee: iam.IGrantable): iam.Grant {
    const tables = this.toolkitTables;
    if (!tables) throw new Error('grantToolkit: the toolkit tables were not created (set toolkitTables: true)');
    const grants = (Object.keys(TOOLKIT_TABLES) as ToolkitTableName[]).map((name) =>
      tables[name].grant(grantee, ...TOOLKIT_TABLES[name].actions),
    );
    const key = this.grantKey(grantee);
    if (key) grants.push(key);
    return grants.reduce((a, b) => a.combine(b));
  }

  /**
   * Use of `encryptionKey` for reading and writing Sundial's tables and queues: exactly the KMS
   * calls DynamoDB and SQS make on the caller's behalf (SQS producers need GenerateDataKey, all
   * need Decrypt), without the `ReEncrypt*` and `GenerateDataKey*` wildcards of
   * `grantEncryptDecrypt`.
   */
  private grantKey(grantee: iam.IGrantable): iam.Grant | undefined {
    return this.encryptionKey?.grant(grantee, 'kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey');
  }

  /**
   * The most executions all the stack's workers can run at once (`SUNDIAL_WORKER_CAPACITY`):
   * each Lambda pool's event sources (main and low lane) at their maximum concurrency with a
   * full batch of 10, and each ECS pool's most tasks × slots, doubled because a deployment
   * starts the new tasks before the old ones stop (`maxHealthyPercent` 200). A tenant whose
   * running limit is at least this is never gated: the workers cannot exceed it.
   */
  private workerCapacity(poolProps: PoolProps[]): number {
    return poolProps.reduce((sum, p) => sum + this.poolCapacity(p), 0);
  }

  /**
   * The most executions one pool's workers can run at once (`SUNDIAL_POOL_CAPACITY`, pool by
   * pool), counted as for `SUNDIAL_WORKER_CAPACITY`. A tenant whose `tenantTargets` pools (its
   * cell) sum to no more than its running limit is never gated.
   */
  private poolCapacity(p: PoolProps): number {
    const d = resources().defaults;
    if ((p.kind ?? 'lambda') === 'lambda') {
      return ((p.maxConcurrency ?? 10) + (p.lowMaxConcurrency ?? 2)) * LAMBDA_BATCH_SIZE;
    }
    return (p.maxConcurrency ?? 1) * (ECS_MAX_HEALTHY_PERCENT / 100) * (p.slots ?? d.workerSlots);
  }


  /** The value of every setting that is the same on all functions, validated at synth. */
  private settingValues(props: SundialSchedulerProps, poolProps: PoolProps[]): Partial<Record<SettingName, string>> {
    const r = resources();
    const d = r.defaults;
    const tick = props.tick ?? {};
    const w = props.workers ?? {};
    const int = (what: string, v: number, lo: number, hi: number): string => {
      if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${what} must be an integer between ${lo} and ${hi}, got ${v}`);
      return String(v);
    };
    const limits = w.tenantMaxRunning;
    const tenantLimits = [
      ...(limits?.default !== undefined ? [int('workers.tenantMaxRunning.default', limits.default, 1, 1_000_000)] : []),
      ...Object.entries(limits?.tenants ?? {}).map(([t, n]) => {
        if (!/^[^,=\s]+$/.test(t)) throw new Error(`workers.tenantMaxRunning: tenant ${JSON.stringify(t)} is not a tenant id`);
        return `${t}=${int(`workers.tenantMaxRunning.tenants.${t}`, n, 1, 1_000_000)}`;
      }),
    ].join(',');
    const q = props.quotas ?? {};
    const bp = props.backpressure ?? {};
    const claim = props.tenantClaim ?? d.tenantClaim;
    if (claim.length === 0) throw new Error('tenantClaim must not be empty');
    if (props.apiAuth.kind === 'jwt' && claim.startsWith('custom:')) {
      Annotations.of(this).addWarningV2(
        'sundial:tenant-claim-custom',
        `tenantClaim ${claim} is a Cognito custom attribute, which users can change on their own account unless it is read-only for the app client: a user who can write it can switch tenant. Remove it from the app client's write attributes, or set the tenant claim from the user's group with a pre-token-generation trigger (docs/api.md, Tenancy).`,
      );
    }
    return {
      jobsTable: this.jobsTable.tableName,
      executionsTable: this.executionsTable.tableName,
      queuePrefix: this.queuePrefix,
      pools: poolProps.map((p) => p.name).join(','),
      shards: String(this.shards),
      tickInProcessMaxShards: int('tick.inProcessMaxShards', tick.inProcessMaxShards ?? d.tickInProcessMaxShards, 1, 65_536),
      shardsPerScan: int('tick.shardsPerScan', tick.shardsPerScan ?? d.shardsPerScan, 1, 65_536),
      catchUpGlobal: int('tick.catchUpGlobal', tick.catchUpGlobal ?? d.catchUpGlobal, 1, Number.MAX_SAFE_INTEGER),
      catchUpPerTenant: int('tick.catchUpPerTenant', tick.catchUpPerTenant ?? d.catchUpPerTenant, 1, Number.MAX_SAFE_INTEGER),
      fairQueues: String(tick.fairQueues ?? d.fairQueues),
      leaseSecs: int('workers.lease (seconds)', w.lease?.toSeconds() ?? d.leaseSecs, 2, 43_200),
      skewMarginMs: int('workers.skewMargin (ms)', w.skewMargin?.toMilliseconds() ?? d.skewMarginMs, 0, 60_000),
      // Empty = unset: the budget is the job's maxAttempts × timeoutSecs, no tenant limit.
      maxTotalRunSecs: w.maxTotalRun !== undefined ? int('workers.maxTotalRun (seconds)', w.maxTotalRun.toSeconds(), 1, 10_000_000) : '',
      tenantMaxRunning: tenantLimits,
      workerCapacity: String(this.workerCapacity(poolProps)),
      poolCapacity: poolProps.map((p) => `${p.name}=${this.poolCapacity(p)}`).join(','),
      privateTargetCidrs: (props.privateTargetCidrs ?? []).map((c) => {
        // The syntax only (the workers parse it again and fail to start on a bad one).
        if (!/^[0-9A-Fa-f:.]+(\/\d{1,3})?$/.test(c)) throw new Error(`privateTargetCidrs: ${JSON.stringify(c)} is not an IP network`);
        return c;
      }).join(','),
      tenantTargets: this.tenantTargets(props.tenantTargets),
      tenantRoles: this.tenantRoles(props.tenantRoles),
      // Every Sundial function the construct names is `{stackName}-...`; the workers get the
      // exact ARNs too (below).
      ownFunctions: Stack.of(this).formatArn({ service: 'lambda', resource: 'function', resourceName: `${Stack.of(this).stackName}-*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
      accountId: Stack.of(this).account,

      eventBus: this.eventBusName,
      tenantClaim: claim,
      tenancy: tenancyOf(props.apiAuth),
      tenantTag: tenantTagOf(props.apiAuth, d.tenantTag),
      // The web console signs in against the API's JWT issuer with its own public client id.
      consoleIssuer: props.apiAuth.kind === 'jwt' ? props.apiAuth.issuer : '',
      consoleClientId: consoleClientIdOf(props),
      quotaMaxJobs: int('quotas.maxJobs', q.maxJobs ?? d.quotaMaxJobs, 1, 4_294_967_295),
      quotaMinIntervalSecs: int('quotas.minIntervalSecs', q.minIntervalSecs ?? d.quotaMinIntervalSecs, 1, 86_400),
      quotaApiExecutionsPerMinute: int('quotas.apiExecutionsPerMinute', q.apiExecutionsPerMinute ?? d.quotaApiExecutionsPerMinute, 1, 4_294_967_295),
      quotaTriggersPerMinute: int('quotas.triggersPerMinute', q.triggersPerMinute ?? d.quotaTriggersPerMinute, 1, 4_294_967_295),
      quotaExecutionsPerHour: int('quotas.executionsPerHour', q.executionsPerHour ?? d.quotaExecutionsPerHour, 1, 4_294_967_295),
      tenantApiRps: int('quotas.tenantRequestsPerSecond', q.tenantRequestsPerSecond ?? d.tenantApiRps, 0, 4_294_967_295),
      operatorTenants: (props.operatorTenants ?? []).map((t) => {
        if (!/^[A-Za-z0-9_-]{1,64}$/.test(t)) throw new Error(`operatorTenants: ${JSON.stringify(t)} is not a tenant id`);
        return t;
      }).join(','),
      backpressureDeferDepth: int('backpressure.deferDepth', bp.deferDepth ?? d.backpressureDeferDepth, 1, Number.MAX_SAFE_INTEGER),
      backpressureDeferSecs: int('backpressure.deferSecs', bp.deferSecs ?? d.backpressureDeferSecs, 1, 900),
      backpressureSaturatedDepth: int('backpressure.saturatedDepth', bp.saturatedDepth ?? d.backpressureSaturatedDepth, 1, Number.MAX_SAFE_INTEGER),
    };
  }

  /** `SUNDIAL_TENANT_TARGETS`: the allowlists as JSON, validated at synth (empty = unset). */
  private tenantRoles(t: Record<string, string> | undefined): string {
    if (t === undefined) return '';
    for (const [tenant, arn] of Object.entries(t)) {
      if (!/^arn:[a-z-]+:iam::\d{12}:role\/.+$/.test(arn)) throw new Error(`tenantRoles.${tenant}: ${JSON.stringify(arn)} is not an IAM role ARN`);
    }
    return JSON.stringify(t);
  }

  private tenantTargets(t: Record<string, TargetAllow> | undefined): string {
    if (t === undefined) return '';
    for (const [tenant, allow] of Object.entries(t)) {
      for (const [kind, globs] of Object.entries(allow)) {
        // The kinds of functions/model/src/outbound/allow.rs (`TargetAllow`), which refuses others.
        const kinds = ['lambda', 'sqs', 'http', 'sns', 'stepFunctions', 'ecsTaskDefinitions', 'ecsClusters', 'eventBridge', 'secrets', 'inProcess', 'pools', 'cidrs'];
        if (!kinds.includes(kind)) throw new Error(`tenantTargets.${tenant}: unknown kind ${kind} (${kinds.join(', ')})`);
        if (!Array.isArray(globs) || globs.some((g) => typeof g !== 'string' || g.length === 0)) {
          throw new Error(`tenantTargets.${tenant}.${kind} must be a list of non-empty globs`);
        }
        // Matched against ARNs, as the Rust side refuses otherwise when it reads the setting.
        const arnKinds = ['sns', 'stepFunctions', 'ecsTaskDefinitions', 'ecsClusters', 'eventBridge', 'secrets'];
        if (arnKinds.includes(kind) && globs.some((g: string) => g !== '*' && !g.startsWith('arn:'))) {
          throw new Error(`tenantTargets.${tenant}.${kind}: globs match ARNs, so each must be '*' or start with arn: (got ${JSON.stringify(globs)})`);
        }
        if (kind === 'sqs' && globs.some((g) => /^https?:|\//.test(g))) {
          throw new Error(`tenantTargets.${tenant}.sqs: globs match queue ARNs (arn:aws:sqs:<region>:<account>:<name>), not URLs`);
        }
        if (kind === 'cidrs' && globs.some((c) => !/^[0-9A-Fa-f:.]+(\/\d{1,3})?$/.test(c))) {
          throw new Error(`tenantTargets.${tenant}.cidrs: ${JSON.stringify(globs)} holds something that is not an IP network`);
        }
      }
    }
    return JSON.stringify(t);
  }

  /** The ECS poll loop's settings of one pool. */
  private ecsSettings(p: PoolProps): Partial<Record<SettingName, string>> {
    const d = resources().defaults;
    const slots = p.slots ?? d.workerSlots;
    if (!Number.isInteger(slots) || slots < 1 || slots > 1000) throw new Error(`pool ${p.name}: slots must be an integer between 1 and 1000`);
    const grace = p.shutdownGrace?.toSeconds() ?? d.shutdownGraceSecs;
    if (!Number.isInteger(grace) || grace < 0 || grace >= ECS_STOP_TIMEOUT.toSeconds()) {
      throw new Error(`pool ${p.name}: shutdownGrace must be whole seconds below the ${ECS_STOP_TIMEOUT.toSeconds()} s stop timeout`);
    }
    return { workerSlots: String(slots), shutdownGraceSecs: String(grace) };
  }

  private table(id: string, def: TableDef, namePrefix: string | undefined, overrides: TableOverrides): dynamodb.Table {
    const table = new dynamodb.Table(this, id, {
      ...this.tableDefaults(),
      ...overrides,
      ...this.tableEncryption(),
      tableName: namePrefix !== undefined ? `${namePrefix}${def.defaultName}` : undefined,
      partitionKey: attr(def.partitionKey),
      sortKey: attr(def.sortKey),
      timeToLiveAttribute: def.ttlAttribute,
    });
    for (const ix of def.indexes) {
      table.addGlobalSecondaryIndex({
        indexName: ix.name,
        partitionKey: attr(ix.partitionKey),
        sortKey: attr(ix.sortKey),
        projectionType: ix.projection === 'ALL' ? dynamodb.ProjectionType.ALL : dynamodb.ProjectionType.KEYS_ONLY,
        ...(overrides.billingMode === dynamodb.BillingMode.PROVISIONED
          ? { readCapacity: overrides.readCapacity, writeCapacity: overrides.writeCapacity }
          : {}),
      });
    }
    return table;
  }

  /**
   * The provisioned-capacity planner (`{"plan": {}}` on the tick function, once a minute): it
   * counts the coming minutes' fires in the `due` index (the tick's Query grant) and sets the
   * units of the two tables and their indexes ahead of them (docs/capacity.md). Only granted
   * when the tables are provisioned: an on-demand stack has no UpdateTable anywhere.
   */
  private planner(fn: lambda.Function): void {
    new events.Rule(this, 'PlanRule', {
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
    allow(fn, ['dynamodb:DescribeTable', 'dynamodb:UpdateTable'], [this.jobsTable.tableArn, this.executionsTable.tableArn]);
  }

  /** What every table gets unless `tableOverrides` says otherwise. */
  private tableDefaults(): Partial<dynamodb.TableProps> {
    return {
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: this.retain,
      removalPolicy: this.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    };
  }

  private tableEncryption(): Pick<dynamodb.TableProps, 'encryption' | 'encryptionKey'> {
    return this.encryptionKey
      ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: this.encryptionKey }
      : {};
  }

  /** The handler toolkit's tables (lib/toolkit.ts): one string hash key each, TTL on markers. */
  private toolkit(namePrefix: string | undefined, overrides: TableOverrides): Record<ToolkitTableName, dynamodb.Table> {
    const make = (name: ToolkitTableName, id: string): dynamodb.Table => {
      const def = TOOLKIT_TABLES[name];
      return new dynamodb.Table(this, id, {
        ...this.tableDefaults(),
        ...overrides,
        ...this.tableEncryption(),
        tableName: namePrefix !== undefined ? `${namePrefix}${def.suffix}` : undefined,
        partitionKey: { name: def.partitionKey, type: dynamodb.AttributeType.STRING },
        timeToLiveAttribute: def.ttlAttribute,
      });
    };
    return { inbox: make('inbox', 'ToolkitInbox'), outbound: make('outbound', 'ToolkitOutbound'), markers: make('markers', 'ToolkitMarkers') };
  }

  /** A log group with Sundial's retention, removal policy and key. */
  private logGroup(id: string): logs.LogGroup {
    return new logs.LogGroup(this, id, {
      retention: this.logRetention,
      removalPolicy: this.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      encryptionKey: this.encryptionKey,
    });
  }

  /**
   * Lets CloudWatch Logs use the key for Sundial's own log groups (the statement AWS documents for
   * encrypted log groups, with the encryption context narrowed from every log group of the
   * account to these). The groups' ARNs cannot be named (each group uses the key, so the key
   * policy would depend on them in a cycle); their names can: CloudFormation names each
   * `{stack name}-{logical id}-{suffix}`, so the logical id of every LogGroup of this construct,
   * known at synth, gives one pattern each. Only a key defined in this app can be changed.
   */
  private allowLogsToUseKey(key: kms.IKey): void {
    const stack = Stack.of(this);
    const groups = Lazy.list({
      produce: () =>
        this.node
          .findAll()
          .filter((c): c is logs.LogGroup => c instanceof logs.LogGroup)
          .map((g) => {
            const name = `${stack.stackName}-${stack.getLogicalId(g.node.defaultChild as logs.CfnLogGroup)}-*`;
            return `arn:${stack.partition}:logs:${stack.region}:${stack.account}:log-group:${name}`;
          }),
    });
    const added = key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
        actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
        resources: ['*'],
        conditions: { ArnLike: { 'kms:EncryptionContext:aws:logs:arn': groups } },
      }),
    );
    if (!added.statementAdded) {
      Annotations.of(this).addWarningV2(
        'sundial:kms-logs-policy',
        'encryptionKey is imported: its key policy must let the CloudWatch Logs service principal (logs.<region>.amazonaws.com) use it, or the log groups fail to create',
      );
    }
  }

  /** The staged code of one binary (prebuilt assets only). */
  private assetCode(dir: string, name: Binary): lambda.Code {
    const bin = path.join(dir, name);
    const bootstrap = path.join(bin, 'bootstrap');
    if (!fs.existsSync(bootstrap)) {
      throw new Error(
        `${bootstrap} is missing: build the functions with infra/scripts/build-assets.sh or point assetsDir at cargo lambda's output`,
      );
    }
    if (isPlaceholder(bootstrap)) {
      Annotations.of(this).addWarningV2(
        `sundial:placeholder-${name}`,
        `${bootstrap} is a placeholder: the template synthesizes but the function will not run. Build with infra/scripts/build-assets.sh.`,
      );
    }
    return lambda.Code.fromAsset(bin);
  }

  /**
   * One Rust function: its own role (CloudWatch Logs write on its own log group, the key if any;
   * the callers add the calls it makes), its own log group, JSON logs at `logLevel`, arm64 on
   * provided.al2023, from prebuilt assets or built from source by cargo-lambda-cdk.
   */
  private rustFunction(
    id: string,
    binary: 'tick' | 'worker' | 'api' | 'ingest',
    overrides: FunctionOverrides | undefined,
    opts: Pick<lambda.FunctionProps, 'timeout' | 'memorySize' | 'environment' | 'description' | 'retryAttempts' | 'reservedConcurrentExecutions' | 'deadLetterQueue'>,
  ): lambda.Function {
    const logGroup = this.logGroup(`${id}Logs`);
    // Our own role instead of the default one with the AWSLambdaBasicExecutionRole managed
    // policy: that policy allows writing to every log group of the account.
    const role = new iam.Role(this, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Sundial ${id} function`,
    });
    logGroup.grantWrite(role);
    this.grantKey(role);
    const o: FunctionOverrides = { ...this.overrides.all, ...overrides };
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
    if (this.tracing) {
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
      logGroup,
      // sundial_core::telemetry logs through the runtime's helper, which follows these.
      loggingFormat: lambda.LoggingFormat.JSON,
      applicationLogLevelV2: this.logLevel,
      tracing: this.tracing ? lambda.Tracing.ACTIVE : undefined,
    };
    const code = this.codeSource;
    if (code.kind === 'source') {
      return new RustFunction(this, id, {
        ...common,
        manifestPath: code.manifestPath,
        binaryName: binary,
        bundling: { ...code.bundling, architecture: lambda.Architecture.ARM_64 },
      });
    }
    return new lambda.Function(this, id, {
      ...common,
      code: this.assetCode(code.dir, binary),
      handler: 'bootstrap',
      runtime: lambda.Runtime.PROVIDED_AL2023,
    });
  }

  private ecsPool(
    p: PoolProps,
    queue: sqs.Queue,
    dlq: sqs.Queue,
    runTimeout: Duration,
    env: Record<string, string>,
    props: SundialSchedulerProps,
  ): Omit<SundialPool, 'lowQueue'> {
    // One cluster (and, unless a VPC is given, one public-subnet VPC without NAT) for all ECS pools.
    const publicOnly = props.vpc === undefined;
    if (!this.ecsCluster) {
      let vpc = props.vpc;
      if (!vpc) {
        const own = new ec2.Vpc(this, 'Vpc', {
          maxAzs: 2,
          natGateways: 0,
          subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }],
        });
        // Rejected traffic only: the workers make outbound calls all day, and accepted flows
        // would cost more than they tell; rejections are what an investigation needs.
        own.addFlowLog('FlowLog', {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(this.logGroup('VpcFlowLogs')),
          trafficType: ec2.FlowLogTrafficType.REJECT,
        });
        vpc = own;
      }
      this.ecsCluster = new ecs.Cluster(this, 'Cluster', { vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED });
    }
    const cluster = this.ecsCluster;
    const taskDef = new ecs.FargateTaskDefinition(this, `WorkerTask-${p.name}`, {
      cpu: p.cpu ?? 256,
      memoryLimitMiB: p.memoryLimitMiB ?? 512,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.ARM64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
    });
    const image = props.ecsImage ?? this.ecsImageFromAssets(p.name);
    const logGroup = this.logGroup(`WorkerEcs-${p.name}Logs`);
    taskDef.addContainer('worker', {
      image,
      // The variables Lambda's logging controls set, read by the same telemetry setup.
      environment: { AWS_LAMBDA_LOG_FORMAT: 'JSON', AWS_LAMBDA_LOG_LEVEL: this.logLevel, ...env },
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: p.name, logGroup }),
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
    this.grantKey(taskDef.taskRole);
    const minTasks = p.minTasks ?? 1;
    const maxTasks = p.maxConcurrency ?? 1;
    if (!Number.isInteger(maxTasks) || maxTasks < minTasks) {
      throw new Error(`pool ${p.name}: maxConcurrency (max tasks) must be an integer >= minTasks`);
    }
    const service = new ecs.FargateService(this, `WorkerService-${p.name}`, {
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

  /** The worker-ecs image built from the assets directory at deploy time. */
  private ecsImageFromAssets(pool: string): ecs.ContainerImage {
    if (this.codeSource.kind !== 'assets') {
      throw new Error(
        `pool ${pool}: an ECS pool runs the worker-ecs container, which SundialCode.fromSource does not build; give ecsImage (e.g. ContainerImage.fromAsset of the directory infra/scripts/build-assets.sh writes to worker-ecs/)`,
      );
    }
    return ecs.ContainerImage.fromAsset(path.join(this.codeSource.dir, 'worker-ecs'), { platform: Platform.LINUX_ARM64 });
  }

  /**
   * The worker's grants, the same for a Lambda or an ECS worker: Sundial's own tables, queues and
   * bus. Nothing on a tenant's target: those are the tenant access role's (`tenantAccess`).
   */
  private grantWorker(role: iam.IRole, queue: sqs.IQueue, dlq: sqs.IQueue): void {
    allow(
      role,
      ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
      [this.executionsTable.tableArn],
    );
    // Per-job concurrency counters live on the job item; PutItem: the operations-log entry of a
    // fire the worker starts past its start deadline (with a FireMissed event on the bus), and a
    // fireOnce batch's cover at its first claim; Query: a fire's first claim reads its job with
    // the batch covers beside it (`begins_with(sk, DEF)`, docs/execution.md).
    allow(role, ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:Query'], [this.jobsTable.tableArn]);
    allow(role, ['events:PutEvents'], [this.eventBus.eventBusArn]);
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
   * The tenant access role (issue 28; docs/tenancy.md). Workers assume it with the session tag
   * `sundial-tenant=<tenant>` of the execution they run and call its target only through that
   * session, so AWS itself refuses a secret, function or queue tagged for another tenant (or not
   * tagged at all): attribute-based access control, every statement conditioned on
   * `aws:ResourceTag/sundial-tenant` = `${aws:PrincipalTag/sundial-tenant}`. The trust policy
   * admits the stack's worker roles only, and only with exactly that session tag. No
   * `allowedTarget*Arns`: a role with no statement (deny by default).
   */
  private tenantAccess(props: SundialSchedulerProps): iam.Role {
    // The workers call targets as the tenant; the reconciler delivers the outcome notifications
    // a worker left behind (docs/outcomes.md), as the tenant too.
    const workers = [...this.pools.map((p) => p.role), this.reconcileFunction.role!];
    const role = new iam.Role(this, 'TenantAccessRole', {
      description: 'Sundial tenant access: workers call job targets, and the reconciler delivers outcome notifications, as the tenant (session tag sundial-tenant)',
      assumedBy: new iam.SessionTagsPrincipal(
        new iam.PrincipalWithConditions(new iam.CompositePrincipal(...workers.map((r) => new iam.ArnPrincipal(r.roleArn))), {
          Null: { [`aws:RequestTag/${TENANT_TAG_KEY}`]: 'false' },
          'ForAllValues:StringEquals': { 'aws:TagKeys': [TENANT_TAG_KEY] },
        }),
      ),
      maxSessionDuration: Duration.hours(1),
    });
    for (const w of workers) allow(w, ['sts:AssumeRole', 'sts:TagSession'], [role.roleArn]);
    const tenantOwned = { StringEquals: { [`aws:ResourceTag/${TENANT_TAG_KEY}`]: `\${aws:PrincipalTag/${TENANT_TAG_KEY}}` } };
    const grant = (actions: string[], resources: string[]) => {
      if (resources.length === 0) return;
      role.addToPolicy(new iam.PolicyStatement({ actions, resources, conditions: tenantOwned }));
    };
    const fns = props.allowedTargetFunctionArns ?? [];
    grant(['lambda:InvokeFunction', 'lambda:GetFunction'], fns.flatMap((a) => [a, `${a}:*`]));
    for (const a of fns) {
      acknowledge(
        role,
        `AwsSolutions-IAM5[Resource::${a}:*]`,
        'Versions and aliases of an allowed target function (allowedTargetFunctionArns): a job may name a qualified ARN of exactly that function; the tenant tag condition applies to them too.',
      );
    }
    grant(['sqs:SendMessage', 'sqs:ListQueueTags'], props.allowedTargetQueueArns ?? []);
    grant(['events:PutEvents', 'events:ListTagsForResource'], props.allowedTargetEventBusArns ?? []);
    grant(['sns:Publish', 'sns:ListTagsForResource'], props.allowedTargetTopicArns ?? []);
    const machines = props.allowedTargetStateMachineArns ?? [];
    grant(['states:StartExecution', 'states:ListTagsForResource'], machines);
    grant(['states:DescribeExecution', 'states:StopExecution'], machines.map(executionsOf));
    for (const a of machines) {
      acknowledge(
        role,
        `AwsSolutions-IAM5[Resource::${executionsOf(a)}]`,
        'Executions of an allowed target state machine (allowedTargetStateMachineArns): their names are made per fire; the tenant tag condition applies to them too.',
      );
    }
    this.grantEcsTargets(role, props, tenantOwned);
    grant(['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'], props.allowedTargetSecretArns ?? []);
    return role;
  }

  /**
   * The `ecs` targets' grants on the tenant access role (docs/tenancy.md): exactly what
   * functions/core/src/execution/target/ecs.rs calls, and what `RunTask` authorizes besides
   * itself, as the Service Authorization Reference for Amazon ECS lists them:
   * - `ecs:RunTask` on the task definitions (resource type task-definition, whose ARN always
   *   names a revision: a family ARN run as is resolves to its latest), their `sundial-tenant` tag
   *   the session's, `ecs:cluster` an allowed cluster;
   * - `ecs:TagResource` on the new task, only within `RunTask` (`ecs:CreateAction`): the task's
   *   tags, propagated from its task definition (`propagateTags: TASK_DEFINITION`), are applied at
   *   creation, which ECS authorizes as `ecs:TagResource`;
   * - `iam:PassRole` on the task definitions' task and execution roles, to `ecs-tasks.amazonaws.com`;
   * - `ecs:DescribeTasks`, `ecs:StopTask` on the clusters' tasks (resource type task,
   *   `task/<cluster name>/<id>`), their propagated `sundial-tenant` tag the session's;
   * - `ecs:ListTasks` (adopting a takeover's task): its resource type is container-instance,
   *   which a Fargate task has none of, so `*` with `ecs:cluster` an allowed cluster;
   * - `ecs:ListTagsForResource` (the ownership check reads the task definition's tag): on the
   *   families' revisions (resource type task-definition, `task-definition/<family>:<revision>`;
   *   a target names one revision), their `sundial-tenant` tag the session's (the reference lists
   *   `aws:ResourceTag/${TagKey}` for it). Not `ecs:DescribeTaskDefinition`, which has no
   *   resource type: it would need `*`, every task definition of the account.
   * No statement without both clusters and task definitions (deny by default).
   */
  private grantEcsTargets(role: iam.Role, props: SundialSchedulerProps, tenantOwned: Record<string, Record<string, string>>): void {
    const clusters = props.allowedTargetEcsClusterArns ?? [];
    const families = props.allowedTargetTaskDefinitionArns ?? [];
    const passRoles = props.allowedTargetEcsPassRoleArns ?? [];
    if (clusters.length === 0 && families.length === 0) {
      if (passRoles.length > 0) throw new Error('allowedTargetEcsPassRoleArns: give allowedTargetEcsClusterArns and allowedTargetTaskDefinitionArns too (the roles are passed by RunTask only)');
      return;
    }
    if (clusters.length === 0 || families.length === 0) {
      throw new Error('allowedTargetEcsClusterArns and allowedTargetTaskDefinitionArns go together: an ecs target runs a task definition on a cluster, and needs both');
    }
    clusters.forEach((a) => checkEcsArn(a, 'cluster', 'allowedTargetEcsClusterArns'));
    families.forEach((a) => checkEcsArn(a, 'task-definition', 'allowedTargetTaskDefinitionArns'));
    const inClusters = { ArnLike: { 'ecs:cluster': clusters } };
    const tasks = clusters.map(tasksOf);
    const revisions = families.map((a) => `${a}:*`);
    role.addToPolicy(
      new iam.PolicyStatement({ actions: ['ecs:RunTask'], resources: [...families, ...revisions], conditions: { ...tenantOwned, ...inClusters } }),
    );
    role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:DescribeTasks', 'ecs:StopTask'], resources: tasks, conditions: tenantOwned }));
    role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:TagResource'], resources: tasks, conditions: { StringEquals: { 'ecs:CreateAction': 'RunTask' } } }));
    role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:ListTasks'], resources: ['*'], conditions: inClusters }));
    role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:ListTagsForResource'], resources: revisions, conditions: tenantOwned }));
    if (passRoles.length > 0) {
      role.addToPolicy(
        new iam.PolicyStatement({ actions: ['iam:PassRole'], resources: passRoles, conditions: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } } }),
      );
    }
    acknowledge(
      role,
      'AwsSolutions-IAM5[Resource::*]',
      'ecs target (allowedTargetEcsClusterArns): ecs:ListTasks only, which is authorized on container instances, which Fargate tasks have none of; it is limited to the allowed clusters by ecs:cluster.',
    );
    for (const a of revisions) {
      acknowledge(
        role,
        `AwsSolutions-IAM5[Resource::${a}]`,
        'Revisions of an allowed task definition family (allowedTargetTaskDefinitionArns): every revision ARN names one, and the family is allowed at each; RunTask (tenant tag and ecs:cluster conditions) and ListTagsForResource (tenant tag condition) on them.',
      );
    }
    for (const a of tasks) {
      acknowledge(
        role,
        `AwsSolutions-IAM5[Resource::${a}]`,
        'Tasks of an allowed cluster (allowedTargetEcsClusterArns): their ids are made by RunTask; DescribeTasks and StopTask need the tenant tag the task got from its task definition, TagResource is allowed only within RunTask (ecs:CreateAction).',
      );
    }
  }

  /**
   * `SUNDIAL_OWN_FUNCTIONS`: globs of the stack's own functions, which the workers refuse as job
   * targets. The tick, scan, reconciler and api by name (and their versions and aliases); the
   * workers, which cannot name each other (nor themselves) without a dependency cycle, by the
   * prefix CloudFormation gives the functions it names, `{stackName}-`.
   */
  private ownFunctionGlobs(overrides: FunctionOverridesProps): string {
    const stack = Stack.of(this);
    const arnOf = (name: string) => stack.formatArn({ service: 'lambda', resource: 'function', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    const named = [this.tickFunction, this.scanFunction, this.reconcileFunction, this.apiFunction].flatMap((f) => [
      arnOf(f.functionName),
      `${arnOf(f.functionName)}:*`,
    ]);
    // A worker given its own name (functionOverrides.workers.functionName) is named as such.
    const workerName = overrides.workers?.functionName ?? overrides.all?.functionName;
    const workers = workerName !== undefined ? [arnOf(workerName), `${arnOf(workerName)}:*`] : [];
    return [...named, arnOf(`${stack.stackName}-*`), ...workers].join(',');
  }

  private alarm(id: string, props: cw.AlarmProps): cw.Alarm {
    const a = new cw.Alarm(this, id, { treatMissingData: cw.TreatMissingData.NOT_BREACHING, ...props });
    if (this.alarmAction) {
      a.addAlarmAction(this.alarmAction);
      a.addOkAction(this.alarmAction);
    }
    this.alarms.push(a);
    return a;
  }

  private observe(lagThresholdMs: number, poolProps: PoolProps[]): cw.Dashboard {
    const minute = Duration.minutes(1);
    const emf = (metricName: string, pool: string, statistic: string, label?: string): cw.Metric =>
      new cw.Metric({
        namespace: METRIC_NAMESPACE,
        metricName,
        dimensionsMap: { [POOL_DIMENSION]: pool },
        statistic,
        period: minute,
        label,
      });

    this.alarm('TickErrors', {
      alarmDescription: 'Sundial tick failed: fires are not being queued',
      metric: this.tickFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    });
    this.alarm('TickDuration', {
      alarmDescription: 'Sundial tick is close to its timeout',
      metric: this.tickFunction.metricDuration({ period: minute, statistic: 'Maximum' }),
      threshold: TICK_TIMEOUT.toMilliseconds() * 0.8,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
    });
    this.alarm('ScanErrors', {
      alarmDescription: 'Sundial scan failed: some shards are behind',
      metric: this.scanFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    });

    this.alarm('ShardsFailed', {
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

    this.alarm('InvalidJobs', {
      alarmDescription:
        'Sundial: job items in the due index that this version cannot read were skipped (a newer writer, a hand edit). Their jobs do not fire; see the scan logs for the keys',
      metric: new cw.Metric({ namespace: METRIC_NAMESPACE, metricName: Metrics.invalidJobs, statistic: 'Sum', period: Duration.minutes(5) }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    });
    this.alarm('ExecutionsResent', {
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
    this.alarm('FiresMissed', {
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
    this.alarm('ResourceUndefined', {
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
    this.alarm('ReconcileErrors', {
      alarmDescription: 'Sundial reconciler failed: stranded executions are not being repaired',
      metric: this.reconcileFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    });

    const dashboard = new cw.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'Tick and scan duration (max)',
        left: [
          this.tickFunction.metricDuration({ period: minute, statistic: 'Maximum' }),
          this.scanFunction.metricDuration({ period: minute, statistic: 'Maximum' }),
        ],
        width: 12,
      }),
      new cw.GraphWidget({
        title: 'Tick and scan errors',
        left: [this.tickFunction.metricErrors({ period: minute }), this.scanFunction.metricErrors({ period: minute })],
        width: 12,
      }),
      new cw.GraphWidget({
        title: 'Resource limits: holders (max) and waits, per resource',
        left: [
          new cw.MathExpression({
            expression: `SEARCH('{${METRIC_NAMESPACE},${RESOURCE_DIMENSION}} MetricName="${Metrics.resourceHolders}"', 'Maximum', 60)`,
            label: 'holders',
            period: minute,
          }),
        ],
        right: [
          new cw.MathExpression({
            expression: `SEARCH('{${METRIC_NAMESPACE},${RESOURCE_DIMENSION}} MetricName="${Metrics.resourceWaits}"', 'Sum', 60)`,
            label: 'waits',
            period: minute,
          }),
        ],
        width: 24,
      }),
    );

    for (const pool of this.pools) {
      const p = poolProps.find((x) => x.name === pool.name)!;
      const name = pool.name;
      this.alarm(`Pool-${name}-DlqDepth`, {
        alarmDescription: `Sundial pool ${name}: messages in the dead-letter queue`,
        metric: pool.dlq.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum' }),
        threshold: 0,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
      });
      this.alarm(`Pool-${name}-OldestMessage`, {
        alarmDescription: `Sundial pool ${name}: workers are not keeping up`,
        metric: pool.queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum' }),
        threshold: (p.queueAgeAlarmThreshold ?? Duration.minutes(5)).toSeconds(),
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
      });
      // Back-pressure (docs/priority.md): low work starved for long, or new work refused.
      this.alarm(`Pool-${name}-LowLaneOldestMessage`, {
        alarmDescription: `Sundial pool ${name}: low-priority work has waited too long (the pool is saturated with higher-priority work)`,
        metric: pool.lowQueue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum' }),
        threshold: (p.lowLaneAgeAlarmThreshold ?? Duration.minutes(30)).toSeconds(),
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
      });
      this.alarm(`Pool-${name}-Saturated`, {
        alarmDescription: `Sundial pool ${name}: the API refused new work because a lane was saturated (429 saturated)`,
        metric: emf(Metrics.saturatedRefusals, name, 'Sum'),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
      this.alarm(`Pool-${name}-ScheduleLag`, {
        alarmDescription: `Sundial pool ${name}: p99 schedule lag above ${lagThresholdMs} ms`,
        metric: emf(Metrics.scheduleLag, name, 'p99'),
        threshold: lagThresholdMs,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
      });

      // The precision SLO (DESIGN §6): p99 of worker start − scheduled second.
      this.alarm(`Pool-${name}-StartLag`, {
        alarmDescription: `Sundial pool ${name}: p99 start lag (worker start − scheduled) above ${lagThresholdMs} ms`,
        metric: emf(Metrics.startLag, name, 'p99'),
        threshold: lagThresholdMs,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
      });

      dashboard.addWidgets(
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
          right: [pool.queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum', label: 'oldest message (s)' })],
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
          right: [pool.dlq.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum', label: 'DLQ depth' })],
          width: 6,
        }),
      );
    }
    return dashboard;
  }
}

/** `SUNDIAL_TENANCY` for an `ApiAuth`. */
export function tenancyOf(auth: ApiAuth): 'jwt' | 'iam-principal-tag' | 'iam-account' {
  if (auth.kind === 'jwt') return 'jwt';
  return auth.tenancy === 'account' ? 'iam-account' : 'iam-principal-tag';
}

function consoleClientIdOf(props: SundialSchedulerProps): string {
  const id = props.consoleClientId ?? '';
  if (id !== '' && props.apiAuth.kind !== 'jwt') throw new Error('consoleClientId: the console signs in with OIDC, which needs apiAuth jwt');
  if (!/^[\x21-\x7e]{0,256}$/.test(id)) throw new Error(`consoleClientId ${JSON.stringify(id)} is not a client id`);
  return id;
}

function tenantTagOf(auth: ApiAuth, fallback: string): string {
  const tag = auth.kind === 'iam' ? auth.tenantTag ?? fallback : fallback;
  // IAM tag keys: 1-128 characters of letters, digits, spaces and _.:/=+-@
  if (!/^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,128}$/u.test(tag)) throw new Error(`apiAuth.tenantTag ${JSON.stringify(tag)} is not a valid IAM tag key`);
  return tag;
}

/** The executions of a state machine (ARN or ARN glob): `…:stateMachine:m` → `…:execution:m:*`. */
function executionsOf(machineArn: string): string {
  return `${machineArn.replace(':stateMachine:', ':execution:')}:*`;
}

/**
 * Refuses an ECS cluster ARN, or task definition family ARN, that is not one (globs allowed):
 * the grants derive other ARNs from it. A task definition with a revision is refused: the
 * family is granted at every revision. A token (e.g. `cluster.clusterArn`, or a family ARN made
 * with `Stack.formatArn`) is taken as the ARN it stands for.
 */
function checkEcsArn(arn: string, kind: 'cluster' | 'task-definition', prop: string): void {
  if (Token.isUnresolved(arn)) return;
  if (!new RegExp(`^arn:[^:]+:ecs:[^:]*:[^:]*:${kind}/[^:/]+$`).test(arn)) {
    const shape = kind === 'cluster' ? 'cluster/<name>' : 'task-definition/<family>, without a revision';
    throw new Error(`${prop}: ${JSON.stringify(arn)} is not an ECS ${kind} ARN or ARN glob (arn:<partition>:ecs:<region>:<account>:${shape})`);
  }
}

/** The tasks of a cluster (ARN or ARN glob): `…:cluster/c` → `…:task/c/*` (ECS's long task ARNs). */
function tasksOf(clusterArn: string): string {
  if (Token.isUnresolved(clusterArn)) {
    const c = Arn.split(clusterArn, ArnFormat.SLASH_RESOURCE_NAME);
    return Arn.format({ ...c, resource: 'task', resourceName: `${c.resourceName}/*` });
  }
  return `${clusterArn.replace(':cluster/', ':task/')}/*`;
}

/**
 * Records an accepted cdk-nag finding on `scope` (and everything under it) with the reason, via
 * CDK's own Validations API: the construct needs no dependency on cdk-nag, and any policy
 * validation plugin reads the same acknowledgements (test/nag.test.ts runs AwsSolutionsChecks).
 */
function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/** Throws when an override sets a prop the construct must own (TypeScript users get a type error first). */
function checkOverrides(what: string, overrides: object | undefined, protectedKeys: readonly string[]): void {
  for (const k of Object.keys(overrides ?? {})) {
    if (protectedKeys.includes(k)) throw new Error(`${what}.${k} cannot be overridden (the construct owns it; see the type's doc comment)`);
  }
}

function attr(k: { name: string; type: string }): dynamodb.Attribute {
  return {
    name: k.name,
    type: k.type === 'S' ? dynamodb.AttributeType.STRING : k.type === 'N' ? dynamodb.AttributeType.NUMBER : dynamodb.AttributeType.BINARY,
  };
}

function allow(principal: iam.IGrantable, actions: string[], resourceArns: string[]): void {
  principal.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions, resources: resourceArns }));
}

function indexArn(table: dynamodb.ITable, index: string): string {
  return `${table.tableArn}/index/${index}`;
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

