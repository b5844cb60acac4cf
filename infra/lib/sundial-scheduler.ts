/**
 * `SundialScheduler`: the whole of Sundial as one construct to drop into a stack.
 *
 * Layout (see docs/architecture.md and the README's "How it works"):
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
 *
 * This file holds the construct's public face: its members, the grant methods, and a
 * constructor that makes the parts in order. The parts live in ./scheduler/, one concern each:
 *   props.ts          the props types (re-exported here)
 *   context.ts        the props' defaults and checks, and the helpers every part uses
 *   tables.ts         jobs, executions and the toolkit's tables
 *   queues.ts         each pool's queue, low lane, DLQ and notify queue
 *   settings.ts       the env contract: every setting's value, validated at synth
 *   functions.ts      how a Rust function is made; the tick, scan, planner and reconciler
 *   workers.ts        each pool's workers (Lambda or ECS) and their grants
 *   tenancy.ts        the tenant access role and the tenant guardrail
 *   api.ts            the api function, the HTTP API and its routes
 *   event-sources.ts  Sundial's bus, and the tenants' event sources with the ingest
 *   dashboard.ts      the alarms and the dashboard
 *   limits.ts         fixed numbers shared by these
 * Every resource is a child of the construct and is made in the order the constructor calls
 * the parts: the logical IDs and the template follow from that (test/templates.test.ts).
 */
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { api, workerLogGroups } from './scheduler/api';
import { grantKey, layout, sundialContext } from './scheduler/context';
import { observe } from './scheduler/dashboard';
import { sundialEventBus, tenantEventSources } from './scheduler/event-sources';
import { reconciler, tickAndScan } from './scheduler/functions';
import { ApiAuth, SundialPool, SundialSchedulerProps } from './scheduler/props';
import { loopQueueArns, poolQueues } from './scheduler/queues';
import { envFactory, ownFunctionGlobs, settingValues } from './scheduler/settings';
import { createTables } from './scheduler/tables';
import { denyPassingOwnRoles, guardrailParts, guardrailStatements, tenantAccess, TENANT_TAG_KEY } from './scheduler/tenancy';
import { workers } from './scheduler/workers';
import { TOOLKIT_TABLES, ToolkitTableName } from './toolkit';

