/**
 * The construct's props, and what it reports back per pool (`SundialPool`): the public types of
 * `SundialScheduler`, re-exported by ../sundial-scheduler.
 */
import { Duration } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { SundialCode } from '../code';

/** How a pool's executions are run. */
export type WorkerKind = 'lambda' | 'ecs';

/** One worker pool: a queue, its DLQ and the workers that drain it. */
export interface PoolProps {
  /** Pool name; becomes part of the queue names. 1-40 of `[A-Za-z0-9_-]`. */
  readonly name: string;
  /** `lambda` (default): a worker Lambda per pool. `ecs`: a Fargate service for long runs. */
  readonly kind?: WorkerKind;
  /**
   * Lambda pools: the SQS event source's maximum concurrency (2-1000, default 10).
   * ECS pools: the maximum number of tasks (default 1).
   */
  readonly maxConcurrency?: number;
  /**
   * How long one worker invocation may run. Lambda pools: the function timeout (at most 15
   * minutes, default 2 minutes). ECS pools: the longest run (default 15 minutes, at most 12 h).
   * The queue's visibility timeout is set above it.
   */
  readonly runTimeout?: Duration;
  /** Lambda pools: memory in MiB (default 256). */
  readonly memorySize?: number;
  /**
   * Lambda pools: how long the SQS event source gathers messages before invoking (0-300 s,
   * default 0). 0 keeps the start lag low (docs/performance.md, "Targets": p99 ≤ 1 s); a pool whose
   * fires trickle in fewer than 10 a second pays up to one invocation per run. A window of a few
   * seconds fills batches of 10 (0.1 invocations a run, the cost budget) at the price of that much
   * lag.
   */
  readonly batchingWindow?: Duration;
  /** ECS pools: minimum number of tasks (default 1). */
  readonly minTasks?: number;
  /** ECS pools: task CPU units (default 256) and memory in MiB (default 512). */
  readonly cpu?: number;
  readonly memoryLimitMiB?: number;
  /** Alarm when the oldest message in the pool queue is older than this (default 5 minutes). */
  readonly queueAgeAlarmThreshold?: Duration;
  /**
   * Lambda pools: the maximum concurrency of the low lane's event source (2-1000, default 2):
   * low-priority and backfilled executions never take more than this many worker invocations
   * (docs/priority.md). ECS workers read the low lane only when the main queue is empty.
   */
  readonly lowMaxConcurrency?: number;
  /**
   * Lambda pools: the maximum concurrency of the event source on the pool's outcome-notification
   * queue `{prefix}{pool}-notify` (2-1000, default 2): how many worker invocations at once POST
   * outcome notifications to tenants' receivers (docs/outcomes.md, "HTTPS notifications"): a
   * burst of notifications, or slow receivers, never hold more invocations than this. ECS
   * workers long-poll the notify queue themselves.
   */
  readonly notifyConcurrency?: number;
  /** Alarm when the oldest message in the pool's low lane is older than this (default 30 minutes): low work is starved. */
  readonly lowLaneAgeAlarmThreshold?: Duration;
  /** ECS pools: executions one task runs at once, 1-1000 (`SUNDIAL_WORKER_SLOTS`, default 10: one full receive of 10 messages per round). */
  readonly slots?: number;
  /**
   * ECS pools: how long a stopping task lets running executions finish before it releases them
   * (`SUNDIAL_SHUTDOWN_GRACE_SECS`, default 25 s; below the container's 120 s stop timeout).
   */
  readonly shutdownGrace?: Duration;
}

/**
 * Back-pressure (docs/priority.md): lane depths (visible messages) at which the tick defers
 * low-priority fires and the API refuses new work. Defaults: resources.json `defaults`.
 */
export interface BackpressureProps {
  /** A pool's main queue or low lane this deep defers its low-priority fires (`SUNDIAL_BACKPRESSURE_DEFER_DEPTH`, default 1000). */
  readonly deferDepth?: number;
  /** How long a deferred fire's message is held, 1-900 s; also the 429's Retry-After (`SUNDIAL_BACKPRESSURE_DEFER_SECS`, default 60). */
  readonly deferSecs?: number;
  /** A lane this deep answers create, trigger-now and backfill of work for it with 429 `saturated` (`SUNDIAL_BACKPRESSURE_SATURATED_DEPTH`, default 20000). */
  readonly saturatedDepth?: number;
}

