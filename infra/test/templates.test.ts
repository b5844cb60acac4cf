/**
 * Golden templates: the synthesized template of the example app (bin/app.ts) and of a handful of
 * prop sets that together take every branch of the construct, compared byte for byte with the
 * files under test/golden/. A change to the construct that is meant to leave its output alone
 * (a refactor) must leave these files alone; a change that is meant to change it shows up as a
 * diff of the golden files in review.
 *
 *   node --import tsx --test test/templates.test.ts            compare
 *   BLESS=1 node --import tsx --test test/templates.test.ts    rewrite the golden files
 *
 * Each case has two files: `<name>.template.json`, the CloudFormation template, and
 * `<name>.annotations.json`, the synth warnings and errors and the acknowledged cdk-nag findings
 * (CDK's Validations metadata) by construct path, which the template does not show but which
 * belong to the construct's output all the same (test/nag.test.ts reads them).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { App, AssetHashType, Duration, Stack, StackProps, Validations } from 'aws-cdk-lib';
import { ArtifactMetadataEntryType } from 'aws-cdk-lib/cloud-assembly-schema';
import * as cxapi from 'aws-cdk-lib/cx-api';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { SundialCode } from '../lib/code';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';
import { CDK_JSON_CONTEXT, fakeAssetsDir, JWT_PROPS } from './helpers';

const INFRA = path.resolve(__dirname, '..');
const REPO = path.resolve(INFRA, '..');
const GOLDEN = path.join(__dirname, 'golden');
const BLESS = process.env.BLESS === '1';

/** A synthesized cloud assembly's directory and the stack to read from it. */
interface Synthesized {
  readonly dir: string;
  readonly stackName: string;
}

/**
 * What bin/app.ts builds, by running it (not a copy of it) the way the CLI does: the context of
 * cdk.json in CDK_CONTEXT_JSON, the assembly to CDK_OUTDIR. No CDK_DEFAULT_ACCOUNT/REGION, so
 * the stack is environment-agnostic whatever credentials the machine has; the CLI's own context
 * (path and asset metadata, version reporting) is left out, as it adds the absolute paths of the
 * machine to the template. test/synth.test.ts runs the CLI itself.
 */
function synthApp(): Synthesized {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sundial-golden-app-'));
  const env: NodeJS.ProcessEnv = { ...process.env, CDK_OUTDIR: dir, CDK_CONTEXT_JSON: JSON.stringify(CDK_JSON_CONTEXT) };
  delete env.CDK_DEFAULT_ACCOUNT;
  delete env.CDK_DEFAULT_REGION;
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'bin/app.ts'], { cwd: INFRA, env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(res.status, 0, `bin/app.ts failed (${res.status}):\n${res.stdout}\n${res.stderr}`);
  return { dir, stackName: 'Sundial' };
}

/** One stack made by `make`, synthesized in this process with the app's feature flags (cdk.json). */
function synthStack(
  stackName: string,
  make: (stack: Stack) => void,
  opts: { readonly stackProps?: StackProps; readonly context?: Record<string, unknown> } = {},
): Synthesized {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sundial-golden-'));
  const app = new App({ builtinCloudFormationValidation: false, outdir: dir, context: { ...CDK_JSON_CONTEXT, ...opts.context } });
  make(new Stack(app, stackName, opts.stackProps));
  app.synth();
  return { dir, stackName };
}

const scheduler = (props: SundialSchedulerProps) => (stack: Stack) => {
  new SundialScheduler(stack, 'Sundial', { assetsDir: fakeAssetsDir(), ...props });
};

