/**
 * EventBridge and the tenants' events: Sundial's own bus (where `FireMissed` goes), and the
 * tenants' event sources (docs/events.md), a tenant's SQS queue or a bus made for the tenant,
 * both feeding the ingest function.
 */
import { Duration, Lazy, Stack, Tags, Token } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { allow, Sundial } from './context';
import { alarm } from './dashboard';
import { rustFunction } from './functions';
import { TenantEventSource } from './props';
import { queueEncryption } from './queues';
import { EnvOf } from './settings';

/**
 * Sundial's own bus: start-deadline misses (FireMissed) go here, one event per job and fire,
 * so users alert on one job with a rule instead of a metric per job.
 * Named here, like the queues (`{stack}-...`), so the functions' env carries the name itself
 * rather than a Ref (moto's CloudFormation cannot resolve a bus Ref into an env value).
 */
export function sundialEventBus(s: Sundial): { eventBus: events.EventBus; eventBusName: string } {
  const eventBusName = s.props.eventBusName ?? `${Stack.of(s.scope).stackName}-sundial-events`;
  if (!Token.isUnresolved(eventBusName) && !/^[A-Za-z0-9._-]{1,256}$/.test(eventBusName)) {
    throw new Error(`eventBusName ${JSON.stringify(eventBusName)} may only contain A-Z, a-z, 0-9, '.', '-' and '_' (at most 256)`);
  }
  return { eventBus: new events.EventBus(s.scope, 'EventBus', { eventBusName }), eventBusName };
}

/** What the ingest reads and writes: both tables and both lanes of every pool. */
export interface IngestResources {
  readonly jobs: dynamodb.Table;
  readonly executions: dynamodb.Table;
  readonly poolQueueArns: string[];
}

/** What the tenants' event sources made. */
export interface TenantSources {
  readonly fn: lambda.Function;
  /** Bus events the ingest failed three times. */
  readonly dlq: sqs.Queue;
  /** The bus made for each tenant with a `bus` source, by tenant. */
  readonly buses: Record<string, events.EventBus>;
  readonly rules: events.Rule[];
}

/**
 * docs/events.md: the ingest is the same control plane as the API (binary `ingest` of the
 * api crate), so it reads the API's settings (quotas, back-pressure) and makes the same calls
 * for an event as POST /v1/jobs/{jobId}/events; the tenant is the source's, declared here.
 * Nothing without `eventSources`.
 */
export function tenantEventSources(
  s: Sundial,
  envOf: EnvOf,
  t: IngestResources,
  consoleLogGroups: string,
  apiId: () => string,
): TenantSources | undefined {
  const sources = s.props.eventSources ?? [];
  if (sources.length === 0) return undefined;
  const { declared, buses } = tenantBuses(s, sources);
  const dlq = new sqs.Queue(s.scope, 'IngestDeadLetters', {
    retentionPeriod: Duration.days(14),
    enforceSSL: true,
    ...queueEncryption(s),
  });
  const fn = rustFunction(s, 'Ingest', 'ingest', s.overrides.ingest, {
    timeout: Duration.seconds(30),
    memorySize: 256,
    environment: envOf('ingest', {
      consoleLogGroups,
      apiId: Lazy.string({ produce: apiId }),
      eventSources: Stack.of(s.scope).toJsonString(declared),
    }),
    description: "Sundial ingest: the tenants' event sources to executions",
    retryAttempts: 2,
    deadLetterQueue: dlq,
  });
  grantIngest(fn, t);
  const rules = wireSources(s, fn, dlq, sources, buses);
  ingestAlarms(s, fn, dlq);
  return { fn, dlq, buses, rules };
}