/** The tick's tunables (the tick and scan functions). Defaults: resources.json `defaults`. */
export interface TickProps {
  /** Scan in-process up to this many shards; above it, fan out to the scan function (`SUNDIAL_TICK_IN_PROCESS_MAX_SHARDS`, default 256). */
  readonly inProcessMaxShards?: number;
  /** Shards per fanned-out scan invocation (`SUNDIAL_SHARDS_PER_SCAN`, default 256). */
  readonly shardsPerScan?: number;
  /** Missed-fire executions per tick, all tenants, when catching up (`SUNDIAL_CATCH_UP_GLOBAL`, default 5000). */
  readonly catchUpGlobal?: number;
  /** Missed-fire executions per tick per tenant (`SUNDIAL_CATCH_UP_PER_TENANT`, default 500). */
  readonly catchUpPerTenant?: number;
  /** Send fires with `MessageGroupId` = tenant, SQS fair queues (`SUNDIAL_FAIR_QUEUES`, default true). */
  readonly fairQueues?: boolean;
  /**
   * Reserved concurrency of the tick and the scan function: the scheduler's own heartbeat keeps
   * its capacity when workers or other functions use up the account's concurrency, and cannot
   * itself use more. `false` reserves nothing (accounts at the new-account limit of 10, where
   * any reservation fails the deployment). Default `{ tick: 2, scan: 10 }`.
   */
  readonly reservedConcurrency?: false | { readonly tick?: number; readonly scan?: number };
}

/** Per-tenant quotas the API enforces (429 with Retry-After; docs/api.md). Defaults in brackets. */
export interface QuotaProps {
  /** Live (not deleted) jobs per tenant (`SUNDIAL_QUOTA_MAX_JOBS`) [10000]. */
  readonly maxJobs?: number;
  /** Shortest interval between two fires of a job, seconds (`SUNDIAL_QUOTA_MIN_INTERVAL_SECS`) [1]. */
  readonly minIntervalSecs?: number;
  /** Executions created through the API (trigger-now, backfill) per tenant per minute (`SUNDIAL_QUOTA_API_EXECUTIONS_PER_MINUTE`) [1000]. */
  readonly apiExecutionsPerMinute?: number;
  /** Trigger-now calls per tenant per minute (`SUNDIAL_QUOTA_TRIGGERS_PER_MINUTE`) [60]. */
  readonly triggersPerMinute?: number;
  /**
   * Executions per hour a tenant's live jobs may make together at their peak, fan-out children
   * and map-reduce `maxItems` included (`SUNDIAL_QUOTA_EXECUTIONS_PER_HOUR`) [1,000,000].
   */
  readonly executionsPerHour?: number;
  /**
   * API requests per second per tenant, after the caller is known (`SUNDIAL_TENANT_API_RPS`;
   * 0 turns it off) [20]: the stage throttle (`apiThrottle`) is shared by every tenant.
   */
  readonly tenantRequestsPerSecond?: number;
}

/** The API stage's throttle, all callers together (API Gateway answers 429 above it). */
export interface ApiThrottleProps {
  /** Steady requests per second [100]. */
  readonly rateLimit?: number;
  /** Burst [200]. */
  readonly burstLimit?: number;
  /**
   * The routes anyone may call without signing in (`GET /openapi.json`, `/console`,
   * `/console/{file}`): a route-level throttle of their own [10 a second, burst 20], so that an
   * unauthenticated flood of them is refused there, not out of the limit tenants share.
   */
  readonly publicRoutes?: { readonly rateLimit?: number; readonly burstLimit?: number };
}

/** Settings of every worker, Lambda or ECS. Defaults: resources.json `defaults`. */
export interface WorkerProps {
  /** Lease of a running execution, 2 s-12 h, whole seconds; heartbeats every third (`SUNDIAL_LEASE_SECS`, default 30 s). */
  readonly lease?: Duration;
  /** Wait after a lease's end before another worker takes over, 0-60 s, in ms (`SUNDIAL_SKEW_MARGIN_MS`, default 2 s). */
  readonly skewMargin?: Duration;
  /** Run time budget of an execution across attempts (`SUNDIAL_MAX_TOTAL_RUN_SECS`, default: the job's maxAttempts × timeoutSecs). */
  readonly maxTotalRun?: Duration;
  /** Running executions per tenant: a default and per-tenant limits (`SUNDIAL_TENANT_MAX_RUNNING`; without a default, 500 a tenant). */
  readonly tenantMaxRunning?: { readonly default?: number; readonly tenants?: Record<string, number> };
}

