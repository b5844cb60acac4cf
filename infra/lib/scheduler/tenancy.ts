/**
 * Tenancy (docs/tenancy.md): the tenant access role through which workers reach tenants'
 * targets, and the guardrail statements that keep tenant principals away from Sundial itself.
 */
import { Arn, ArnFormat, Duration, Stack, Token } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { acknowledge, allow } from './context';
import { SundialSchedulerProps } from './props';

/** The tag that names a target's tenant, and the session tag of the tenant access role (docs/tenancy.md). */
export const TENANT_TAG_KEY = 'sundial-tenant';

/**
 * The tenant access role (issue 28; docs/tenancy.md). Workers assume it with the session tag
 * `sundial-tenant=<tenant>` of the execution they run and call its target only through that
 * session, so AWS itself refuses a secret, function or queue tagged for another tenant (or not
 * tagged at all): attribute-based access control, every statement conditioned on
 * `aws:ResourceTag/sundial-tenant` = `${aws:PrincipalTag/sundial-tenant}`. The trust policy
 * admits the stack's worker roles only, and only with exactly that session tag. No
 * `allowedTarget*Arns`: a role with no statement (deny by default).
 *
 * `workers`: the roles that assume it. The workers call targets as the tenant; the reconciler
 * delivers the outcome notifications a worker left behind (docs/outcomes.md), as the tenant too.
 */
export function tenantAccess(scope: Construct, props: SundialSchedulerProps, workers: iam.IRole[]): iam.Role {
  const role = new iam.Role(scope, 'TenantAccessRole', {
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
  // The ownership check reads the tags with ListTags: GetFunction's `Tags` is left out for a
  // caller without an explicit allow of lambda:ListTags. Tags belong to the unqualified function.
  grant(['lambda:ListTags'], fns);
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
  grantEcsTargets(role, props, tenantOwned);
  grant(['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'], props.allowedTargetSecretArns ?? []);
  return role;
}

/**
 * The `ecs` targets' grants on the tenant access role (docs/tenancy.md): exactly what
 * functions/core/src/execution/target/ecs.rs calls, and what `RunTask` authorizes besides
 * itself, as the Service Authorization Reference for Amazon ECS lists them:
 * - `ecs:RunTask` on the families' revisions (resource type task-definition, whose ARN always
 *   names a revision: a family ARN matches no request, and a target names a revision), their
 *   `sundial-tenant` tag the session's, `ecs:cluster` an allowed cluster;
 * - `ecs:TagResource` on the new task, only within `RunTask` (`ecs:CreateAction`) and only with
 *   the session's own tenant as the `sundial-tenant` value (`aws:RequestTag`): the worker tags the
 *   task `sundial-tenant=<tenant>` at `RunTask`, which ECS authorizes as `ecs:TagResource`;
 * - `iam:PassRole` on the task definitions' task and execution roles, to `ecs-tasks.amazonaws.com`;
 * - `ecs:DescribeTasks`, `ecs:StopTask` on the clusters' tasks (resource type task,
 *   `task/<cluster name>/<id>`), their `sundial-tenant` tag (set at RunTask) the session's;
 * - `ecs:ListTasks` (adopting a takeover's task): its resource type is container-instance,
 *   which a Fargate task has none of, so `*` with `ecs:cluster` an allowed cluster;
 * - `ecs:ListTagsForResource` (the ownership check reads the task definition's tag): on the
 *   families' revisions (resource type task-definition, `task-definition/<family>:<revision>`;
 *   a target names one revision), their `sundial-tenant` tag the session's (the reference lists
 *   `aws:ResourceTag/${TagKey}` for it). Not `ecs:DescribeTaskDefinition`, which has no
 *   resource type: it would need `*`, every task definition of the account.
 * No statement without both clusters and task definitions (deny by default).
 */
function grantEcsTargets(role: iam.Role, props: SundialSchedulerProps, tenantOwned: Record<string, Record<string, string>>): void {
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
  role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:RunTask'], resources: revisions, conditions: { ...tenantOwned, ...inClusters } }));
  role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:DescribeTasks', 'ecs:StopTask'], resources: tasks, conditions: tenantOwned }));
  role.addToPolicy(
    new iam.PolicyStatement({
      actions: ['ecs:TagResource'],
      resources: tasks,
      conditions: { StringEquals: { 'ecs:CreateAction': 'RunTask', [`aws:RequestTag/${TENANT_TAG_KEY}`]: `\${aws:PrincipalTag/${TENANT_TAG_KEY}}` } },
    }),
  );
  role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:ListTasks'], resources: ['*'], conditions: inClusters }));
  role.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:ListTagsForResource'], resources: revisions, conditions: tenantOwned }));
  if (passRoles.length > 0) {
    passRoles.forEach((a) => checkPassRole(a, Stack.of(role)));
    // Only a role tagged for the session's tenant: tenant B cannot run its task definition with
    // tenant A's task role (review N4). IAM reads the passed role's tags for aws:ResourceTag.
    const toEcsTasks = { StringEquals: { ...tenantOwned.StringEquals, 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } };
    role.addToPolicy(new iam.PolicyStatement({ actions: ['iam:PassRole'], resources: passRoles, conditions: toEcsTasks }));
  }
  acknowledgeEcsTargets(role, revisions, tasks);
}

function acknowledgeEcsTargets(role: iam.Role, revisions: string[], tasks: string[]): void {
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
      'Tasks of an allowed cluster (allowedTargetEcsClusterArns): their ids are made by RunTask; DescribeTasks and StopTask need the tenant tag the task got at RunTask, TagResource is allowed only within RunTask (ecs:CreateAction) with the tenant tag of the session.',
    );
  }
}