/** Checks each source, and makes each `bus` source's bus; `declared` is the ingest's `SUNDIAL_EVENT_SOURCES`. */
function tenantBuses(s: Sundial, sources: TenantEventSource[]): { declared: Record<string, string>[]; buses: Record<string, events.EventBus> } {
  const stack = Stack.of(s.scope);
  const declared: Record<string, string>[] = [];
  const buses: Record<string, events.EventBus> = {};
  for (const [i, src] of sources.entries()) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(src.tenant)) throw new Error(`eventSources[${i}].tenant: ${JSON.stringify(src.tenant)} must be 1-64 characters of A-Z, a-z, 0-9, '-' or '_' (a tenant id)`);
    if ((src.queue === undefined) === (src.bus === undefined)) throw new Error(`eventSources[${i}]: give exactly one of queue and bus`);
    if (src.bus !== undefined) {
      if (buses[src.tenant]) throw new Error(`eventSources[${i}]: tenant ${src.tenant} already has a bus`);
      const busName = `${stack.stackName}-tenant-${src.tenant}`;
      const bus = new events.EventBus(s.scope, `TenantBus-${src.tenant}`, { eventBusName: busName });
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
      buses[src.tenant] = bus;
      declared.push({ tenant: src.tenant, bus: busName });
    } else {
      declared.push({ tenant: src.tenant, queueArn: src.queue!.queueArn });
    }
  }
  return { declared, buses };
}

function grantIngest(fn: lambda.Function, t: IngestResources): void {
  // The same item calls as the API's events route (key claim, execution put, quota and
  // rate counters, ops log), proven by infra/test/iam.test.ts from the recording.
  // No index: an event reads its job and execution by key.
  allow(
    fn,
    ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem', 'dynamodb:Query'],
    [t.jobs, t.executions].map((x) => x.tableArn),
  );
  fn.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['dynamodb:DeleteItem'],
      resources: [t.jobs.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['T#*#QUOTA'] } },
    }),
  );
  allow(fn, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], t.poolQueueArns);
}

/** Each source to the ingest: a queue through an event source mapping, a bus through a rule. */
function wireSources(
  s: Sundial,
  fn: lambda.Function,
  dlq: sqs.Queue,
  sources: TenantEventSource[],
  buses: Record<string, events.EventBus>,
): events.Rule[] {
  const stack = Stack.of(s.scope);
  const rules: events.Rule[] = [];
  for (const src of sources) {
    if (src.queue !== undefined) {
      // The mapping consumes the queue; the function reads its sundial-tenant tag.
      src.queue.grantConsumeMessages(fn);
      allow(fn, ['sqs:GetQueueUrl', 'sqs:ListQueueTags'], [src.queue.queueArn]);
      // At most 5 concurrent batches per tenant queue: one tenant's flood cannot take the
      // account's Lambda concurrency from the others (its messages wait in its own queue).
      fn.addEventSource(new SqsEventSource(src.queue, { batchSize: 10, reportBatchItemFailures: true, maxConcurrency: 5 }));
    } else {
      const rule: events.Rule = new events.Rule(s.scope, `TenantRule-${src.tenant}`, {
        eventBus: buses[src.tenant],
        description: `Sundial: events of tenant ${src.tenant} to the ingest`,
        eventPattern: src.bus?.eventPattern ?? { detailType: ['Sundial Event'] },
        targets: [new targets.LambdaFunction(fn, { deadLetterQueue: dlq, retryAttempts: 185, maxEventAge: Duration.hours(24) })],
      });
      // The whole event, stamped with the tenant and bus: `<aws.events.event>` is
      // EventBridge's predefined variable for the original event as JSON (a value, not a key).
      const stamp = JSON.stringify({ tenant: src.tenant, bus: `${stack.stackName}-tenant-${src.tenant}` });
      rules.push(rule);
      (rule.node.defaultChild as events.CfnRule).addPropertyOverride('Targets.0.InputTransformer', {
        InputTemplate: `{"sundialEventSource":${stamp},"event":<aws.events.event>}`,
      });
    }
  }
  return rules;
}

function ingestAlarms(s: Sundial, fn: lambda.Function, dlq: sqs.Queue): void {
  alarm(s, 'IngestErrors', {
    alarmDescription: "Sundial ingest failed: events from the tenants' sources are being retried (see the ingest logs)",
    metric: fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });
  alarm(s, 'IngestDeadLettersAlarm', {
    alarmDescription: 'Sundial ingest dead-lettered bus events it could not take in three tries (IngestDeadLetters queue)',
    metric: dlq.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });
}
