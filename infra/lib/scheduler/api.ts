/**
 * The HTTP API: the api function and the calls it makes, the HTTP API with its `$default` stage
 * (throttle, access logs), and its routes behind JWT or IAM auth.
 */
import { Duration, Lazy, Stack, Token } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer, HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { acknowledge, allow, logGroup, Sundial } from './context';
import { rustFunction } from './functions';
import { SundialPool } from './props';
import { EnvOf, tenancyOf } from './settings';

/** What the api reads and writes: both tables, both lanes of every pool, and the pools' DLQs. */
export interface ApiResources {
  readonly jobs: dynamodb.Table;
  readonly executions: dynamodb.Table;
  readonly poolQueueArns: string[];
  readonly dlqArns: string[];
}

/** The workers' log groups, for the web console's Logs Insights links by execution id. */
export function workerLogGroups(scope: Construct, pools: SundialPool[]): string {
  return pools
    .map((p) =>
      p.kind === 'lambda' && p.worker
        ? p.worker.logGroup.logGroupName
        : (scope.node.findChild(`WorkerEcs-${p.name}Logs`) as logs.LogGroup).logGroupName,
    )
    .join(',');
}

/**
 * The api function, its grants, the HTTP API and its routes. `apiId` is read once the HTTP API
 * exists: events naming another API (or none) are refused (docs/tenancy.md).
 */
export function api(
  s: Sundial,
  envOf: EnvOf,
  t: ApiResources,
  consoleLogGroups: string,
  apiId: () => string,
): { fn: lambda.Function; httpApi: apigwv2.HttpApi } {
  const apiReserved = s.props.apiReservedConcurrency ?? 50;
  if (apiReserved !== false && (!Number.isInteger(apiReserved) || apiReserved < 1)) {
    throw new Error(`apiReservedConcurrency must be a positive integer or false, got ${apiReserved}`);
  }
  const fn = rustFunction(s, 'Api', 'api', s.overrides.api, {
    timeout: Duration.seconds(29),
    memorySize: 256,
    environment: envOf('api', {
      consoleLogGroups,
      // Events naming another API (or none) are refused (docs/tenancy.md): set once the API exists.
      apiId: Lazy.string({ produce: apiId }),
    }),
    description: 'Sundial HTTP API',
    reservedConcurrentExecutions: apiReserved === false ? undefined : apiReserved,
  });
  grantApi(s, fn, t);
  const { httpApi, stage } = httpApiWithStage(s);
  throttlePublicRoutes(s, stage, apiRoutes(s, httpApi, fn));
  acknowledgeIndexReads(s, fn, [t.jobs, t.executions]);
  return { fn, httpApi };
}

function grantApi(s: Sundial, fn: lambda.Function, t: ApiResources): void {
  // Tenant scoping is enforced in the api code: every key it builds starts with T#{tenant}#,
  // and the tenant comes from the verified JWT claims or IAM principal. IAM's
  // dynamodb:LeadingKeys cannot express that (the role is shared by all tenants), so the
  // grant is table-level but limited to item reads/writes: no Scan, no DeleteItem, no admin.
  // The list of every call it makes is proven by infra/test/iam.test.ts from the test suite's
  // recording (sundial_core::access): BatchGetItem reads the definitions of a jobs page.
  const tables = [t.jobs, t.executions];
  allow(
    fn,
    ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem', 'dynamodb:Query'],
    tables.map((x) => x.tableArn),
  );
  // Trigger-now, backfill and dead-letter replay create READY executions and send them to their
  // pool's queue; without this they would answer 500 and leave the executions to the reconciler.
  // GetQueueAttributes: lane depths, the back-pressure signal behind 429 `saturated`.
  allow(fn, ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], t.poolQueueArns);
  // GET /v1/pools (operators): each pool's dead letters are counted too, read-only.
  allow(fn, ['sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], t.dlqArns);
  if (tenancyOf(s.props.apiAuth) === 'iam-principal-tag') grantTagReads(s, fn);
  allow(fn, ['dynamodb:Query'], tables.map((x) => `${x.tableArn}/index/*`));
  // Quota counters (T#{tenant}#QUOTA) and Idempotency-Key records (T#{tenant}#IDEM#{key}) go
  // back to nothing when a request is refused: DeleteItem, but only of those items; and an
  // operator deletes a resource limit (RESOURCES, docs/resources.md).
  fn.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['dynamodb:DeleteItem'],
      resources: [t.jobs.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['T#*#QUOTA', 'T#*#IDEM#*', 'RESOURCES'] } },
    }),
  );
}

/** The caller's tenant is the tag on its role or user (functions/api/src/auth.rs). */
function grantTagReads(s: Sundial, fn: lambda.Function): void {
  const stack = Stack.of(s.scope);
  allow(fn, ['iam:ListRoleTags'], [stack.formatArn({ service: 'iam', region: '', resource: 'role', resourceName: '*' })]);
  allow(fn, ['iam:ListUserTags'], [stack.formatArn({ service: 'iam', region: '', resource: 'user', resourceName: '*' })]);
  const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  for (const kind of ['role', 'user']) {
    acknowledge(
      fn.role!,
      `AwsSolutions-IAM5[Resource::arn:${partition}:iam::${account}:${kind}/*]`,
      `Any ${kind} of the account may call the API; its tenant is its sundial-tenant tag, so the api reads the tags (List${kind === 'role' ? 'Role' : 'User'}Tags only, a read of tags) of whichever ${kind} signed the request.`,
    );
  }
}