export * from './scheduler/props';
export { PLACEHOLDER_MARKER } from './scheduler/functions';
export { tenancyOf } from './scheduler/settings';
export { TENANT_TAG_KEY } from './scheduler/tenancy';

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
   * it (source `sundial`, detail-type `FireMissed`, detail: eventId, tenant, jobId, executionId,
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
   * resources whose `sundial-tenant` tag equals the session's, and a Deny of `iam:PassRole` on
   * every role of the construct; its trust policy admits the
   * stack's worker roles only, and only with that one session tag. Grant it `kms:Decrypt` on a
   * customer-managed key of a target secret or queue.
   */
  public readonly tenantAccessRole: iam.Role;
  private readonly ecsCluster?: ecs.Cluster;
  private readonly apiAuthKind: ApiAuth['kind'];
  /** The IAM tag that names an API caller's tenant (`apiAuth.tenantTag`, default `sundial-tenant`). */
  private readonly principalTenantTag: string;
  /** That tag and the tenant access role's session tag: the keys no tenant may set. */
  private readonly tenantTagKeys: string[];
  private guardrailPolicy?: iam.ManagedPolicy;
  private guardrailPolicies?: iam.ManagedPolicy[];

  constructor(scope: Construct, id: string, props: SundialSchedulerProps) {
    super(scope, id);
    const s = sundialContext(this, props, this.alarms);
    this.apiAuthKind = props.apiAuth.kind;
    this.principalTenantTag = s.principalTenantTag;
    this.tenantTagKeys = [...new Set([TENANT_TAG_KEY, this.principalTenantTag])];
    this.encryptionKey = s.encryptionKey;
    const { shards, poolProps, queuePrefix } = layout(s);
    this.shards = shards;
    this.queuePrefix = queuePrefix;

    const tables = createTables(s);
    this.jobsTable = tables.jobs;
    this.executionsTable = tables.executions;
    this.toolkitTables = tables.toolkit;
    const bus = sundialEventBus(s);
    this.eventBus = bus.eventBus;
    this.eventBusName = bus.eventBusName;
    const queues = poolQueues(s, poolProps, queuePrefix);
    const envOf = envFactory(
      settingValues(s, poolProps, {
        jobsTable: this.jobsTable.tableName,
        executionsTable: this.executionsTable.tableName,
        queuePrefix,
        shards,
        eventBusName: this.eventBusName,
      }),
    );
    const loop = { jobs: tables.jobs, executions: tables.executions, ...loopQueueArns(queues) };

    const { tick, scan } = tickAndScan(s, envOf, loop);
    this.tickFunction = tick;
    this.scanFunction = scan;
    // Read at synth, once the role exists: it trusts the reconciler's and the workers' roles.
    const tenantRoleArn = () => this.tenantAccessRole.roleArn;
    this.reconcileFunction = reconciler(s, envOf, loop, this.eventBus, tenantRoleArn);
    const ownFunctions = () => ownFunctionGlobs(this, [this.tickFunction, this.scanFunction, this.reconcileFunction, this.apiFunction], s.overrides);
    const pools = workers(s, queues, envOf, { ...tables, eventBus: this.eventBus }, { tenantRoleArn, ownFunctions });
    this.pools.push(...pools.pools);
    this.ecsCluster = pools.cluster;
    this.tenantAccessRole = tenantAccess(this, props, [...this.pools.map((p) => p.role), this.reconcileFunction.role!]);

    const logGroups = workerLogGroups(this, this.pools);
    const apiId = () => this.httpApi.apiId;
    const http = api(s, envOf, { ...loop, dlqArns: queues.map((q) => q.dlq.queueArn) }, logGroups, apiId);
    this.apiFunction = http.fn;
    this.httpApi = http.httpApi;
    const sources = tenantEventSources(s, envOf, loop, logGroups, apiId);
    if (sources) {
      this.ingestFunction = sources.fn;
      this.ingestDeadLetterQueue = sources.dlq;
      Object.assign(this.tenantBuses, sources.buses);
      this.tenantRules.push(...sources.rules);
    }
    this.dashboard = observe(s, { tick, scan, reconcile: this.reconcileFunction }, this.pools, poolProps, props.scheduleLagAlarmThresholdMs ?? 5000);
    // Last: it names every role the parts above made.
    denyPassingOwnRoles(this, this.tenantAccessRole);
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
   *   principal's tenant), by `aws:TagKeys`; and of every kind of target whose tag the workers
   *   judge (secrets, functions, queues, buses, topics, state machines, ECS task definitions,
   *   clusters and tasks), tagging, untagging and creating with tags, by `aws:TagKeys`, for
   *   every principal but the tenant access role, whose RunTask tags the task with its tenant's
   *   tag.
   *
   * `onlyTaggedPrincipals` adds `Null: { aws:PrincipalTag/<apiAuth.tenantTag>: false }` to each, so the
   * statements can go into an SCP (or any policy shared with Sundial's own roles and the
   * deployment roles, which carry no tenant tag: do not tag the stack with it). Call this after
   * the construct is complete (it names what exists when called).
   */
  public tenantGuardrailStatements(options: { readonly onlyTaggedPrincipals?: boolean } = {}): iam.PolicyStatement[] {
    return guardrailStatements(
      this,
      {
        principalTenantTag: this.principalTenantTag,
        tenantTagKeys: this.tenantTagKeys,
        eventBus: this.eventBus,
        tenantBuses: this.tenantBuses,
        tenantRules: this.tenantRules,
        encryptionKey: this.encryptionKey,
        tenantAccessRole: this.tenantAccessRole,
      },
      options,
    );
  }

  /**
   * `tenantGuardrailStatements()` as a customer-managed policy of this stack (created once), to
   * attach to every tenant principal (role, user or group): its Deny statements override any
   * Allow the principal has. One policy outgrows IAM's 6,144 characters for a managed policy
   * once the stack has more than a few functions or a long name: prefer
   * `tenantGuardrailPolicies()`. As a permissions boundary it needs an Allow as well (a boundary
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
   * `tenantGuardrailStatements()` as customer-managed policies of this stack (created once),
   * split by concern: Sundial's functions; its data (tables, queues, buses, log groups, key);
   * its roles and the tenant tag. Attach every one of them to every tenant principal. One
   * policy (`tenantGuardrailPolicy`) can outgrow IAM's 6,144 characters for a managed policy: the
   * statements name each function, table, queue, log group and role by ARN, and every ARN grows
   * with the stack name.
   */
  public tenantGuardrailPolicies(): iam.ManagedPolicy[] {
    this.guardrailPolicies ??= guardrailParts(this.tenantGuardrailStatements()).map(
      ({ part, statements }) =>
        new iam.ManagedPolicy(this, `TenantGuardrail${part}`, {
          description: `Sundial: what a tenant principal must never do (${part.toLowerCase()}); attach with the other TenantGuardrail policies`,
          statements,
        }),
    );
    return this.guardrailPolicies;
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
    const key = grantKey(this.encryptionKey, grantee);
    if (key) grants.push(key);
    return grants.reduce((a, b) => a.combine(b));
  }
}