/**
 * How API callers authenticate, and where their tenant comes from (`SUNDIAL_TENANCY`; tenant
 * scoping is enforced in the api code, docs/api.md "Tenancy").
 * - `jwt`: the tenant is the claim `tenantClaim` of the verified token. Use a claim only the
 *   issuer sets (a Cognito group mapped by a pre-token-generation trigger, an IdP attribute users
 *   cannot edit), never a user-writable Cognito `custom:` attribute.
 * - `iam`: SigV4-signed requests. By default (`tenancy: 'principalTag'`) the tenant is the
 *   `tenantTag` tag (default `sundial-tenant`) on the calling IAM role or user, which only IAM
 *   administrators can set; untagged principals and other accounts get 403. `tenancy: 'account'`
 *   makes the caller's account the tenant, so every principal of an account shares its jobs:
 *   only for single-team accounts.
 */
export type ApiAuth =
  | { readonly kind: 'jwt'; readonly issuer: string; readonly audience: string[] }
  | { readonly kind: 'iam'; readonly tenancy?: 'principalTag' | 'account'; readonly tenantTag?: string };

/**
 * Table props the construct leaves to you (`tableOverrides`). Not overridable, because the Rust
 * code and resources.json fix them: the key schema and indexes (`partitionKey`, `sortKey`), the
 * physical name (`tableName`: use `tableNamePrefix`), the TTL attribute, and encryption
 * (`encryption`, `encryptionKey`: use `encryptionKey`, which also grants every function the key).
 */
export type TableOverrides = Omit<Partial<dynamodb.TableProps>, ProtectedTableProp>;
export const PROTECTED_TABLE_PROPS = ['partitionKey', 'sortKey', 'tableName', 'timeToLiveAttribute', 'encryption', 'encryptionKey'] as const;
export type ProtectedTableProp = (typeof PROTECTED_TABLE_PROPS)[number];

/** Per-table overrides: `all` first, then the table's own entry. */
export interface TableOverridesProps {
  readonly all?: TableOverrides;
  readonly jobs?: TableOverrides;
  readonly executions?: TableOverrides;
  /** The handler toolkit's tables (`toolkitTables`). */
  readonly toolkit?: TableOverrides;
}

/**
 * Lambda props the construct leaves to you (`functionOverrides`), e.g. `memorySize`, `vpc`,
 * `securityGroups`, `reservedConcurrentExecutions`, `description`, `layers`,
 * `ephemeralStorageSize`. Not overridable: `environment` (the env contract of resources.json;
 * add variables with `addEnvironment` on the exposed function if you must), `role` (each
 * function's role is built from the calls it makes), `timeout` (tied to queue visibility, alarms
 * and the tick's minute: use `runTimeout` of a pool), `architecture` (the binaries are arm64),
 * `retryAttempts` (tick, scan and reconciler must not retry), the log group and logging settings
 * (`logRetention`, `logLevel`, `encryptionKey`), `tracing` (use `tracing`), `events`.
 */
export type FunctionOverrides = Omit<Partial<lambda.FunctionOptions>, ProtectedFunctionProp>;
export const PROTECTED_FUNCTION_PROPS = [
  'environment', 'role', 'timeout', 'architecture', 'retryAttempts', 'logGroup', 'logRetention', 'logRetentionRole',
  'logRetentionRetryOptions', 'loggingFormat', 'logFormat', 'applicationLogLevel', 'applicationLogLevelV2', 'systemLogLevel',
  'systemLogLevelV2', 'tracing', 'events',
] as const;
export type ProtectedFunctionProp = (typeof PROTECTED_FUNCTION_PROPS)[number];

/** One tenant's event source (`SundialSchedulerProps.eventSources`). */
export interface TenantEventSource {
  /** The tenant whose jobs the source's events fire. */
  readonly tenant: string;
  /** The tenant's SQS queue (tagged `sundial-tenant=<tenant>`). */
  readonly queue?: sqs.IQueue;
  /** A bus for the tenant, made by the construct. */
  readonly bus?: TenantBusProps;
}

/** The bus the construct makes for a tenant's events. */
export interface TenantBusProps {
  /** Accounts (besides Sundial's) allowed `events:PutEvents` on it, e.g. the tenant's own. */
  readonly accounts?: string[];
  /** Which events of the bus fire (default: `detail-type` `Sundial Event`). */
  readonly eventPattern?: events.EventPattern;
}