/** Account and region of the cases with a concrete environment (ARNs with literal parts). */
const ENV = { account: '123456789012', region: 'eu-west-1' };
const ARN = {
  function: 'arn:aws:lambda:eu-west-1:123456789012:function:report-builder',
  queue: 'arn:aws:sqs:eu-west-1:123456789012:outbox',
  bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/acme-*',
  topic: 'arn:aws:sns:eu-west-1:123456789012:acme-*',
  machine: 'arn:aws:states:eu-west-1:123456789012:stateMachine:settle',
  cluster: 'arn:aws:ecs:eu-west-1:123456789012:cluster/batch',
  family: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/report',
  taskRole: 'arn:aws:iam::123456789012:role/report-task',
  secrets: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:sundial-webhooks/*',
  sourceQueue: 'arn:aws:sqs:eu-west-1:111111111111:acme-files',
};

/**
 * The cases. Between them: JWT, IAM principal-tag and IAM account auth; Lambda pools (batching
 * window, low-lane cap, memory, alarm thresholds) and ECS pools (own VPC or a given one, image
 * from the assets or given, with and without autoscaling, slots and grace); on-demand and
 * provisioned tables (the planner); every allowedTarget* grant, ECS pass roles included;
 * tenant queue and tenant bus event sources; an in-stack and an imported KMS key; tracing;
 * toolkit tables with and without a prefix; table, function and queue overrides (a function in
 * a VPC, a named worker); the guardrail policy; every settings prop; and code built from
 * source (cargo-lambda-cdk, bundling skipped).
 */
const CASES: Record<string, () => Synthesized> = {
  // bin/app.ts with no context: IAM auth by principal tag, the default pools, the placeholders.
  app: synthApp,

  // The props most tests build (test/helpers.ts): JWT auth, two Lambda pools, an alarm topic.
  jwt: () => synthStack('SundialTest', scheduler(JWT_PROPS)),

  // test/iam.test.ts's set, every target kind and event source, in a concrete environment.
  targets: () =>
    synthStack(
      'SundialTargets',
      (stack) =>
        scheduler({
          apiAuth: { kind: 'jwt', issuer: 'https://issuer.example.com/', audience: ['sundial-api'] },
          pools: [{ name: 'default' }, { name: 'bulk' }, { name: 'long', kind: 'ecs', runTimeout: Duration.minutes(30) }],
          allowedTargetFunctionArns: [ARN.function],
          allowedTargetQueueArns: [ARN.queue],
          allowedTargetEventBusArns: [ARN.bus],
          allowedTargetTopicArns: [ARN.topic],
          allowedTargetStateMachineArns: [ARN.machine],
          allowedTargetEcsClusterArns: [ARN.cluster],
          allowedTargetTaskDefinitionArns: [ARN.family],
          allowedTargetEcsPassRoleArns: [ARN.taskRole],
          allowedTargetSecretArns: [ARN.secrets],
          tableCapacity: { mode: 'provisioned', writeCapacity: 5, readCapacity: 5 },
          eventSources: [
            { tenant: 'acme', queue: sqs.Queue.fromQueueArn(stack, 'SourceQueue', ARN.sourceQueue) },
            { tenant: 'acme', bus: { accounts: ['222222222222'] } },
          ],
        })(stack),
      { stackProps: { env: ENV } },
    ),

  // test/nag.test.ts's "every option on", with overrides and the guardrail policy.
  options: () =>
    synthStack(
      'SundialOptions',
      (stack) => {
        const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
        const vpc = new ec2.Vpc(stack, 'Net', { maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }] });
        new SundialScheduler(stack, 'Sundial', {
          assetsDir: fakeAssetsDir(),
          apiAuth: { kind: 'iam', tenantTag: 'team' },
          pools: [
            { name: 'default', maxConcurrency: 20 },
            { name: 'long', kind: 'ecs', maxConcurrency: 4, runTimeout: Duration.hours(2) },
          ],
          vpc,
          encryptionKey: key,
          tracing: true,
          toolkitTables: true,
          tableOverrides: { all: { contributorInsightsSpecification: { enabled: true } }, executions: { deletionProtection: false } },
          functionOverrides: { all: { memorySize: 1024 }, api: { vpc, allowPublicSubnet: true, description: 'our api' } },
          queueOverrides: { queues: { receiveMessageWaitTime: Duration.seconds(20) }, dlqs: { maxMessageSizeBytes: 65536 } },
          allowedTargetFunctionArns: [ARN.function],
          allowedTargetSecretArns: [ARN.secrets],
          eventSources: [
            { tenant: 'acme', queue: sqs.Queue.fromQueueArn(stack, 'AcmeFiles', ARN.sourceQueue) },
            { tenant: 'globex', bus: { accounts: ['222222222222', '333333333333'], eventPattern: { source: ['globex.orders'] } } },
          ],
          alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops',
        }).tenantGuardrailPolicy();
      },
      { stackProps: { env: ENV } },
    ),

  // Every settings prop away from its default, an imported key, a given ECS image.
  settings: () =>
    synthStack('SundialSettings', (stack) =>
      scheduler({
        apiAuth: { kind: 'jwt', issuer: 'https://issuer.example.com/', audience: ['a', 'b'] },
        consoleClientId: 'console-client',
        tenantClaim: 'custom:tenant',
        pools: [
          {
            name: 'default',
            maxConcurrency: 30,
            lowMaxConcurrency: 4,
            runTimeout: Duration.minutes(5),
            memorySize: 512,
            batchingWindow: Duration.seconds(3),
            queueAgeAlarmThreshold: Duration.minutes(2),
            lowLaneAgeAlarmThreshold: Duration.hours(1),
          },
          {
            name: 'long',
            kind: 'ecs',
            minTasks: 2,
            maxConcurrency: 6,
            cpu: 512,
            memoryLimitMiB: 1024,
            slots: 32,
            shutdownGrace: Duration.seconds(60),
            runTimeout: Duration.hours(1),
          },
        ],
        ecsImage: ecs.ContainerImage.fromRegistry('example/worker-ecs:1'),
        shards: 64,
        queuePrefix: 'acme-',
        tableNamePrefix: 'prod-',
        toolkitTables: { namePrefix: 'acme-toolkit-' },
        eventBusName: 'acme-sundial-events',
        retainData: false,
        logRetention: logs.RetentionDays.ONE_WEEK,
        logLevel: lambda.ApplicationLogLevel.DEBUG,
        scheduleLagAlarmThresholdMs: 2000,
        encryptionKey: kms.Key.fromKeyArn(stack, 'ImportedKey', 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555'),
        tick: { inProcessMaxShards: 64, shardsPerScan: 32, catchUpGlobal: 100, catchUpPerTenant: 10, fairQueues: false, reservedConcurrency: { tick: 3, scan: 5 } },
        workers: {
          lease: Duration.minutes(2),
          skewMargin: Duration.seconds(5),
          maxTotalRun: Duration.hours(1),
          tenantMaxRunning: { default: 5, tenants: { acme: 10 } },
        },
        privateTargetCidrs: ['10.1.0.0/16', 'fd12::/16'],
        tenantTargets: {
          acme: {
            lambda: ['arn:aws:lambda:*:*:function:acme-*'],
            http: ['*.acme.com'],
            pools: ['default'],
            cidrs: ['10.1.0.0/16'],
            ecsSubnets: ['subnet-0aa*'],
            ecsSecurityGroups: ['sg-0123456789abcdef0'],
            ecsPublicIp: false,
          },
          '*': { http: ['*'] },
        },
        tenantRoles: { globex: 'arn:aws:iam::444444444444:role/sundial-globex' },
        quotas: { maxJobs: 50, minIntervalSecs: 60, apiExecutionsPerMinute: 100, triggersPerMinute: 5, executionsPerHour: 5000, tenantRequestsPerSecond: 0 },
        operatorTenants: ['ops', 'sre'],
        apiThrottle: { rateLimit: 10, burstLimit: 20, publicRoutes: { rateLimit: 5, burstLimit: 10 } },
        apiReservedConcurrency: 20,
        backpressure: { deferDepth: 500, deferSecs: 90, saturatedDepth: 9000 },
        functionOverrides: { workers: { functionName: 'acme-sundial-worker' } },
      })(stack),
    ),

  // IAM auth with the account as the tenant, nothing reserved.
  account: () =>
    synthStack(
      'SundialAccount',
      scheduler({ apiAuth: { kind: 'iam', tenancy: 'account' }, apiReservedConcurrency: false, tick: { reservedConcurrency: false } }),
    ),

  // Code from the Rust workspace (RustFunction); bundling skipped for every stack, as in
  // test/library.test.ts, so nothing compiles. A skipped bundling hashes the whole workspace
  // directory, which changes with every file in it (an emulator's log written while the suite
  // runs, a build directory): the asset hash is given, so the golden file holds the template's
  // shape, not the tree's contents.
  source: () =>
    synthStack(
      'SundialSource',
      (stack) => {
        new SundialScheduler(stack, 'Sundial', {
          ...JWT_PROPS,
          code: SundialCode.fromSource({
            manifestPath: path.join(REPO, 'Cargo.toml'),
            bundling: { assetHashType: AssetHashType.CUSTOM, assetHash: 'golden-source' },
          }),
          pools: [{ name: 'default' }, { name: 'long', kind: 'ecs' }],
          ecsImage: ecs.ContainerImage.fromRegistry('example/worker-ecs:1'),
        });
      },
      { context: { 'aws:cdk:bundling-stacks': [] } },
    ),
};