/**
 * The tenant access role may never pass a role of the construct (a worker's task role could
 * assume the tenant access role as any tenant): an explicit Deny of `iam:PassRole` on each, over
 * whatever `allowedTargetEcsPassRoleArns` allows. Called once the construct has made every role.
 */
export function denyPassingOwnRoles(scope: Construct, role: iam.Role): void {
  const own = scope.node.findAll().filter((c): c is iam.Role => c instanceof iam.Role);
  role.addToPolicy(new iam.PolicyStatement({ effect: iam.Effect.DENY, actions: ['iam:PassRole'], resources: own.map((r) => r.roleArn) }));
}

/**
 * Refuses a pass-role ARN (or glob) that is not an IAM role's, or that could name a role of
 * this stack: CloudFormation names the construct's roles `<stackName>-<logical id>-<suffix>`, so
 * a glob whose name part can start that way (`role/*`, `role/<stackName>-*`, `role/*-task`) is
 * refused, unless it names another account than the stack's. List the tenants' task roles by a
 * prefix or path of their own (`role/tenants/*`). The tenant access role's Deny on the exact
 * ARNs (`denyPassingOwnRoles`) holds whatever this lets through.
 */
function checkPassRole(arn: string, stack: Stack): void {
  const prop = 'allowedTargetEcsPassRoleArns';
  if (Token.isUnresolved(arn)) return;
  const m = /^arn:[^:]+:iam::([^:]*):role\/(.+)$/.exec(arn);
  if (!m) throw new Error(`${prop}: ${JSON.stringify(arn)} is not an IAM role ARN or ARN glob (arn:<partition>:iam::<account>:role/<name>)`);
  const [, account, name] = m;
  if (/^\d{12}$/.test(account) && !Token.isUnresolved(stack.account) && account !== stack.account) return;
  const literal = name.split(/[*?]/)[0];
  const own = `${stack.stackName}-`;
  const canName = Token.isUnresolved(stack.stackName)
    ? literal.length < name.length && literal === ''
    : literal.startsWith(own) || (literal.length < name.length && own.startsWith(literal));
  if (canName) {
    throw new Error(
      `${prop}: ${JSON.stringify(arn)} can name the roles of this stack (CloudFormation names them ${own}…), whose credentials act as any tenant; list the tenants' task roles by a name prefix or path of their own, e.g. arn:aws:iam::<account>:role/tenants/*`,
    );
  }
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

/** What the guardrail names besides the construct's own functions, tables, queues, roles and log groups. */
export interface GuardrailScope {
  /** The IAM tag that names an API caller's tenant. */
  readonly principalTenantTag: string;
  /** That tag and the tenant access role's session tag: the keys no tenant may set. */
  readonly tenantTagKeys: string[];
  readonly eventBus: events.IEventBus;
  readonly tenantBuses: Record<string, events.EventBus>;
  readonly tenantRules: events.Rule[];
  readonly encryptionKey?: kms.IKey;
  readonly tenantAccessRole: iam.Role;
}

/** `SundialScheduler.tenantGuardrailStatements` (its doc comment says what each statement denies). */
export function guardrailStatements(scope: Construct, g: GuardrailScope, options: { readonly onlyTaggedPrincipals?: boolean }): iam.PolicyStatement[] {
  const all = scope.node.findAll();
  const functionArns = all.filter((c): c is lambda.Function => c instanceof lambda.Function).flatMap((f) => [f.functionArn, `${f.functionArn}:*`]);
  const tableArns = all.filter((c): c is dynamodb.Table => c instanceof dynamodb.Table).flatMap((t) => [t.tableArn, `${t.tableArn}/*`]);
  const queueArns = all.filter((c): c is sqs.Queue => c instanceof sqs.Queue).map((q) => q.queueArn);
  const roleArns = all.filter((c): c is iam.Role => c instanceof iam.Role).map((r) => r.roleArn);
  const logGroupArns = all.filter((c): c is logs.LogGroup => c instanceof logs.LogGroup).map((lg) => lg.logGroupArn);
  const principal = options.onlyTaggedPrincipals ? { Null: { [`aws:PrincipalTag/${g.principalTenantTag}`]: 'false' } } : undefined;
  const deny = (sid: string, actions: string[], resources: string[], conditions?: Record<string, unknown>) =>
    new iam.PolicyStatement({ sid, effect: iam.Effect.DENY, actions, resources, conditions: { ...principal, ...conditions } });
  const tagKeys = { 'ForAnyValue:StringEquals': { 'aws:TagKeys': g.tenantTagKeys } };
  // The tenant access role's session carries the tenant tag (so an SCP's tagged-principal scope
  // takes it in) and tags the tasks it runs with it: RunTask tags the task
  // `sundial-tenant=<tenant>`, which ECS authorizes as ecs:TagResource.
  const notTenantSession = { ArnNotEquals: { 'aws:PrincipalArn': g.tenantAccessRole.roleArn } };
  return [
    deny('SundialFunctions', ['lambda:*'], functionArns),
    deny('SundialEventSourceMappings', ['lambda:CreateEventSourceMapping', 'lambda:UpdateEventSourceMapping', 'lambda:DeleteEventSourceMapping'], ['*'], {
      ArnLike: { 'lambda:FunctionArn': functionArns },
    }),
    deny('SundialTables', ['dynamodb:*'], tableArns),
    deny('SundialQueues', ['sqs:*'], queueArns),
    deny('SundialEventBus', ['events:*'], [g.eventBus.eventBusArn]),
    deny('SundialLogs', ['logs:*'], logGroupArns),
    // The tenants' buses (eventSources): a tenant may put events on its own bus and do nothing
    // else to any (its rule and its bus policy are the construct's), nor put on another's.
    ...(g.tenantRules.length + Object.keys(g.tenantBuses).length > 0
      ? [
          new iam.PolicyStatement({
            sid: 'SundialTenantBusesAdmin',
            effect: iam.Effect.DENY,
            notActions: ['events:PutEvents'],
            resources: [...Object.values(g.tenantBuses).map((b) => b.eventBusArn), ...g.tenantRules.map((r) => r.ruleArn)],
            conditions: principal,
          }),
          // One statement per bus (Sids by position: tenant ids may differ only in '-' or '_').
          ...Object.entries(g.tenantBuses).map(([tenant, bus], i) =>
            deny(`SundialTenantBus${i}`, ['events:PutEvents'], [bus.eventBusArn], {
              StringNotEquals: { [`aws:PrincipalTag/${g.principalTenantTag}`]: tenant },
            }),
          ),
        ]
      : []),
    ...(g.encryptionKey ? [deny('SundialKey', ['kms:*'], [g.encryptionKey.keyArn])] : []),
    deny('SundialRoles', ['iam:*'], roleArns),
    deny('SundialAssumeRoles', ['sts:AssumeRole', 'sts:TagSession', 'sts:SetSourceIdentity'], [g.tenantAccessRole.roleArn, ...roleArns.filter((a) => a !== g.tenantAccessRole.roleArn)]),
    deny('SundialTenantTagOfPrincipals', ['iam:TagRole', 'iam:UntagRole', 'iam:TagUser', 'iam:UntagUser', 'iam:CreateRole', 'iam:CreateUser'], ['*'], tagKeys),
    // Tag at creation included: every action here takes aws:TagKeys, which holds the key of
    // every tag the request carries (aws:RequestTag/<key> present implies it), so one statement
    // covers both; the managed policy must stay within IAM's 6,144 characters.
    deny('SundialTenantTagOfTargets', TARGET_TAGGING, ['*'], { ...tagKeys, ...notTenantSession }),
  ];
}

/** Which guardrail policy (`tenantGuardrailPolicies`) holds a statement, by its Sid. */
const GUARDRAIL_PARTS: Array<{ part: string; sids: RegExp }> = [
  { part: 'Functions', sids: /^Sundial(Functions|EventSourceMappings)$/ },
  { part: 'Data', sids: /^Sundial(Tables|Queues|EventBus|Logs|TenantBus.*|Key)$/ },
  { part: 'Identity', sids: /^Sundial(Roles|AssumeRoles|TenantTagOf.*)$/ },
];

/** The guardrail statements by part, each statement in exactly one (a new Sid must be given one). */
export function guardrailParts(statements: iam.PolicyStatement[]): Array<{ part: string; statements: iam.PolicyStatement[] }> {
  for (const st of statements) {
    const n = GUARDRAIL_PARTS.filter((p) => p.sids.test(st.sid ?? '')).length;
    if (n !== 1) throw new Error(`guardrail statement ${st.sid} belongs to ${n} policies, not one (GUARDRAIL_PARTS)`);
  }
  return GUARDRAIL_PARTS.map(({ part, sids }) => ({ part, statements: statements.filter((st) => sids.test(st.sid ?? '')) }));
}

/**
 * Every action that sets or removes the tag a target's tenant is judged by, for each kind the
 * worker's ownership check reads (functions/core/src/execution/target/identity.rs `Kind`; a test
 * keeps the two lists together): tagging, untagging, and creating with tags, which the services
 * authorize with `aws:TagKeys` and `aws:RequestTag`. ECS: task definitions, the clusters tasks run
 * on, and tasks (RunTask and StartTask tags are authorized as `ecs:TagResource`).
 */
const TARGET_TAGGING = [
  'secretsmanager:TagResource', 'secretsmanager:UntagResource', 'secretsmanager:CreateSecret',
  'lambda:TagResource', 'lambda:UntagResource', 'lambda:CreateFunction',
  'sqs:TagQueue', 'sqs:UntagQueue', 'sqs:CreateQueue',
  'events:TagResource', 'events:UntagResource', 'events:CreateEventBus',
  'sns:TagResource', 'sns:UntagResource', 'sns:CreateTopic',
  'states:TagResource', 'states:UntagResource', 'states:CreateStateMachine',
  'ecs:TagResource', 'ecs:UntagResource', 'ecs:RegisterTaskDefinition', 'ecs:CreateCluster',
];