/** Per-function overrides: `all` first, then the function's own entry (`workers`: every Lambda worker). */
export interface FunctionOverridesProps {
  readonly all?: FunctionOverrides;
  readonly tick?: FunctionOverrides;
  readonly scan?: FunctionOverrides;
  readonly reconcile?: FunctionOverrides;
  readonly api?: FunctionOverrides;
  readonly ingest?: FunctionOverrides;
  readonly workers?: FunctionOverrides;
}

/**
 * Queue props the construct leaves to you (`queueOverrides`), e.g. `receiveMessageWaitTime`,
 * `maxMessageSizeBytes`, `dataKeyReuse`, `redriveAllowPolicy`, `removalPolicy`. Not
 * overridable: the name (`{queuePrefix}{pool}`), the redrive (`deadLetterQueue`), visibility
 * (from `runTimeout`), retention (resources.json), FIFO settings (Sundial's queues are standard
 * queues), `deliveryDelay` (the tick sets each message's delay), encryption (`encryptionKey`)
 * and `enforceSSL` (always on).
 */
export type QueueOverrides = Omit<Partial<sqs.QueueProps>, ProtectedQueueProp>;
export const PROTECTED_QUEUE_PROPS = [
  'queueName', 'deadLetterQueue', 'visibilityTimeout', 'retentionPeriod', 'fifo', 'contentBasedDeduplication', 'deduplicationScope',
  'fifoThroughputLimit', 'deliveryDelay', 'encryption', 'encryptionMasterKey', 'enforceSSL',
] as const;
export type ProtectedQueueProp = (typeof PROTECTED_QUEUE_PROPS)[number];

/** Per-queue overrides: `all` first, then pool queues (both lanes and the notify queue) or DLQs. */
export interface QueueOverridesProps {
  readonly all?: QueueOverrides;
  readonly queues?: QueueOverrides;
  readonly dlqs?: QueueOverrides;
}

/** The handler toolkit's tables (see lib/toolkit.ts). */
export interface ToolkitTablesProps {
  /**
   * Physical names `{namePrefix}inbox`, `{namePrefix}outbound`, `{namePrefix}markers`, the names
   * `ToolkitTables::with_prefix(namePrefix)` uses in Rust. Default: CloudFormation names them
   * (read them from `toolkitTables` and pass them to your handler).
   */
  readonly namePrefix?: string;
}

/** What one tenant may call (see `SundialSchedulerProps.tenantTargets`). */
export interface TargetAllow {
  /** Globs of Lambda function ARNs (a bare name in a job is completed with the stack's region and account first); `*` stays within one segment. */
  readonly lambda?: string[];
  /** Globs of SQS queue ARNs (`arn:aws:sqs:*:123456789012:acme-*`); a URL-shaped glob is refused. */
  readonly sqs?: string[];
  /** Globs of webhook host names (lowercase). */
  readonly http?: string[];
  /** Globs of SNS topic ARNs (`sns` targets, `arn:aws:sns:*:123456789012:acme-*`). */
  readonly sns?: string[];
  /** Globs of Step Functions state machine ARNs (`stepFunctions` targets, `arn:aws:states:*:123456789012:stateMachine:acme-*`). */
  readonly stepFunctions?: string[];
  /**
   * Globs of ECS task definition ARNs without the revision (`ecs` targets,
   * `arn:aws:ecs:*:123456789012:task-definition/acme-*`): a family is allowed at every revision.
   */
  readonly ecsTaskDefinitions?: string[];
  /** Globs of ECS cluster ARNs (`ecs` targets, `arn:aws:ecs:*:123456789012:cluster/batch`): where the tenant's tasks may run. */
  readonly ecsClusters?: string[];
  /** Globs of EventBridge bus ARNs (`eventBridge` targets, `arn:aws:events:*:123456789012:event-bus/acme-*`). */
  readonly eventBridge?: string[];
  /** Globs of Secrets Manager secret ARNs the tenant's webhooks may name (signing keys, header values). */
  readonly secrets?: string[];
  /** In-process handler names the tenant may run. */
  readonly inProcess?: string[];
  /** Pools the tenant's jobs may use (a tenant with an entry and no `pools` can create no job). */
  readonly pools?: string[];
  /** Private networks (CIDRs) the tenant's webhooks may reach, within `privateTargetCidrs`. */
  readonly cidrs?: string[];
  /**
   * Subnets an `ecs` target's task may be placed in (`target.subnets`): ids (`subnet-0123…`) or
   * `*` globs (`subnet-0aa*`, `*`). Left out: none, so a tenant with an entry can run no task
   * that names a subnet. ECS creates the task's network interface with its own service-linked
   * role, so IAM does not judge the subnet: this list is the only check (docs/tenancy.md).
   */
  readonly ecsSubnets?: string[];
  /** Security groups an `ecs` target's task may join (`target.securityGroups`): ids (`sg-0123…`) or `*` globs. Left out: none. */
  readonly ecsSecurityGroups?: string[];
  /** Whether an `ecs` target may ask for a public IP (`target.assignPublicIp`). Default false. */
  readonly ecsPublicIp?: boolean;
}