/**
 * Machine-specific strings made stable: the absolute paths of this checkout (the placeholder
 * warnings name the bootstrap files) and of the per-run temporary assets directory
 * (fakeAssetsDir). The templates hold neither today; the replacement applies to them too so a
 * future path shows up as `<infra>`/`<assets>` in a diff rather than as a machine's home.
 */
function normalize(text: string): string {
  return text
    .split(fakeAssetsDir()).join('<assets>').split(INFRA).join('<infra>').split(REPO).join('<repo>')
    // a RustFunction's asset hash mixes in its bundling command, which names the checkout's
    // absolute path: the same commit hashes differently in another clone
    .replace(/"S3Key": "[0-9a-f]{64}\.zip"/g, '"S3Key": "<asset>.zip"');
}

const ANNOTATION_TYPES: string[] = [
  ArtifactMetadataEntryType.WARN,
  ArtifactMetadataEntryType.ERROR,
  ArtifactMetadataEntryType.INFO,
  Validations.ACKNOWLEDGED_RULES_METADATA_KEY,
];

/** The files of one case: the template, and the annotations by construct path (stack traces left out). */
function render(s: Synthesized): { template: string; annotations: string } {
  try {
    const stack = new cxapi.CloudAssembly(s.dir).getStackByName(s.stackName);
    const annotations: Array<{ path: string; type: string; data: unknown }> = [];
    for (const [p, entries] of Object.entries(stack.metadata)) {
      for (const e of entries) if (ANNOTATION_TYPES.includes(e.type)) annotations.push({ path: p, type: e.type, data: e.data });
    }
    return {
      template: normalize(`${JSON.stringify(stack.template, null, 1)}\n`),
      annotations: normalize(`${JSON.stringify(annotations, null, 1)}\n`),
    };
  } finally {
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
}

/** The first line where two texts differ, with a little context, for the failure message. */
function firstDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  const i = a.findIndex((line, k) => line !== b[k]);
  const at = i === -1 ? Math.min(a.length, b.length) : i;
  const around = (lines: string[]) => lines.slice(Math.max(0, at - 3), at + 4).join('\n');
  return `first difference at line ${at + 1}\n--- golden\n${around(a)}\n--- now\n${around(b)}`;
}