/** The HTTP API and its `$default` stage: the throttle of all callers, JSON access logs. */
function httpApiWithStage(s: Sundial): { httpApi: apigwv2.HttpApi; stage: apigwv2.HttpStage } {
  const httpApi = new apigwv2.HttpApi(s.scope, 'HttpApi', { description: 'Sundial API', createDefaultStage: false });
  const accessLogs = logGroup(s, 'ApiAccessLogs');
  const stage = new apigwv2.HttpStage(s.scope, 'HttpApiDefaultStage', {
    httpApi,
    stageName: '$default',
    autoDeploy: true,
    throttle: { rateLimit: s.props.apiThrottle?.rateLimit ?? 100, burstLimit: s.props.apiThrottle?.burstLimit ?? 200 },
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
  return { httpApi, stage };
}

/** The route keys of the routes without an authorizer (`apiRoutes`). */
const PUBLIC_ROUTE_KEYS = ['GET /openapi.json', 'GET /console', 'GET /console/{file}'];

/**
 * A route-level throttle for the public routes (`apiThrottle.publicRoutes`): anyone can call
 * them, so a flood of them is refused at their own limit rather than at the stage default that
 * every tenant's requests go through. CloudFormation refuses route settings that name a route
 * not yet created, so the stage waits for the routes.
 */
function throttlePublicRoutes(s: Sundial, stage: apigwv2.HttpStage, routes: apigwv2.HttpRoute[]): void {
  const p = s.props.apiThrottle?.publicRoutes ?? {};
  const limit = (what: string, v: number, integer: boolean) => {
    if (!Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
      throw new Error(`apiThrottle.publicRoutes.${what} must be a${integer ? ' whole' : ''} number of at least 0, got ${v}`);
    }
    return v;
  };
  const settings = { ThrottlingRateLimit: limit('rateLimit', p.rateLimit ?? 10, false), ThrottlingBurstLimit: limit('burstLimit', p.burstLimit ?? 20, true) };
  (stage.node.defaultChild as apigwv2.CfnStage).routeSettings = Object.fromEntries(PUBLIC_ROUTE_KEYS.map((k) => [k, settings]));
  stage.node.addDependency(...routes);
}

/**
 * Every route to the api function: all behind the authorizer but the public documents, which
 * it returns (their keys are `PUBLIC_ROUTE_KEYS`).
 */
function apiRoutes(s: Sundial, httpApi: apigwv2.HttpApi, fn: lambda.Function): apigwv2.HttpRoute[] {
  const auth = s.props.apiAuth;
  const integration = new HttpLambdaIntegration('ApiIntegration', fn);
  const authorizer =
    auth.kind === 'jwt'
      ? new HttpJwtAuthorizer('JwtAuthorizer', auth.issuer, { jwtAudience: auth.audience })
      : new HttpIamAuthorizer();
  httpApi.addRoutes({ path: '/{proxy+}', methods: [apigwv2.HttpMethod.ANY], integration, authorizer });
  // The OpenAPI document is public so clients can discover the API before they hold a token.
  const openapi = httpApi.addRoutes({ path: '/openapi.json', methods: [apigwv2.HttpMethod.GET], integration });
  for (const route of openapi) {
    acknowledge(route, 'AwsSolutions-APIG4', 'GET /openapi.json is public by design: the OpenAPI document describes the API and holds no tenant data; every other route needs JWT or IAM auth.');
  }
  // The web console's static files (docs/console.md) are public too: the same bytes for
  // everyone, no tenant data; the page then calls the /v1 routes above with the user's token.
  const consoleRoutes = [
    ...httpApi.addRoutes({ path: '/console', methods: [apigwv2.HttpMethod.GET], integration }),
    ...httpApi.addRoutes({ path: '/console/{file}', methods: [apigwv2.HttpMethod.GET], integration }),
  ];
  for (const route of consoleRoutes) {
    acknowledge(route, 'AwsSolutions-APIG4', 'GET /console and /console/{file} are public by design: the web console\'s static files and its sign-in settings hold no tenant data; every data call goes to a /v1 route, which needs JWT or IAM auth.');
  }
  return [...openapi, ...consoleRoutes];
}

/**
 * The api reads every index of its own two tables (jobs: due, by_tenant; executions:
 * attention, open, ...): `index/*` under those two table ARNs, nothing else.
 */
function acknowledgeIndexReads(s: Sundial, fn: lambda.Function, tables: dynamodb.Table[]): void {
  for (const t of tables) {
    acknowledge(
      fn.role!,
      `AwsSolutions-IAM5[Resource::<${Stack.of(s.scope).getLogicalId(t.node.defaultChild as dynamodb.CfnTable)}.Arn>/index/*]`,
      'The api queries the indexes of its own table only; index/* is scoped to that table ARN (resources.json lists them).',
    );
  }
}