/**
 * How the jobs and executions tables are billed. On demand (the default) suits small and
 * unpredictable loads; provisioned is cheaper once the load is steady enough that the units
 * bought are mostly used (`sundial capacity` prints both and the crossover). The units here are
 * the starting point (and the floor of each GSI); the schedule-driven plan
 * (`sundial-throughput`, docs/capacity.md) is what moves them ahead of the load.
 */
export type TableCapacity =
  | { readonly mode: 'onDemand' }
  | { readonly mode: 'provisioned'; readonly writeCapacity: number; readonly readCapacity: number };

export interface SundialSchedulerProps {
  /** Billing of the jobs and executions tables. Default: on demand. */
  readonly tableCapacity?: TableCapacity;
  /** Worker pools. Default: the pools named in resources.json (`defaultPools`), as Lambda pools. */
  readonly pools?: PoolProps[];
  /** Logical shard count (1-65536). Default: resources.json `defaults.shards`. */
  readonly shards?: number;
  /** API authentication: a JWT issuer and audience, or IAM (SigV4). */
  readonly apiAuth: ApiAuth;
  /**
   * Physical table names `{tableNamePrefix}{defaultName}` (e.g. `prod-sundial-jobs`).
   * Default: CloudFormation names the tables and the names reach the functions through env.
   */
  readonly tableNamePrefix?: string;
  /** Queue names are `{queuePrefix}{pool}` and `{queuePrefix}{pool}-dlq`. Default: `{stackName}-`. */
  readonly queuePrefix?: string;
  /** Retention of every log group Sundial creates. Default: one month. */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Keep data when the stack or construct is deleted: tables RETAIN with deletion protection,
   * log groups RETAIN. Default true. Set false only for throwaway test stacks.
   */
  readonly retainData?: boolean;
  /** SNS topic ARN notified when any alarm fires or recovers. Default: alarms without actions. */
  readonly alarmTopicArn?: string;
  /** Alarm when p99 schedule lag of a pool exceeds this many ms (default 5000). */
  readonly scheduleLagAlarmThresholdMs?: number;
  /**
   * Directory with `tick/bootstrap`, `worker/bootstrap`, `api/bootstrap` (cargo lambda's
   * `--lambda-dir` layout) and `worker-ecs/` (a Docker build context). Default: the package's
   * `assets/`, placeholders that synthesize but do not run (a warning says so). The same as
   * `code: SundialCode.fromAssets(dir)`; give one or the other.
   */
  readonly assetsDir?: string;
  /**
   * Where the functions' code comes from: `SundialCode.fromAssets(dir)` (prebuilt, see
   * `assetsDir`) or `SundialCode.fromSource({ manifestPath })` (cargo-lambda-cdk's
   * `RustFunction` builds each binary at synth; ECS pools then need `ecsImage`).
   */
  readonly code?: SundialCode;
  /**
   * A customer-managed KMS key for every table, queue and log group Sundial creates. Every
   * function's role (and the ECS task roles) gets encrypt/decrypt on it. For a key in the same
   * stack, the construct adds the statement that lets CloudWatch Logs use it for Sundial's log
   * groups to the key policy; an imported key's policy must already allow that (a synth warning
   * says so). Default: AWS-owned keys for tables, SQS-managed SSE for queues, the CloudWatch Logs
   * default for log groups.
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * X-Ray active tracing on every Lambda function (the Lambda service's segments per invocation;
   * the roles get `xray:PutTraceSegments`/`PutTelemetryRecords`). ECS workers are not traced (that
   * needs an X-Ray daemon sidecar). Default false.
   */
  readonly tracing?: boolean;
  /** Escape hatches for the tables; see `TableOverrides` for what cannot be overridden. */
  readonly tableOverrides?: TableOverridesProps;
  /** Escape hatches for the Lambda functions; see `FunctionOverrides` for what cannot be overridden. */
  readonly functionOverrides?: FunctionOverridesProps;
  /** Escape hatches for the pool queues and DLQs; see `QueueOverrides` for what cannot be overridden. */
  readonly queueOverrides?: QueueOverridesProps;
  /**
   * Create the handler toolkit's tables (inbox, outbound, markers; lib/toolkit.ts) for handlers
   * that use `sundial-idempotency`; grant a handler with `grantToolkit`. Default false.
   */
  readonly toolkitTables?: boolean | ToolkitTablesProps;
  /** Image of ECS workers. Default: built from `{assetsDir}/worker-ecs` at deploy time. */
  readonly ecsImage?: ecs.ContainerImage;
  /** VPC for ECS pools. Default: a new VPC with public subnets only (no NAT gateway). */
  readonly vpc?: ec2.IVpc;
  /**
   * Lambda functions (ARNs or ARN globs) jobs may invoke as targets. Granted to the tenant access
   * role (`tenantAccessRole`), never to the workers' roles: `lambda:InvokeFunction` and
   * `lambda:GetFunction` on them and their versions and aliases, and `lambda:ListTags` (the
   * ownership check's tag read) on them, only where the function's `sundial-tenant` tag equals
   * the calling tenant (docs/tenancy.md). Default: none.
   */
  readonly allowedTargetFunctionArns?: string[];
  /**
   * SQS queues (ARNs or ARN globs) jobs may send to as targets. Granted to the tenant access role:
   * `sqs:SendMessage` and `sqs:ListQueueTags`, only where the queue's `sundial-tenant` tag equals
   * the calling tenant. A queue encrypted with a customer-managed KMS key also needs
   * `kms:GenerateDataKey` and `kms:Decrypt` for `tenantAccessRole` (grant it on the key).
   * Default: none.
   */
  readonly allowedTargetQueueArns?: string[];
  /**
   * EventBridge buses (ARNs or ARN globs) `eventBridge` targets may put events on
   * (docs/targets.md). Granted to the tenant access role: `events:PutEvents` and
   * `events:ListTagsForResource`, only where the bus's `sundial-tenant` tag equals the calling
   * tenant. Default: none.
   */
  readonly allowedTargetEventBusArns?: string[];
  /**
   * SNS topics (ARNs or ARN globs) `sns` targets may publish to (docs/targets.md). Granted to the
   * tenant access role: `sns:Publish` and `sns:ListTagsForResource`, only where the topic's
   * `sundial-tenant` tag equals the calling tenant. A topic encrypted with a customer-managed
   * KMS key also needs `kms:GenerateDataKey` and `kms:Decrypt` for `tenantAccessRole`. Default:
   * none.
   */
  readonly allowedTargetTopicArns?: string[];
  /**
   * Step Functions state machines (unqualified ARNs or ARN globs,
   * `arn:aws:states:*:123456789012:stateMachine:acme-*`) `stepFunctions` targets may start
   * (docs/targets.md). Granted to the tenant access role: `states:StartExecution` and
   * `states:ListTagsForResource` on the machines, `states:DescribeExecution` and `states:StopExecution` (an attempt that times out or is cancelled stops its execution) on their executions
   * (`arn:…:execution:<machine>:*`), only where the `sundial-tenant` tag equals the calling
   * tenant (an execution is judged by its state machine's tags). Default: none.
   */
  readonly allowedTargetStateMachineArns?: string[];
  /**
   * ECS clusters (ARNs or ARN globs, `arn:aws:ecs:*:123456789012:cluster/batch-*`) `ecs` targets
   * may run tasks on (docs/targets.md). Together with `allowedTargetTaskDefinitionArns` (one
   * without the other is refused) the tenant access role gets: `ecs:RunTask` only with
   * `ecs:cluster` one of these; `ecs:DescribeTasks` and `ecs:StopTask` on their tasks
   * (`arn:…:task/<cluster name>/*`) where the task's `sundial-tenant` tag (set at `RunTask`)
   * equals the calling tenant; `ecs:TagResource` on their tasks only as part of `RunTask`
   * (`ecs:CreateAction`) with the calling tenant's tag value; `ecs:ListTasks` (resource `*`)
   * with `ecs:cluster` one of these. Default: none.
   */
  readonly allowedTargetEcsClusterArns?: string[];
  /**
   * ECS task definition families (ARNs or ARN globs without a revision,
   * `arn:aws:ecs:*:123456789012:task-definition/acme-*`) `ecs` targets may run, at every revision
   * (not `TaskDefinition.taskDefinitionArn`, which names one revision; an `ecs` target names
   * one revision, `…:task-definition/<family>:<revision>`).
   * Granted to the tenant access role with `allowedTargetEcsClusterArns`: `ecs:RunTask` on the
   * family and its revisions (`…:*`), and `ecs:ListTagsForResource` on its revisions (`…:*`),
   * with which the worker reads the target's `sundial-tenant` tag, both only where the task
   * definition's `sundial-tenant` tag equals the calling tenant. `ecs:DescribeTaskDefinition`
   * is not granted (IAM cannot narrow it below `*`). Default: none.
   */
  readonly allowedTargetTaskDefinitionArns?: string[];
  /**
   * The task roles and execution roles (ARNs or ARN globs) of the task definitions `ecs` targets
   * run: `RunTask` passes them, so the tenant access role gets `iam:PassRole` on them, only with
   * `iam:PassedToService` = `ecs-tasks.amazonaws.com` and only where the role's `sundial-tenant`
   * tag equals the calling tenant: tag each tenant's task and execution roles
   * `sundial-tenant=<tenant>`. A task definition whose role is not listed, or not tagged for the
   * tenant, cannot be run (AccessDenied). The construct's own roles can never be passed (an
   * explicit Deny), and a glob that could name them (`role/*`, `role/<stackName>-*`) is refused
   * at synth: list the tenants' roles by a prefix or path of their own (`role/tenants/*`). Needs
   * `allowedTargetEcsClusterArns` and `allowedTargetTaskDefinitionArns`.
   * Default: none (task definitions without roles only).
   */
  readonly allowedTargetEcsPassRoleArns?: string[];
  /**
   * Secrets Manager secrets webhook targets may use (`signingSecretArn`, and the `secretArn` of
   * `headers`): ARNs or ARN globs such as
   * `arn:aws:secretsmanager:eu-west-1:123456789012:secret:sundial-webhooks/*`. Granted to the
   * tenant access role: `secretsmanager:GetSecretValue` and `secretsmanager:DescribeSecret`, only
   * where the secret's `sundial-tenant` tag equals the calling tenant, so a tenant can never read
   * another's secret even when both match the glob. A secret encrypted with a customer-managed
   * KMS key also needs `kms:Decrypt` for `tenantAccessRole` (grant it on the key). Default: none
   * (a job that names a secret fails with TargetSecretUnavailable).
   */
  readonly allowedTargetSecretArns?: string[];
  /**
   * Private networks webhook targets may reach besides public addresses, e.g. `['10.1.0.0/16',
   * 'fd12::/16']` (`SUNDIAL_PRIVATE_TARGET_CIDRS`). Loopback, link-local and the metadata
   * addresses stay refused even if listed. Default: none (public addresses only). There is no
   * prop for loopback: `SUNDIAL_DEV_LOOPBACK_TARGETS` is for the local run and tests only.
   */
  readonly privateTargetCidrs?: string[];
  /**
   * Per-tenant target allowlists (`SUNDIAL_TENANT_TARGETS`), checked when a job is created or
   * edited and before every call: tenant → `*` globs of the Lambda functions (as written in the
   * job, e.g. `arn:aws:lambda:*:*:function:acme-*`), SQS queue URLs and webhook host names it may
   * call; `'*'` applies to every tenant without an entry, and a kind left out allows nothing.
   * Default: none (any target the other checks accept; `allowedTargetFunctionArns`,
   * `allowedTargetQueueArns` and `allowedTargetSecretArns`, with the `sundial-tenant` tag of each
   * target, still bound what the tenant access role can reach at all).
   */
  readonly tenantTargets?: Record<string, TargetAllow>;
  /**
   * The tenants' event sources (docs/events.md): each fires the tenant's jobs that take events
   * (`events` in their definition) through the `ingest` function, made only when this is set.
   * - `{ tenant, queue }`: the tenant's SQS queue (its own, possibly in its own account; its
   *   queue policy must let `ingestFunction`'s role consume it), which must carry the tag
   *   `sundial-tenant=<tenant>`. An event source mapping with partial batch responses; give the
   *   queue a redrive policy (messages that keep failing end in the tenant's DLQ).
   * - `{ tenant, bus: { accounts?, eventPattern? } }`: a bus the construct makes for the tenant
   *   (`<stackName>-tenant-<tenant>`, tagged `sundial-tenant`), which `accounts` may put events
   *   on, and a rule (default pattern: `detail-type` `Sundial Event`) that sends each event to
   *   the ingest stamped with the tenant. Tenants in Sundial's account put events on it with an
   *   identity policy; the guardrail denies them every other tenant's bus.
   * Default: none.
   */
  readonly eventSources?: TenantEventSource[];
  /**
   * Tenants whose outbound calls assume a role of their own (typically in their own account)
   * instead of the stack's tenant access role (`SUNDIAL_TENANT_ROLES`): tenant → role ARN. The
   * worker assumes it with the session tag `sundial-tenant=<tenant>`; the role's trust policy must
   * allow the stack's worker roles (`workerRoles`) `sts:AssumeRole` and `sts:TagSession`.
   * Default: none.
   */
  readonly tenantRoles?: Record<string, string>;
  /** The tick's tunables. */
  readonly tick?: TickProps;
  /** Settings of every worker. */
  readonly workers?: WorkerProps;
  /**
   * The web console's OIDC client id at the JWT issuer (`SUNDIAL_CONSOLE_CLIENT_ID`): a public
   * client (authorization code + PKCE, no secret) whose redirect URI is `{apiUrl}/console`.
   * Unset: the console has no sign-in (docs/console.md). JWT auth only.
   */
  readonly consoleClientId?: string;
  /**
   * The JWT claim that carries the tenant (`SUNDIAL_TENANT_CLAIM`, default `tenant`). It must be a
   * claim only the issuer sets: with Cognito, a claim a pre-token-generation trigger sets from the
   * user's group (e.g. `tenant`), or a custom attribute that is read-only for the app client
   * (removed from its write attributes). A Cognito `custom:` attribute is writable by the user
   * by default, which would let a user switch tenant; a synth warning says so for any claim that
   * starts with `custom:`.
   */
  readonly tenantClaim?: string;
  /** Per-tenant quotas of the API. */
  readonly quotas?: QuotaProps;
  /**
   * Tenants whose callers are platform operators (`SUNDIAL_OPERATOR_TENANTS`): only they may set
   * and delete resource limits (`PUT /v1/resources/{name}`), which bound every tenant's jobs at
   * once (docs/resources.md). Default: none (nobody can set one through the API).
   */
  readonly operatorTenants?: string[];
  /** The API stage's throttle. */
  readonly apiThrottle?: ApiThrottleProps;
  /**
   * Reserved concurrency of the api function: the API keeps this many concurrent executions when
   * workers use up the account's concurrency, and one tenant's slow requests (up to the 29 s
   * timeout each) cannot take more than this from the workers and the tick. Above it, API
   * Gateway answers 429/503 for the excess. `false` reserves nothing (accounts still at the
   * new-account limit of 10, where any reservation fails the deployment; see
   * `tick.reservedConcurrency`). Workers get none: each pool's event sources already cap it at
   * `maxConcurrency` + `lowMaxConcurrency` + `notifyConcurrency`. Default 50.
   */
  readonly apiReservedConcurrency?: number | false;
  /**
   * Name of the EventBridge bus the construct creates for Sundial's events (`FireMissed`: a fire
   * not started by its job's `startDeadlineSecs`; docs/reconciler.md). Default:
   * `{stack name}-sundial-events`. Add rules to `eventBus` to route events (e.g. one job's misses).
   */
  readonly eventBusName?: string;
  /**
   * Log level of every function. Logs are JSON lines (Lambda's JSON log format; the ECS worker
   * gets the same through `AWS_LAMBDA_LOG_FORMAT` and `AWS_LAMBDA_LOG_LEVEL`). Default INFO.
   */
  readonly logLevel?: lambda.ApplicationLogLevel;
  /** Back-pressure thresholds (docs/priority.md). */
  readonly backpressure?: BackpressureProps;
}

/** What was created for one pool. */
export interface SundialPool {
  readonly name: string;
  readonly kind: WorkerKind;
  readonly queue: sqs.Queue;
  /** The low lane `{prefix}{pool}-low`: low-priority and backfilled executions (docs/priority.md). */
  readonly lowQueue: sqs.Queue;
  readonly dlq: sqs.Queue;
  /** The outcome notifications `{prefix}{pool}-notify`, which the pool's workers deliver (docs/outcomes.md). */
  readonly notifyQueue: sqs.Queue;
  readonly runTimeout: Duration;
  /** Lambda pools. */
  readonly worker?: lambda.Function;
  /** ECS pools. */
  readonly service?: ecs.FargateService;
  /** The role the pool's worker code runs as. */
  readonly role: iam.IRole;
}
