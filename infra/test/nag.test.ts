/**
 * cdk-nag's AwsSolutions pack over stacks holding the construct: no finding (error or warning)
 * may be left unacknowledged. Each acknowledgement lives in lib/scheduler/*.ts next to the
 * resource it is about, with its reason (`acknowledge(...)`, CDK's Validations API, which
 * cdk-nag 3 reads); what could be fixed was fixed instead (own roles without
 * AWSLambdaBasicExecutionRole, VPC flow log, Container Insights).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';
import { CDK_JSON_CONTEXT, fakeAssetsDir } from './helpers';

interface Violation {
  readonly rule: string;
  readonly severity: string;
  readonly paths: string[];
}

/** Synthesizes `make`'s stack with AwsSolutionsChecks and returns every unacknowledged finding. */
function nag(make: (stack: Stack) => void): Violation[] {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'sundial-nag-'));
  try {
    const app = new App({ context: CDK_JSON_CONTEXT, outdir });
    make(new Stack(app, 'Nag', { env: { account: '123456789012', region: 'eu-west-1' } }));
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
    try {
      app.synth();
    } catch (e) {
      if (!fs.existsSync(path.join(outdir, 'validation-report.json'))) throw e;
    }
    const reportFile = path.join(outdir, 'validation-report.json');
    if (!fs.existsSync(reportFile)) return [];
    const report = JSON.parse(fs.readFileSync(reportFile, 'utf8'));
    return report.pluginReports.flatMap((p: any) =>
      p.violations.map((v: any) => ({
        rule: v.ruleName,
        severity: v.severity,
        paths: v.violatingConstructs.map((c: any) => c.constructPath),
      })),
    );
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

const show = (vs: Violation[]) => vs.map((v) => `${v.severity} ${v.rule}\n    ${v.paths.join('\n    ')}`).join('\n');

const POOLS: SundialSchedulerProps['pools'] = [
  { name: 'default', maxConcurrency: 20 },
  { name: 'bulk', maxConcurrency: 5 },
  { name: 'long', kind: 'ecs', maxConcurrency: 4, runTimeout: Duration.hours(2) },
];
/** Per-tenant allowlists: without them the construct warns at synth (docs/tenancy.md), and a warning is a finding here. */
const BOUNDED = { tenantTargets: { '*': { http: ['*'] } } };
const TARGETS = {
  allowedTargetFunctionArns: ['arn:aws:lambda:eu-west-1:123456789012:function:report-builder'],
  allowedTargetQueueArns: ['arn:aws:sqs:eu-west-1:123456789012:outbox'],
  allowedTargetSecretArns: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:sundial-webhooks/signing-AbCdEf'],
  allowedTargetStateMachineArns: ['arn:aws:states:eu-west-1:123456789012:stateMachine:settle'],
  // ecs targets: `*` (ListTasks), the family's revisions (RunTask, ListTagsForResource) and the cluster's tasks
  allowedTargetEcsClusterArns: ['arn:aws:ecs:eu-west-1:123456789012:cluster/batch'],
  allowedTargetTaskDefinitionArns: ['arn:aws:ecs:eu-west-1:123456789012:task-definition/report'],
  allowedTargetEcsPassRoleArns: ['arn:aws:iam::123456789012:role/report-task'],
  ...BOUNDED,
};

describe('cdk-nag AwsSolutionsChecks', () => {
  it('passes the check itself: a bare finding is reported (the harness sees violations)', () => {
    const vs = nag((stack) => new ec2.Vpc(stack, 'Bare', { natGateways: 0 }));
    assert.ok(vs.some((v) => v.rule === 'AwsSolutions-VPC7'), show(vs));
  });

  it('Lambda pools and an ECS pool, JWT auth: nothing unacknowledged', () => {
    const vs = nag((stack) => {
      new SundialScheduler(stack, 'Sundial', {
        assetsDir: fakeAssetsDir(),
        apiAuth: { kind: 'jwt', issuer: 'https://issuer.example.com/', audience: ['sundial'] },
        pools: POOLS,
        alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops',
        ...TARGETS,
      });
    });
    assert.deepEqual(vs, [], show(vs));
  });

  it('IAM auth, default pools: nothing unacknowledged', () => {
    const vs = nag((stack) => new SundialScheduler(stack, 'Sundial', { assetsDir: fakeAssetsDir(), apiAuth: { kind: 'iam' }, ...BOUNDED }));
    assert.deepEqual(vs, [], show(vs));
  });

  it('every option on (key, tracing, toolkit tables, a function in a VPC, ECS in a given VPC, event sources, the tenant guardrail policy): nothing unacknowledged', () => {
    const vs = nag((stack) => {
      const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
      const vpc = new ec2.Vpc(stack, 'Net', { maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }] });
      vpc.addFlowLog('FlowLog');
      new SundialScheduler(stack, 'Sundial', {
        assetsDir: fakeAssetsDir(),
        apiAuth: { kind: 'iam' },
        pools: POOLS,
        vpc,
        encryptionKey: key,
        tracing: true,
        toolkitTables: true,
        functionOverrides: { api: { vpc, allowPublicSubnet: true } },
        eventSources: [
          { tenant: 'acme', queue: sqs.Queue.fromQueueArn(stack, 'AcmeFiles', 'arn:aws:sqs:us-east-1:111111111111:acme-files') },
          { tenant: 'globex', bus: { accounts: ['222222222222'] } },
        ],
        ...TARGETS,
      }).tenantGuardrailPolicy();
    });
    assert.deepEqual(vs, [], show(vs));
  });
});
