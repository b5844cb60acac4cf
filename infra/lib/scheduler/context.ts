/**
 * What every part of `SundialScheduler` shares: the construct itself as the scope of every
 * resource (so the construct IDs, and with them the logical IDs, are those of one construct),
 * the props it was given with the defaults they resolve to, and the small helpers all parts use.
 */
import * as path from 'node:path';
import { Annotations, Lazy, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct, IConstruct } from 'constructs';
import { ResolvedCode, SundialCode } from '../code';
import { dlqName, lowQueueName, notifyQueueName, PACKAGE_ROOT, queueName, resources, validatePoolName } from '../resources';
import {
  FunctionOverridesProps,
  PoolProps,
  PROTECTED_FUNCTION_PROPS,
  PROTECTED_QUEUE_PROPS,
  PROTECTED_TABLE_PROPS,
  SundialSchedulerProps,
} from './props';
import { tenantTagOf } from './settings';

/** The construct being built, and what its props resolve to. */
export interface Sundial {
  /** The `SundialScheduler`: every resource is its child. */
  readonly scope: Construct;
  readonly props: SundialSchedulerProps;
  readonly retain: boolean;
  readonly logRetention: logs.RetentionDays;
  readonly codeSource: ResolvedCode;
  readonly logLevel: lambda.ApplicationLogLevel;
  readonly tracing: boolean;
  /** The IAM tag that names an API caller's tenant (`apiAuth.tenantTag`, default `sundial-tenant`). */
  readonly principalTenantTag: string;
  readonly encryptionKey?: kms.IKey;
  readonly overrides: FunctionOverridesProps;
  readonly alarmAction?: cw.IAlarmAction;
  /** The construct's `alarms`, which `alarm()` adds to. */
  readonly alarms: cw.Alarm[];
}

/**
 * The props' defaults, and the checks that need no resource (a protected override, assets and
 * code together, a bad tenant tag); then the key policy statement and the alarm action.
 */
export function sundialContext(scope: Construct, props: SundialSchedulerProps, alarms: cw.Alarm[]): Sundial {
  const retain = props.retainData ?? true;
  const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
  if (props.assetsDir !== undefined && props.code !== undefined) throw new Error('give assetsDir or code, not both');
  const codeSource = (props.code ?? SundialCode.fromAssets(props.assetsDir ?? path.join(PACKAGE_ROOT, 'assets'))).resolve();
  const logLevel = props.logLevel ?? lambda.ApplicationLogLevel.INFO;
  const tracing = props.tracing ?? false;
  const principalTenantTag = tenantTagOf(props.apiAuth, resources().defaults.tenantTag);
  const encryptionKey = props.encryptionKey;
  const overrides = props.functionOverrides ?? {};
  for (const [k, o] of Object.entries(overrides)) checkOverrides(`functionOverrides.${k}`, o, PROTECTED_FUNCTION_PROPS);
  for (const [k, o] of Object.entries(props.tableOverrides ?? {})) checkOverrides(`tableOverrides.${k}`, o, PROTECTED_TABLE_PROPS);
  for (const [k, o] of Object.entries(props.queueOverrides ?? {})) checkOverrides(`queueOverrides.${k}`, o, PROTECTED_QUEUE_PROPS);
  if (encryptionKey) allowLogsToUseKey(scope, encryptionKey);
  const alarmAction = props.alarmTopicArn
    ? new cwActions.SnsAction(sns.Topic.fromTopicArn(scope, 'AlarmTopic', props.alarmTopicArn))
    : undefined;
  return { scope, props, retain, logRetention, codeSource, logLevel, tracing, principalTenantTag, encryptionKey, overrides, alarmAction, alarms };
}

/** The shard count, the pools and the queue prefix, validated (fail at synth, not at deploy). */
export function layout(s: Sundial): { shards: number; poolProps: PoolProps[]; queuePrefix: string } {
  const { props } = s;
  const r = resources();
  const shards = props.shards ?? r.defaults.shards;
  if (!Number.isInteger(shards) || shards < 1 || shards > 65_536) {
    throw new Error(`shards must be an integer between 1 and 65536, got ${shards}`);
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
  const queuePrefix = props.queuePrefix ?? `${Stack.of(s.scope).stackName}-`;
  if (!Token.isUnresolved(queuePrefix)) {
    if (!/^[A-Za-z0-9_-]*$/.test(queuePrefix)) {
      throw new Error(`queuePrefix ${JSON.stringify(queuePrefix)} may only contain A-Z, a-z, 0-9, '-' and '_'`);
    }
    for (const p of poolProps) {
      const names = [queueName, lowQueueName, dlqName, notifyQueueName].map((f) => f(queuePrefix, p.name));
      const longest = names.reduce((a, b) => (b.length > a.length ? b : a));
      if (longest.length > 80) {
        throw new Error(`queue name ${longest} is longer than SQS's 80 characters; set a shorter queuePrefix`);
      }
    }
  }
  if (props.apiAuth.kind === 'jwt' && (!props.apiAuth.issuer || props.apiAuth.audience.length === 0)) {
    throw new Error('apiAuth jwt needs an issuer and at least one audience');
  }
  return { shards, poolProps, queuePrefix };
}

/** A log group with Sundial's retention, removal policy and key. */
export function logGroup(s: Sundial, id: string): logs.LogGroup {
  return new logs.LogGroup(s.scope, id, {
    retention: s.logRetention,
    removalPolicy: s.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    encryptionKey: s.encryptionKey,
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
function allowLogsToUseKey(scope: Construct, key: kms.IKey): void {
  const stack = Stack.of(scope);
  const groups = Lazy.list({
    produce: () =>
      scope.node
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
    Annotations.of(scope).addWarningV2(
      'sundial:kms-logs-policy',
      'encryptionKey is imported: its key policy must let the CloudWatch Logs service principal (logs.<region>.amazonaws.com) use it, or the log groups fail to create',
    );
  }
}

/**
 * Use of `encryptionKey` for reading and writing Sundial's tables and queues: exactly the KMS
 * calls DynamoDB and SQS make on the caller's behalf (SQS producers need GenerateDataKey, all
 * need Decrypt), without the `ReEncrypt*` and `GenerateDataKey*` wildcards of
 * `grantEncryptDecrypt`.
 */
export function grantKey(key: kms.IKey | undefined, grantee: iam.IGrantable): iam.Grant | undefined {
  return key?.grant(grantee, 'kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey');
}

/**
 * Records an accepted cdk-nag finding on `scope` (and everything under it) with the reason, via
 * CDK's own Validations API: the construct needs no dependency on cdk-nag, and any policy
 * validation plugin reads the same acknowledgements (test/nag.test.ts runs AwsSolutionsChecks).
 */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/** Throws when an override sets a prop the construct must own (TypeScript users get a type error first). */
function checkOverrides(what: string, overrides: object | undefined, protectedKeys: readonly string[]): void {
  for (const k of Object.keys(overrides ?? {})) {
    if (protectedKeys.includes(k)) throw new Error(`${what}.${k} cannot be overridden (the construct owns it; see the type's doc comment)`);
  }
}

export function allow(principal: iam.IGrantable, actions: string[], resourceArns: string[]): void {
  principal.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions, resources: resourceArns }));
}

export function indexArn(table: dynamodb.ITable, index: string): string {
  return `${table.tableArn}/index/${index}`;
}