function compare(file: string, actual: string): void {
  const golden = path.join(GOLDEN, file);
  if (BLESS) {
    fs.mkdirSync(GOLDEN, { recursive: true });
    fs.writeFileSync(golden, actual);
    return;
  }
  assert.ok(fs.existsSync(golden), `${path.relative(INFRA, golden)} is missing: run with BLESS=1 to write it`);
  const expected = fs.readFileSync(golden, 'utf8');
  if (expected !== actual) {
    assert.fail(`${file} differs from the golden file (BLESS=1 rewrites it if the change is meant):\n${firstDifference(expected, actual)}`);
  }
}

describe('golden templates', () => {
  for (const [name, synth] of Object.entries(CASES)) {
    it(`${name}: the template and annotations are the golden files`, () => {
      const out = render(synth());
      assert.ok(!out.template.includes(os.tmpdir() + path.sep), 'a temporary path in the template');
      compare(`${name}.template.json`, out.template);
      compare(`${name}.annotations.json`, out.annotations);
    });
  }

  it('has no golden file without a case', () => {
    const expected = Object.keys(CASES).flatMap((n) => [`${n}.annotations.json`, `${n}.template.json`]);
    const present = fs.existsSync(GOLDEN) ? fs.readdirSync(GOLDEN) : [];
    if (BLESS) for (const f of present.filter((x) => !expected.includes(x))) fs.rmSync(path.join(GOLDEN, f));
    else assert.deepEqual(present.sort(), expected.sort());
  });
});
